"""The optional embeddings of an OpenAI-compatible endpoint, against a server on 127.0.0.1."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from interviewer.retrieval.index import KnowledgeIndex
from interviewer.retrieval.search import Retriever
from interviewer.settings import EndpointSettings, IndexSettings, Settings
from tests.conftest import KNOWLEDGE
from tests.fake_openai import serve

SECRET = "sk-test-not-a-real-key-1234"


def test_index_and_search_with_endpoint_embeddings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    knowledge = tmp_path / "knowledge"
    knowledge.mkdir()
    shutil.copytree(KNOWLEDGE / "glossary", knowledge / "glossary")
    shutil.copy(KNOWLEDGE / "zero.md", knowledge / "zero.md")
    with serve() as (base_url, recorded):
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        monkeypatch.setenv("OPENAI_BASE_URL", base_url)
        settings = Settings(
            home=tmp_path / "home",
            knowledge_dir=knowledge,
            index=IndexSettings(embedding="openai", embedding_model="test-embed"),
            endpoint=EndpointSettings(),
        )
        report = KnowledgeIndex(settings).build()
        assert report.embedded == report.passages > 0
        results = Retriever(KnowledgeIndex(settings)).search("ZeRO-3 prefetch all-gather", k=3)
    assert results and all(r.source.startswith("zero.md#") for r in results)
    embeddings = [r for r in recorded.requests if r["path"].endswith("/embeddings")]
    assert embeddings and all(r["body"]["model"] == "test-embed" for r in embeddings)
    assert all({k.lower(): v for k, v in r["headers"].items()}["authorization"] == f"Bearer {SECRET}" for r in embeddings)
    assert not any(SECRET in json.dumps(r["body"]) for r in embeddings)
    stored = b"".join(p.read_bytes() for p in (tmp_path / "home").rglob("*") if p.is_file())
    assert SECRET.encode() not in stored, "the key must never be written into the index"


def test_switching_embeddings_rebuilds_the_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    knowledge = tmp_path / "knowledge"
    knowledge.mkdir()
    shutil.copytree(KNOWLEDGE / "glossary", knowledge / "glossary")
    shutil.copy(KNOWLEDGE / "gemm.md", knowledge / "gemm.md")
    home = tmp_path / "home"
    offline = KnowledgeIndex(Settings(home=home, knowledge_dir=knowledge)).build()
    assert offline.rebuilt
    with serve() as (base_url, _):
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        monkeypatch.setenv("OPENAI_BASE_URL", base_url)
        settings = Settings(home=home, knowledge_dir=knowledge, index=IndexSettings(embedding="openai"), endpoint=EndpointSettings())
        switched = KnowledgeIndex(settings).build()
    assert switched.rebuilt and switched.embedded == offline.passages
