"""Grading many answers: the JSONL contract of ``interviewer grade`` and ``interviewer eval``.

Each input line has ``answer`` and either ``question_id`` (a bank question, graded against its
rubric) or ``question`` (free text, graded against ``reference``/``reference1..3`` when given,
else against passages retrieved for the question). A line that cannot be graded produces an
error object naming the line; the other lines are graded.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from interviewer.errors import InterviewerError, StorageError
from interviewer.grading.grade import Grade, PassageCitation, RubricGrader
from interviewer.services import Services

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


def grade_request(services: Services, grader: RubricGrader, request: GradeRequest) -> Grade:
    """A bank question against its rubric with ``grader``; free text against its references, or
    against passages retrieved for it."""
    if request.question_id:
        try:
            question = services.bank.get(request.question_id)
        except KeyError:
            first, last = services.bank.questions[0].id, services.bank.questions[-1].id
            raise InterviewerError(f"unknown question_id '{request.question_id}' (the bank has {first}..{last})") from None
        return grader.grade(question, request.answer)
    references = request.references()
    passages: list[PassageCitation] = []
    if not references:
        found = services.retriever.search(request.question or "", k=3)
        if not found:
            raise InterviewerError("no reference given and no knowledge passage matches the question")
        references = ["\n".join(r.text for r in found)]
        passages = [PassageCitation(source=r.source, title=r.title, score=r.score) for r in found]
    return services.reference_grader.grade(request.question or "", request.answer, references, passages)


def read_lines(lines: Iterable[bytes | str]) -> Iterator[tuple[int, dict[str, Any] | None, str | None]]:
    """(line number, parsed object or None, error or None) for each non-blank line. Each line is
    decoded and parsed on its own, so a line of invalid UTF-8 or one nested too deep for the
    parser is that line's error, and the lines after it are still read."""
    for number, raw in enumerate(lines, start=1):
        try:
            line = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        except UnicodeDecodeError as exc:
            yield number, None, f"not valid UTF-8: byte 0x{raw[exc.start]:02x} at byte {exc.start + 1}"
            continue
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            yield number, None, f"not valid JSON: {exc.msg} (column {exc.colno})"
            continue
        except RecursionError:
            yield number, None, "nested too deeply to read: arrays or objects inside each other beyond the parser's limit"
            continue
        if not isinstance(value, dict):
            yield number, None, "expected a JSON object"
            continue
        yield number, value, None


def grade_line(services: Services, grader: RubricGrader, number: int, value: dict[str, Any]) -> dict[str, Any]:
    """The output object for one parsed line: the input plus ``grade``, or plus ``error``."""
    try:
        request = GradeRequest.model_validate(value)
        grade = grade_request(services, grader, request)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "line"
        return {**value, "line": number, "error": f"{field}: {first['msg']}"}
    except StorageError:
        raise  # the disk, not the line: every later line would meet it too
    except InterviewerError as exc:
        return {**value, "line": number, "error": str(exc)}
    return {**value, "grade": grade.model_dump(mode="json")}
