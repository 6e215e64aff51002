"""Choosing the next follow-up, deterministically.

After a graded answer the interviewer either asks a follow-up or moves on. A follow-up aims at
the most important criterion the answer missed or got wrong (weight × shortfall, a misconception
counting as a full shortfall) that no earlier follow-up has probed. When every criterion is
covered it goes deeper, as a real interviewer does with a strong candidate: the follow-ups the
source interview recorded first, then the others, in the bank's order. It never repeats a
follow-up, stops at the cap, and moves on at once after "I don't know" or an empty answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from interviewer.content.rubric import FollowUp, Question
from interviewer.grading.grade import NOTHING_TO_GRADE, Grade

DEFAULT_MAX_FOLLOWUPS = 2


class Decision(BaseModel):
    """What the interviewer does after a graded turn, as stored with that turn."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    action: Literal["ask", "move-on"]
    reason: str
    followup: str | None = None  # the id of the follow-up to ask
    aims_at: list[str] = Field(default_factory=list)  # criterion ids
    wording: str | None = None  # the model's wording of that follow-up, once the model has worded it

    def followup_of(self, question: Question) -> FollowUp | None:
        return next((f for f in question.followups if f.id == self.followup), None)


def shortfalls(grade: Grade) -> list[tuple[float, str]]:
    """(weight × missing share of the scale, criterion id), largest first; zero ones left out."""
    gaps = []
    for criterion in grade.criteria:
        missing = 1.0 if criterion.misconceptions else 1 - criterion.score / criterion.max_score
        if missing > 0:
            gaps.append((round(criterion.weight * missing, 6), criterion.id))
    return sorted(gaps, key=lambda gap: (-gap[0], gap[1]))


def choose(
    question: Question,
    grade: Grade,
    asked: Sequence[str],
    max_followups: int = DEFAULT_MAX_FOLLOWUPS,
) -> Decision:
    """The next step after ``grade``, given the follow-up ids already asked for this question."""
    if len(asked) >= max_followups:
        return Decision(action="move-on", reason=f"follow-up cap of {max_followups} reached")
    if NOTHING_TO_GRADE & set(grade.flags):
        return Decision(action="move-on", reason="nothing in the answer to follow up on")
    remaining = [f for f in question.followups if f.id not in asked]
    if not remaining:
        return Decision(action="move-on", reason="every follow-up has been asked")
    probed = {target for f in question.followups if f.id in asked for target in f.targets}
    for _, criterion_id in shortfalls(grade):
        if criterion_id in probed:
            continue
        for followup in remaining:
            if criterion_id in followup.targets:
                return _ask(followup, f"aims at '{criterion_id}', which the answer missed or got wrong")
    deeper = sorted(remaining, key=lambda f: (not f.from_seed, question.followups.index(f)))
    return _ask(deeper[0], "the gaps are covered or probed: going deeper")


def _ask(followup: FollowUp, reason: str) -> Decision:
    return Decision(action="ask", reason=reason, followup=followup.id, aims_at=list(followup.targets))
