"""Grading many answers: the JSONL contract of ``interviewer grade`` and ``interviewer eval``.

Each input line has ``answer`` and either ``question_id`` (a bank question, graded against its
rubric) or ``question`` (free text, graded against ``reference``/``reference1..3`` when given,
else against passages retrieved for the question). A line that cannot be graded produces an
error object naming the line; the other lines are graded.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from interviewer.content.bank import Bank, load_bank
from interviewer.content.glossary import Glossary
from interviewer.content.knowledge import Passage, discover, load_passages
from interviewer.errors import InterviewerError
from interviewer.grading.grade import Grade, PassageCitation
from interviewer.grading.offline import OfflineGrader
from interviewer.grading.reference import ReferenceGrader
from interviewer.retrieval.segment import Segmenter
from interviewer.settings import Settings

REFERENCE_KEYS = ("reference", "reference1", "reference2", "reference3")


class GradeRequest(BaseModel):
    """One line of input. Unknown keys are kept and passed through to the output."""

    model_config = ConfigDict(extra="allow")

    answer: str
    question_id: str | None = None
    question: str | None = None
    reference: str | None = None

    @model_validator(mode="after")
    def _has_question(self) -> GradeRequest:
        if not self.question_id and not (self.question and self.question.strip()):
            raise ValueError("each line needs question_id (a bank question) or question (free text)")
        return self

    def references(self) -> list[str]:
        extra = self.model_extra or {}
        values = [self.reference, *(extra.get(k) for k in REFERENCE_KEYS[1:])]
        return [v for v in values if isinstance(v, str) and v.strip()]


class UnknownGrader(InterviewerError):
    pass


@dataclass
class Graders:
    """The graders and what they need, built once for a batch (or a session)."""

    settings: Settings
    rubric_grader: Any = None  # chosen by check(); the offline grader until then

    @cached_property
    def glossary(self) -> Glossary:
        return Glossary.load(self.settings.glossary_dir)

    @cached_property
    def segmenter(self) -> Segmenter:
        return Segmenter(self.glossary)

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

    @cached_property
    def offline(self) -> OfflineGrader:
        return OfflineGrader(self.segmenter, titles=self.titles, bank=self.bank)

    @cached_property
    def reference(self) -> ReferenceGrader:
        return ReferenceGrader(self.segmenter)

    @cached_property
    def retriever(self) -> Any:
        from interviewer.retrieval.index import KnowledgeIndex
        from interviewer.retrieval.search import Retriever

        return Retriever(KnowledgeIndex(self.settings, glossary=self.glossary))

    @cached_property
    def llm(self) -> Any:
        from interviewer.grading.model import LLMGrader

        return LLMGrader(self.settings, self.offline, self.passage_texts)

    def choose(self, grader: str) -> Any:
        """The rubric grader for ``offline``, ``llm`` or ``auto`` (the LLM when an endpoint is configured)."""
        if grader not in {"offline", "llm", "auto"}:
            raise UnknownGrader(f"unknown grader '{grader}': use offline, llm or auto")
        if grader == "offline" or (grader == "auto" and not self.settings.endpoint.configured):
            return self.offline
        if not self.settings.endpoint.configured:
            raise UnknownGrader("--grader llm needs an endpoint: set OPENAI_BASE_URL and/or OPENAI_API_KEY (and INTERVIEWER_MODEL)")
        return self.llm

    def check(self, grader: str) -> None:
        """Choose the rubric grader for this batch (errors before any line is read)."""
        self.rubric_grader = self.choose(grader)

    def grade(self, request: GradeRequest) -> Grade:
        if request.question_id:
            try:
                question = self.bank.get(request.question_id)
            except KeyError:
                raise InterviewerError(f"unknown question_id '{request.question_id}' (the bank has q01..q16)") from None
            grader = self.rubric_grader or self.offline
            result: Grade = grader.grade(question, request.answer)
            return result
        references = request.references()
        passages: list[PassageCitation] = []
        if not references:
            found = self.retriever.search(request.question or "", k=3)
            if not found:
                raise InterviewerError("no reference given and no knowledge passage matches the question")
            references = ["\n".join(r.text for r in found)]
            passages = [PassageCitation(source=r.source, title=r.title, score=r.score) for r in found]
        return self.reference.grade(request.question or "", request.answer, references, passages)


def read_lines(lines: Iterable[str]) -> Iterator[tuple[int, dict[str, Any] | None, str | None]]:
    """(line number, parsed object or None, error or None) for each non-blank line."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            yield number, None, f"not valid JSON: {exc.msg} (column {exc.colno})"
            continue
        if not isinstance(value, dict):
            yield number, None, "expected a JSON object"
            continue
        yield number, value, None


def grade_line(graders: Graders, number: int, value: dict[str, Any]) -> dict[str, Any]:
    """The output object for one parsed line: the input plus ``grade``, or plus ``error``."""
    try:
        request = GradeRequest.model_validate(value)
        grade = graders.grade(request)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "line"
        return {**value, "line": number, "error": f"{field}: {first['msg']}"}
    except InterviewerError as exc:
        return {**value, "line": number, "error": str(exc)}
    return {**value, "grade": grade.model_dump(mode="json")}
