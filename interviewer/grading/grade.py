"""The grade: one model for every grader (offline now, the LLM grader later).

A grade says what was scored and why: per rubric criterion the score on its scale, the evidence
quoted verbatim from the answer, what is missing and the misconceptions found; the passages used;
and which grader, grader version and rubric version made it, so a stored grade can be explained
and compared later.
"""

from __future__ import annotations

from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from interviewer.content.rubric import FollowUp, Lang, Question

Flag = Literal[
    "empty",  # nothing to grade
    "no-knowledge",  # "I don't know" and the like
    "gibberish",  # no recognisable words
    "truncated",  # longer than the grading limit; the rest was not read
    "steering-attempt",  # text addressed to the grader; ignored
    "keyword-list",  # terms without explanation
    "off-topic",  # little to do with the question
    "question-echo",  # mostly the question's own words back
    "padding",  # the same content repeated, or filler around one or two real points
    "skipped",  # the candidate chose to skip
    "llm-fallback",  # the model failed and the offline grader graded this turn
]


NOTHING_TO_GRADE: frozenset[Flag] = frozenset({"empty", "no-knowledge", "gibberish"})
"""Flags of an answer with nothing in it to judge: no model is asked, no follow-up probes it."""


class MisconceptionFound(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    claim: str = Field(description="The wrong claim, in the answer's language.")
    correction: str = Field(description="What is true instead.")
    evidence: str = Field(description="The span of the answer that makes the claim, quoted exactly.")


class CriterionGrade(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    description: str
    weight: float
    score: int = Field(ge=0)
    max_score: int = Field(ge=1)
    level: str = Field(description="The score anchor this score corresponds to.")
    evidence: list[str] = Field(default_factory=list, description="Exact spans of the answer that earned credit.")
    found: list[str] = Field(default_factory=list, description="Concept ids evidenced in the answer.")
    missing: list[str] = Field(default_factory=list, description="What the answer did not cover, readable.")
    misconceptions: list[MisconceptionFound] = Field(default_factory=list)


class PassageCitation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    source: str
    title: str
    score: float | None = None


class Grade(BaseModel):
    """A graded answer. ``score`` is 0-10 with one decimal."""

    model_config = ConfigDict(extra="forbid")

    score: float = Field(ge=0, le=10)
    criteria: list[CriterionGrade] = Field(default_factory=list)
    feedback: str
    lang: Literal["zh", "en"]
    flags: list[Flag] = Field(default_factory=list)
    passages: list[PassageCitation] = Field(default_factory=list)
    question_id: str | None = None
    grader: str
    grader_version: str
    rubric_version: int | None = None
    model: str | None = Field(default=None, description="The model that graded, for LLM grades.")
    second_opinion: float | None = Field(default=None, description="The offline grader's score, kept beside the LLM's.")
    disagreement: bool = Field(default=False, description="LLM and offline scores differ by more than the threshold.")
    spread: float | None = Field(default=None, description="Max - min score over the samples, when sampled several times.")
    dropped_quotes: int = Field(default=0, description="Evidence quotes the model gave that are not in the answer.")
    usage: dict[str, int] | None = Field(default=None, description="Tokens used (prompt, completion, total).")
    latency_ms: float | None = Field(default=None, description="Time spent in model calls for this grade.")


class RubricGrader(Protocol):
    """What the interview needs of a grader: the offline grader and the model grader both are one."""

    name: str

    def grade(self, question: Question, answer: str, lang: Lang | None = None) -> Grade: ...

    def grade_followup(self, question: Question, followup: FollowUp, answer: str, lang: Lang | None = None) -> Grade: ...
