"""Shared fixtures. Every test writes under a temporary INTERVIEWER_HOME; the network is blocked
(pytest-socket, see pyproject) except loopback, so any attempt to download a model fails the test."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from interviewer.index import KnowledgeIndex
from interviewer.retrieval import Retriever
from interviewer.settings import PROJECT_ROOT, Settings

RUBRICS = PROJECT_ROOT / "rubrics"
KNOWLEDGE = PROJECT_ROOT / "knowledge"


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("INTERVIEWER_HOME", str(home))
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE", "INTERVIEWER_MODEL"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture(scope="session")
def shipped_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeIndex]:
    """The shipped knowledge base, indexed once for the whole run."""
    home = tmp_path_factory.mktemp("shipped-home")
    index = KnowledgeIndex(Settings(home=home))
    index.build()
    yield index


@pytest.fixture(scope="session")
def retriever(shipped_index: KnowledgeIndex) -> Retriever:
    return Retriever(shipped_index)


@pytest.fixture
def bank_copy(tmp_path: Path) -> Path:
    """A writable copy of the shipped bank, for tests that break it on purpose."""
    target = tmp_path / "rubrics"
    shutil.copytree(RUBRICS, target)
    return target
