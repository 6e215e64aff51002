"""Shared fixtures. Every test writes under a temporary INTERVIEWER_HOME; the network is blocked
(pytest-socket, see pyproject) except loopback, so any attempt to download a model fails the test."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from interviewer.faces.simulate import ScriptedAnswer
from interviewer.interview.engine import Engine
from interviewer.interview.store import Store
from interviewer.retrieval.index import KnowledgeIndex
from interviewer.retrieval.search import Retriever
from interviewer.services import Services
from interviewer.settings import PROJECT_ROOT, Settings
from tests.fake_openai import Recorded, serve
from tests.servers import ChromaServer, PostgresServer

RUBRICS = PROJECT_ROOT / "rubrics"
KNOWLEDGE = PROJECT_ROOT / "knowledge"
DEV = PROJECT_ROOT.parent / "shared" / "eval" / "dev-answers.jsonl"


def dev_rows() -> list[dict[str, object]]:
    """The expert-graded development set, which lives beside the project in ../shared (CI has it too)."""
    if not DEV.exists():
        pytest.fail(f"this test needs the development set at {DEV} (the project's ../shared/eval/)", pytrace=False)
    return [json.loads(line) for line in DEV.read_text(encoding="utf-8").splitlines() if line.strip()]


Q16 = yaml.safe_load((PROJECT_ROOT / "tests" / "data" / "q16-answers.yaml").read_text(encoding="utf-8"))


def dev_candidate(kind: str, q16: str) -> dict[str, ScriptedAnswer]:
    """A simulated candidate: the development set's answers of one kind, plus an answer to q16."""
    rows = dev_rows()
    script = {r["question_id"]: ScriptedAnswer(question_id=r["question_id"], answer=r["answer"]) for r in rows if r["kind"] == kind}
    script["q16"] = ScriptedAnswer(question_id="q16", answer=q16)
    return script


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("INTERVIEWER_HOME", str(home))
    for name in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_API_BASE",
        "INTERVIEWER_MODEL",
        "INTERVIEWER_CHROMA_URL",
        "INTERVIEWER_INDEX__CHROMA_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def small_knowledge(tmp_path: Path) -> Path:
    """Two real documents and the real glossary, in a folder the test may change."""
    root = tmp_path / "knowledge"
    root.mkdir()
    shutil.copytree(KNOWLEDGE / "glossary", root / "glossary")
    for name in ("zero.md", "gemm.md"):
        shutil.copy(KNOWLEDGE / name, root / name)
    return root


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


@pytest.fixture(scope="session")
def services(tmp_path_factory: pytest.TempPathFactory) -> Services:
    """The product's parts on the shipped content, built once for the run (its own data folder)."""
    return Services(Settings(home=tmp_path_factory.mktemp("services-home")))


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """One throwaway PostgreSQL server for the run, started on first use (see tests/postgres.py)."""
    try:
        server = PostgresServer().start()
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def chroma_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One Chroma server for the run (``chroma run``), started on first use; its log is shown if it fails."""
    try:
        server = ChromaServer(tmp_path_factory.mktemp("chroma-server")).start()
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)
    yield server.url
    server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Store]]:
    """Opens a store on this test's database, as often as asked (a restart opens a second one): a
    SQLite file, or a fresh database on the test PostgreSQL. Every test of the store runs on both."""
    url = request.getfixturevalue("postgres").new_database() if request.param == "postgresql" else None
    opened: list[Store] = []

    def open_one() -> Store:
        opened.append(Store(tmp_path / "sessions.db", url).open())
        return opened[-1]

    yield open_one
    for store in opened:
        store.close()


@pytest.fixture
def store(open_store: Callable[[], Store]) -> Store:
    return open_store()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def engine(services: Services, store: Store, clock: FakeClock) -> Engine:
    """An engine on a fresh store with the offline grader and a clock the test moves."""
    return Engine(store, services.bank, services.offline_grader, clock=clock)


def shown_text(markdown: str) -> str:
    """The text a reader sees of the app's Markdown, rendered as CommonMark: tags dropped, line
    breaks kept, entities decoded."""
    import html
    import re

    from markdown_it import MarkdownIt

    rendered = re.sub(r"<br\s*/?>\n?", "\n", MarkdownIt("commonmark").render(markdown))
    return html.unescape(re.sub(r"<[^>]+>", "", rendered)).replace("\xa0", " ")


@pytest.fixture
def server() -> Iterator[tuple[str, Recorded]]:
    """A local OpenAI-compatible server that records what it receives (see ``fake_openai``)."""
    with serve() as running:
        yield running
