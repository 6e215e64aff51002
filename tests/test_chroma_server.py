"""The knowledge index on a Chroma server (``INTERVIEWER_CHROMA_URL``), shared by several processes.

One throwaway server (``chroma_url`` in conftest, started with the venv's own ``chroma run``) serves
the whole run; each test uses its own collection name where it needs a collection to itself.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from interviewer.content.knowledge import discover, load_passages
from interviewer.errors import KnowledgeIndexError
from interviewer.retrieval.index import BuildReport, KnowledgeIndex
from interviewer.retrieval.search import Retriever
from interviewer.settings import IndexSettings, Settings
from tests.conftest import KNOWLEDGE
from tests.servers import free_port

QUERIES = [
    "ZeRO-3 的参数 all-gather 怎么预取",
    "how does ring all-reduce bandwidth scale with the number of GPUs",
    "显存碎片 expandable segments",
    "activation checkpointing 重计算的代价",
]


@pytest.fixture(autouse=True)
def _no_server_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """A server the developer exported for the app must not receive these tests' collections."""
    monkeypatch.delenv("INTERVIEWER_CHROMA_URL", raising=False)
    monkeypatch.delenv("INTERVIEWER_INDEX__CHROMA_URL", raising=False)


def _index(
    home: Path, url: str | None, collection: str = "knowledge", knowledge: Path = KNOWLEDGE, extra: list[Path] | None = None
) -> KnowledgeIndex:
    index = IndexSettings(chroma_url=url, collection=collection, extra_dirs=extra or [])
    return KnowledgeIndex(Settings(home=home, knowledge_dir=knowledge, index=index))


