"""The composition root: every face (web, terminal, command line, batch grading, simulation) gets
its parts here, each built on first use and only then, so a command builds only what it uses
(`interviewer bank` parses the bank and the knowledge titles; it opens no index and builds no grader).
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Literal

from interviewer.content.bank import Bank, load_bank
from interviewer.content.glossary import Glossary
from interviewer.content.knowledge import Passage, discover, load_passages
from interviewer.errors import InterviewerError
from interviewer.grading.grade import RubricGrader
from interviewer.settings import EndpointSettings, Settings

if TYPE_CHECKING:  # the heavier parts are imported when first built
    from interviewer.grading.model import LLMGrader
    from interviewer.grading.offline import OfflineGrader
    from interviewer.grading.reference import ReferenceGrader
    from interviewer.interview.engine import Engine
    from interviewer.interview.interviewer import LLMInterviewer, ScriptedInterviewer
    from interviewer.interview.state import SessionState
    from interviewer.interview.store import Store
    from interviewer.retrieval.index import KnowledgeIndex
    from interviewer.retrieval.search import Retriever
    from interviewer.retrieval.segment import Segmenter

GraderChoice = Literal["offline", "llm", "auto"]


class UnknownGrader(InterviewerError):
    pass


class Services:
    """One settings tree's parts. Never mutated once built: a change of settings is a new ``Services``."""

    def __init__(self, settings: Settings, store: Store | None = None):
        self.settings = settings
        if store is not None:
            self.__dict__["store"] = store  # share an open store (the web app switching models)

    # what a copy for another endpoint shares: everything but the model's parts
    SHARED: tuple[str, ...] = ("glossary", "passages", "titles", "passage_texts", "bank", "segmenter", "index", "retriever")
    SHARED += ("offline_grader", "reference_grader", "store")

    def with_endpoint(self, endpoint: EndpointSettings) -> Services:
        """The same parts with another model endpoint (a user's own): the content, the index, the
        offline grader and the store are shared, the model grader and interviewer are its own."""
        other = Services(self.settings.model_copy(update={"endpoint": endpoint}))
        for name in self.SHARED:
            if name in self.__dict__:
                other.__dict__[name] = self.__dict__[name]
        return other

    # -- content -----------------------------------------------------------------------------------
    @cached_property
    def glossary(self) -> Glossary:
        return Glossary.load(self.settings.glossary_dir)

    @cached_property
    def passages(self) -> list[Passage]:
        """The shipped knowledge's passages, parsed once for titles, texts and reference checks."""
        shipped = self.settings.knowledge_dir
        return [p for f in discover([shipped], shipped=shipped) for p in load_passages(f, True)]

    @cached_property
    def titles(self) -> dict[str, str]:
        return {p.source: p.title for p in self.passages}

    @cached_property
    def passage_texts(self) -> dict[str, str]:
        return {p.source: p.text for p in self.passages}

    @cached_property
    def bank(self) -> Bank:
        return load_bank(self.settings.bank_dir, set(self.titles))

    # -- retrieval ---------------------------------------------------------------------------------
    @cached_property
    def segmenter(self) -> Segmenter:
        from interviewer.retrieval.segment import Segmenter

        return Segmenter(self.glossary)

    @cached_property
    def index(self) -> KnowledgeIndex:
        from interviewer.retrieval.index import KnowledgeIndex

        return KnowledgeIndex(self.settings, glossary=self.glossary)

    @cached_property
    def retriever(self) -> Retriever:
        from interviewer.retrieval.search import Retriever

        return Retriever(self.index)

    # -- grading -----------------------------------------------------------------------------------
    @cached_property
    def offline_grader(self) -> OfflineGrader:
        from interviewer.grading.offline import OfflineGrader

        return OfflineGrader(self.segmenter, titles=self.titles, bank=self.bank)

    @cached_property
    def reference_grader(self) -> ReferenceGrader:
        from interviewer.grading.reference import ReferenceGrader

        return ReferenceGrader(self.segmenter)

    @cached_property
    def model_grader(self) -> LLMGrader:
        from interviewer.grading.model import LLMGrader

        return LLMGrader(self.settings, self.offline_grader, self.passage_texts)

    def rubric_grader(self, choice: str = "auto") -> RubricGrader:
        """The grader for ``offline``, ``llm`` or ``auto`` (the model when an endpoint is configured)."""
        if choice not in {"offline", "llm", "auto"}:
            raise UnknownGrader(f"unknown grader '{choice}': use offline, llm or auto")
        if choice == "offline" or (choice == "auto" and not self.settings.endpoint.configured):
            return self.offline_grader
        if not self.settings.endpoint.configured:
            raise UnknownGrader("--grader llm needs an endpoint: set OPENAI_BASE_URL and/or OPENAI_API_KEY (and INTERVIEWER_MODEL)")
        return self.model_grader

    # -- the interview -----------------------------------------------------------------------------
    @cached_property
    def store(self) -> Store:
        from interviewer.interview.store import DATABASE_FILE, Store

        return Store(self.settings.home / DATABASE_FILE, self.settings.database_url or None).open()

    @cached_property
    def interviewer(self) -> LLMInterviewer | ScriptedInterviewer:
        """Who speaks after an answer: the model (deciding and wording, live) when an endpoint is
        configured, else the bank's script on the engine's choice."""
        from interviewer.interview.interviewer import LLMInterviewer, ScriptedInterviewer

        return LLMInterviewer(self.settings, self.passage_texts) if self.settings.endpoint.configured else ScriptedInterviewer()

    def session_state(self, session_id: str) -> SessionState:
        """A session as it stands, read and replayed; no grader is built for it."""
        import time

        from interviewer.interview.state import SessionState

        row, turns = self.store.session_with_turns(session_id)
        return SessionState(row, turns, self.bank, time.time())

    def engine(self, grader: RubricGrader | None = None) -> Engine:
        from interviewer.interview.engine import Engine

        return Engine(self.store, self.bank, grader or self.rubric_grader("auto"))
