"""Choosing the next follow-up, deterministically, and never one the answer already covered.

After an answer the interviewer either asks a follow-up or moves on. A follow-up aims at the most
important criterion the answer missed or got wrong (weight × shortfall, a misconception counting
as a full shortfall) that no earlier follow-up has probed. When every criterion is covered it goes
deeper, as a real interviewer does with a strong candidate: the follow-ups the source interview
recorded first, then the others, in the bank's order. It never repeats a follow-up, never asks one
whose target criteria the answer already evidences or whose own rubric the answer already meets
(:func:`eligible`), stops at the cap, and moves on at once after "I don't know" or an empty answer.

A follow-up is either the bank's or the model's own (:class:`OwnFollowUp`): a question the model
asked about what the candidate said, aimed at criteria of the question, with what a good answer to
it contains. It is kept in the decision that asked it, and graded, reported and drilled like a
bank follow-up (:meth:`Decision.followup_of` gives both as a rubric :class:`FollowUp`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from interviewer.content.rubric import FollowUp, Question, Text
from interviewer.grading.grade import NOTHING_TO_GRADE, Grade

DEFAULT_MAX_FOLLOWUPS = 2
COVERED_SHARE = 0.75  # a criterion scored at 75% of its scale or more is evidenced by the answer
ANSWERED_SCORE = 6.0  # an answer scoring this on a follow-up's own rubric has already answered it


def already_answered(grade: Grade) -> bool:
    """True when an answer, read against a follow-up's own rubric (``grade``), has already answered
    that follow-up: it scores ``ANSWERED_SCORE``, or it speaks to every one of its points (each
    criterion at 1 or more). A follow-up asking for what was just said is the one question a real
    interviewer never asks; probing further is the model's, or the next question's."""
    return grade.score >= ANSWERED_SCORE or (bool(grade.criteria) and all(c.score >= 1 for c in grade.criteria))


class OwnFollowUp(BaseModel):
    """A follow-up the model asked of its own, as stored with the decision that asked it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str  # unique within the session: "own-<seq of the turn it follows>"
    targets: list[str] = Field(min_length=1)  # the question's criterion ids it probes
    expects: list[str] = Field(default_factory=list)  # what a good answer to it contains


class Decision(BaseModel):
    """What the interviewer does after an answer, as stored with that turn."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    action: Literal["ask", "move-on"]
    reason: str
    followup: str | None = None  # the id of the follow-up to ask (a bank id, or an own follow-up's)
    aims_at: list[str] = Field(default_factory=list)  # criterion ids
    wording: str | None = None  # the model's words for that follow-up, once the model has worded it
    own: OwnFollowUp | None = None  # set when the follow-up is the model's own
    by: Literal["engine", "model"] = "engine"  # who chose it
    # what the candidate had covered on this question when it was decided, carried to the next decision
    covered: list[str] = Field(default_factory=list)  # criteria evidenced
    answered: list[str] = Field(default_factory=list)  # bank follow-ups found already answered

    def followup_of(self, question: Question) -> FollowUp | None:
        if self.own is not None and self.own.id == self.followup:
            return own_followup(question, self.own, self.wording or "")
        return next((f for f in question.followups if f.id == self.followup), None)


def own_followup(question: Question, own: OwnFollowUp, wording: str) -> FollowUp:
    """The model's follow-up as a rubric follow-up: graded by the criteria it probes (weights made to
    add up to one again) and the question's passages; its question is the model's words. It is built
    without the bank's validation: its text is in one language, and it has no bank entry."""
    criteria = [c for c in question.criteria if c.id in own.targets]
    total = sum(c.weight for c in criteria) or 1.0
    return FollowUp.model_construct(
        id=own.id,
        targets=list(own.targets),
        from_seed=False,
        question=Text.model_construct(zh=wording, en=wording),
        criteria=[c.model_copy(update={"weight": round(c.weight / total, 6)}) for c in criteria],
        references=list(question.references),
        expects=list(own.expects),
    )


def shortfalls(grade: Grade) -> list[tuple[float, str]]:
    """(weight × missing share of the scale, criterion id), largest first; zero ones left out."""
    gaps = []
    for criterion in grade.criteria:
        missing = 1.0 if criterion.misconceptions else 1 - criterion.score / criterion.max_score
        if missing > 0:
            gaps.append((round(criterion.weight * missing, 6), criterion.id))
    return sorted(gaps, key=lambda gap: (-gap[0], gap[1]))


def evidenced(grade: Grade) -> set[str]:
    """The criteria the answer evidences: scored at ``COVERED_SHARE`` of the scale, no misconception."""
    return {c.id for c in grade.criteria if not c.misconceptions and c.score >= COVERED_SHARE * c.max_score}


def covers(targets: Sequence[str], grade: Grade | set[str]) -> bool:
    """True when the answer (its grade, or the criteria it evidences) evidences every one of ``targets``."""
    return set(targets) <= (grade if isinstance(grade, set) else evidenced(grade))


def eligible(
    question: Question,
    grade: Grade,
    asked: Sequence[str],
    answered: Callable[[FollowUp], bool] = lambda f: False,
    covered: set[str] | None = None,
) -> list[FollowUp]:
    """The bank's follow-ups that may still be asked: not asked yet, their targets not all evidenced
    (``covered``, by default what ``grade`` evidences), and not already answered (``answered``)."""
    evidence = evidenced(grade) if covered is None else covered
    return [f for f in question.followups if f.id not in asked and not covers(f.targets, evidence) and not answered(f)]


def limit(grade: Grade, asked: Sequence[str], max_followups: int = DEFAULT_MAX_FOLLOWUPS) -> Decision | None:
    """A move-on the rules impose whoever decides (the cap, an answer with nothing to follow up on), or None."""
    if len(asked) >= max_followups:
        return Decision(action="move-on", reason=f"follow-up cap of {max_followups} reached")
    if NOTHING_TO_GRADE & set(grade.flags):
        return Decision(action="move-on", reason="nothing in the answer to follow up on")
    return None


def choose(
    question: Question,
    grade: Grade,
    asked: Sequence[str],
    max_followups: int = DEFAULT_MAX_FOLLOWUPS,
    answered: Callable[[FollowUp], bool] = lambda f: False,
    covered: set[str] | None = None,
) -> Decision:
    """The next step after ``grade``, given the follow-up ids already asked for this question;
    ``covered`` (by default what ``grade`` evidences) and ``answered`` rule follow-ups out."""
    imposed = limit(grade, asked, max_followups)
    if imposed is not None:
        return imposed
    if not [f for f in question.followups if f.id not in asked]:
        return Decision(action="move-on", reason="every follow-up has been asked")
    remaining = eligible(question, grade, asked, answered, covered)
    if not remaining:
        return Decision(action="move-on", reason="the answer already covers what the remaining follow-ups ask")
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
