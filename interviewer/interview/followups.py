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
from dataclasses import dataclass, field
from typing import Literal

from interviewer.content.rubric import FollowUp, Lang, Question
from interviewer.grading.grade import Grade

DEFAULT_MAX_FOLLOWUPS = 2
_NOTHING_TO_PROBE = {"empty", "no-knowledge", "gibberish"}


@dataclass(frozen=True)
class Decision:
    action: Literal["ask", "move-on"]
    reason: str
    followup: FollowUp | None = None
    text: str | None = None  # the follow-up question in the interview's language
    aims_at: list[str] = field(default_factory=list)  # criterion ids


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
    lang: Lang,
    max_followups: int = DEFAULT_MAX_FOLLOWUPS,
) -> Decision:
    """The next step after ``grade``, given the follow-up ids already asked for this question."""
    if len(asked) >= max_followups:
        return Decision("move-on", f"follow-up cap of {max_followups} reached")
    if _NOTHING_TO_PROBE & set(grade.flags):
        return Decision("move-on", "nothing in the answer to follow up on")
    remaining = [f for f in question.followups if f.id not in asked]
    if not remaining:
        return Decision("move-on", "every follow-up has been asked")
    probed = {target for f in question.followups if f.id in asked for target in f.targets}
    for _, criterion_id in shortfalls(grade):
        if criterion_id in probed:
            continue
        for followup in remaining:
            if criterion_id in followup.targets:
                return _ask(followup, lang, f"aims at '{criterion_id}', which the answer missed or got wrong")
    deeper = sorted(remaining, key=lambda f: (not f.from_seed, question.followups.index(f)))
    return _ask(deeper[0], lang, "the gaps are covered or probed: going deeper")


def _ask(followup: FollowUp, lang: Lang, reason: str) -> Decision:
    return Decision("ask", reason, followup, followup.question.get(lang), list(followup.targets))
