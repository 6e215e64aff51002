from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from interviewer.errors import KnowledgeIndexError
from interviewer.retrieval.index import KnowledgeIndex
from interviewer.retrieval.search import Retriever
from interviewer.settings import IndexSettings, Settings


def _index(home: Path, knowledge: Path, extra: list[Path] | None = None) -> KnowledgeIndex:
    settings = Settings(home=home, knowledge_dir=knowledge, index=IndexSettings(extra_dirs=extra or []))
    return KnowledgeIndex(settings)


def test_build_then_nothing_to_do(tmp_path: Path, small_knowledge: Path) -> None:
    first = _index(tmp_path / "home", small_knowledge).build()
    assert first.rebuilt and sorted(first.added) == ["gemm.md", "zero.md"]
    assert first.passages == first.embedded > 5
    again = _index(tmp_path / "home", small_knowledge).build()
    assert not again.changed and again.embedded == 0 and again.unchanged == 2
    assert again.passages == first.passages


def test_added_changed_and_deleted_files_update_the_index(tmp_path: Path, small_knowledge: Path) -> None:
    home = tmp_path / "home"
    _index(home, small_knowledge).build()

    (small_knowledge / "extra.md").write_text("# 新文档\n## 环形 all-reduce {#ring}\n" + "环形算法。" * 40, encoding="utf-8")
    report = _index(home, small_knowledge).build()
    assert report.added == ["extra.md"] and report.embedded == 1 and report.unchanged == 2

    zero = small_knowledge / "zero.md"
    zero.write_text(zero.read_text(encoding="utf-8") + "\n## 新增一节 Added {#added-section}\n" + "内容。" * 60)
    report = _index(home, small_knowledge).build()
    assert report.updated == ["zero.md"] and report.unchanged == 2
    index = _index(home, small_knowledge)
    ids = set(index.collection().get()["ids"])
    assert "zero.md#added-section" in ids and "extra.md#ring" in ids

    (small_knowledge / "gemm.md").unlink()
    report = _index(home, small_knowledge).build()
    assert report.removed == ["gemm.md"]
    ids = set(_index(home, small_knowledge).collection().get()["ids"])
    assert not any(i.startswith("gemm.md#") for i in ids)


def test_a_changed_glossary_re_embeds_everything(tmp_path: Path, small_knowledge: Path) -> None:
    home = tmp_path / "home"
    first = _index(home, small_knowledge).build()
    extra = small_knowledge / "glossary" / "zz-test.yaml"
    extra.write_text("terms:\n  - {id: test-term-xyz, aliases: [xyzzy]}\n", encoding="utf-8")
    report = _index(home, small_knowledge).build()
    assert report.rebuilt and report.embedded == first.passages


def test_user_folders_are_indexed_with_their_own_prefix(tmp_path: Path, small_knowledge: Path) -> None:
    notes = tmp_path / "my-notes"
    notes.mkdir()
    (notes / "nccl.md").write_text(
        "# NCCL notes\n## Ring versus tree\nRing all-reduce moves 2(N-1)/N of the data per GPU; tree has log N latency.\n",
        encoding="utf-8",
    )
    index = _index(tmp_path / "home", small_knowledge, extra=[notes])
    index.build()
    assert "my-notes/nccl.md#ring-versus-tree" in index.collection().get()["ids"]


def test_the_index_is_built_on_first_use(tmp_path: Path, small_knowledge: Path) -> None:
    index = _index(tmp_path / "home", small_knowledge)
    results = Retriever(index).search("ZeRO-3 prefetch", k=2)
    assert results and results[0].source.startswith("zero.md#")


def test_a_damaged_store_gives_a_clear_message(tmp_path: Path, small_knowledge: Path) -> None:
    home = tmp_path / "home"
    (home / "index").mkdir(parents=True)
    (home / "index" / "chroma.sqlite3").write_bytes(b"this is not a database" * 100)
    with pytest.raises(KnowledgeIndexError, match="interviewer index --rebuild"):
        _index(home, small_knowledge).build()


REOPEN = textwrap.dedent(
    """
    import json, sys
    import chromadb
    import interviewer.retrieval.embedding  # registers the embedding function with Chroma
    client = chromadb.PersistentClient(path=sys.argv[1], settings=chromadb.Settings(anonymized_telemetry=False))
    collection = client.get_collection("knowledge")  # no embedding function passed: Chroma rebuilds ours
    found = collection.query(query_texts=["ZeRO-3 的参数 all-gather 怎么预取"], n_results=3)
    print(json.dumps({"ef": collection.configuration["embedding_function"].name(), "ids": found["ids"][0]}))
    """
)


def test_a_reopened_store_works_in_a_fresh_process_without_downloading(tmp_path: Path, small_knowledge: Path) -> None:
    home = tmp_path / "home"
    _index(home, small_knowledge).build()
    env = dict(os.environ)
    # Any download attempt would go through this dead proxy and fail at once.
    env.update(HTTP_PROXY="http://127.0.0.1:9", HTTPS_PROXY="http://127.0.0.1:9", HF_HUB_OFFLINE="1")
    done = subprocess.run([sys.executable, "-c", REOPEN, str(home / "index")], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["ef"] == "interviewer-concept-hash"
    assert result["ids"] and result["ids"][0].startswith("zero.md#")