def test_the_setting_is_read_from_its_short_environment_name(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().index.chroma_url is None
    monkeypatch.setenv("INTERVIEWER_CHROMA_URL", "http://127.0.0.1:8001")
    assert Settings().index.chroma_url == "http://127.0.0.1:8001"
    monkeypatch.setenv("INTERVIEWER_INDEX__CHROMA_URL", "https://chroma.example/prefix")
    assert Settings().index.chroma_url == "https://chroma.example/prefix"  # the nested name is the more specific


def test_the_server_index_searches_like_the_embedded_one(tmp_path: Path, chroma_url: str, shipped_index: KnowledgeIndex) -> None:
    index = _index(tmp_path / "home", chroma_url)
    report = index.build()
    assert report.rebuilt and report.passages == report.embedded == shipped_index.collection().count()
    assert not (tmp_path / "home" / "index").exists()  # nothing of the index is kept on local disk
    on_server, embedded = Retriever(index), Retriever(shipped_index)
    for query in QUERIES:
        server_top = [r.source for r in on_server.search(query, k=5)]
        assert server_top, query
        assert server_top == [r.source for r in embedded.search(query, k=5)], query


SECOND_PROCESS = textwrap.dedent(
    """
    import json
    from interviewer.retrieval.index import KnowledgeIndex
    from interviewer.retrieval.search import Retriever
    from interviewer.settings import Settings

    index = KnowledgeIndex(Settings())
    report = index.build()
    top = [r.source for r in Retriever(index).search("ZeRO-3 的参数 all-gather 怎么预取", k=3)]
    print(json.dumps({"changed": report.changed, "embedded": report.embedded, "unchanged": report.unchanged,
                      "passages": report.passages, "top": top}))
    """
)


def test_a_second_process_in_another_folder_uses_the_index_without_embedding(tmp_path: Path, chroma_url: str) -> None:
    first = _index(tmp_path / "first-home", chroma_url).build()  # made by the test above, or now
    # the second install's knowledge is the same content in another folder, as on another machine
    knowledge = tmp_path / "elsewhere" / "knowledge"
    shutil.copytree(KNOWLEDGE, knowledge)
    env = {
        **os.environ,
        "INTERVIEWER_HOME": str(tmp_path / "second-home"),
        "INTERVIEWER_KNOWLEDGE_DIR": str(knowledge),
        "INTERVIEWER_CHROMA_URL": chroma_url,
    }
    done = subprocess.run([sys.executable, "-c", SECOND_PROCESS], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    second = json.loads(done.stdout.strip().splitlines()[-1])
    assert not second["changed"] and second["embedded"] == 0 and second["unchanged"] == len(first.added) + first.unchanged
    assert second["passages"] == first.passages
    assert second["top"] and second["top"][0].startswith("zero.md#")
    assert not (tmp_path / "second-home" / "index").exists()


def test_two_processes_building_at_once_leave_one_whole_index(tmp_path: Path, chroma_url: str, small_knowledge: Path) -> None:
    start = threading.Barrier(2)
    reports: list[BuildReport] = []
    failures: list[BaseException] = []

    def build(home: str) -> None:
        index = _index(tmp_path / home, chroma_url, collection="race", knowledge=small_knowledge)
        _ = index.signature()  # load the glossary first, so that both really meet at the server
        start.wait()
        try:
            reports.append(index.build())
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=build, args=(home,)) for home in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not failures, failures
    expected = sum(len(load_passages(f, require_anchors=True)) for f in discover([small_knowledge], shipped=small_knowledge))
    assert [r.passages for r in reports] == [expected, expected]  # each wrote every passage; none twice
    again = _index(tmp_path / "c", chroma_url, collection="race", knowledge=small_knowledge).build()
    assert not again.changed and again.unchanged == 2 and again.passages == expected


def test_another_process_keeps_notes_it_does_not_index_and_sees_changes(tmp_path: Path, chroma_url: str, small_knowledge: Path) -> None:
    notes = tmp_path / "my-notes"
    notes.mkdir()
    (notes / "nccl.md").write_text("# NCCL notes\n## Ring versus tree\nRing all-reduce moves 2(N-1)/N of the data.\n", encoding="utf-8")
    with_notes = _index(tmp_path / "a", chroma_url, collection="notes", knowledge=small_knowledge, extra=[notes])
    assert "my-notes/nccl.md" in with_notes.build().added

    without = _index(tmp_path / "b", chroma_url, collection="notes", knowledge=small_knowledge)
    report = without.build()
    assert report.removed == [] and not report.changed  # the notes are the other process's, not stale
    assert "my-notes/nccl.md#ring-versus-tree" in without.collection().get()["ids"]

    zero = small_knowledge / "zero.md"
    zero.write_text(zero.read_text(encoding="utf-8") + "\n## 新增一节 Added {#added-section}\n" + "内容。" * 60, encoding="utf-8")
    assert without.build().updated == ["zero.md"]
    assert _index(tmp_path / "c", chroma_url, collection="notes", knowledge=small_knowledge, extra=[notes]).build().unchanged == 3

    (notes / "nccl.md").unlink()
    assert with_notes.build().removed == ["my-notes/nccl.md"]
    assert not any(i.startswith("my-notes/") for i in without.collection().get()["ids"])


def test_a_server_that_is_not_running_gives_one_line(tmp_path: Path) -> None:
    port = free_port()  # nothing listens on it once the socket is closed
    home = tmp_path / "home"
    with pytest.raises(KnowledgeIndexError) as caught:
        _index(home, f"http://alice:s3cret@127.0.0.1:{port}/").build()
    message = str(caught.value)
    assert "\n" not in message and "s3cret" not in message
    assert f"http://***@127.0.0.1:{port}/" in message
    assert f"chroma run --path DIR --port {port}" in message and "unset INTERVIEWER_CHROMA_URL" in message
    assert not home.exists()  # nothing stored was touched, nor the embedded store made instead


@pytest.mark.parametrize("url", ["127.0.0.1:8001", "not a url", "ftp://127.0.0.1:8001", "http://:8001", "http://127.0.0.1:99999"])
def test_a_url_that_is_not_one_gives_one_line(tmp_path: Path, url: str) -> None:
    with pytest.raises(KnowledgeIndexError, match=r"is not a Chroma server URL .*unset INTERVIEWER_CHROMA_URL") as caught:
        _index(tmp_path / "home", url).collection()
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "home").exists()


def test_a_document_left_half_written_is_embedded_again(tmp_path: Path, chroma_url: str, small_knowledge: Path) -> None:
    """A build stopped between two batches (or one still writing) leaves a document with fewer
    records than its passage count; the next build must not take it as unchanged."""
    index = _index(tmp_path / "a", chroma_url, collection="partial", knowledge=small_knowledge)
    whole = index.build().passages
    zero_ids = [i for i in index.collection().get()["ids"] if i.startswith("zero.md#")]
    index.collection().delete(ids=zero_ids[:2])
    report = _index(tmp_path / "b", chroma_url, collection="partial", knowledge=small_knowledge).build()
    assert report.updated == ["zero.md"] and report.unchanged == 1 and report.passages == whole
