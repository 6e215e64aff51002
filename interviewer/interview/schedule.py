"""Spaced repetition of rubric criteria (SM-2).

Every graded answer grades each criterion it covered: quality ``q = round(5 × score / max)``.
SM-2 then moves the criterion's schedule: below 3 it starts over (due tomorrow); otherwise the
interval grows 1 day, 6 days, then × its easiness, and the easiness rises or falls with ``q``.
A weak criterion therefore comes back soon and often; a mastered one fades into the distance.
"""

from __future__ import annotations

from dataclasses import dataclass

DAY = 86_400.0
MIN_EASINESS = 1.3


@dataclass(frozen=True)
class Schedule:
    key: str  # "q02/communication-volume" or "q02/q02-f1/prefetch-mechanism"
    question_id: str
    easiness: float = 2.5
    repetitions: int = 0
    interval_days: float = 0.0
    due_at: float = 0.0
    last_quality: int | None = None


def quality(score: int, max_score: int) -> int:
    return round(5 * score / max_score) if max_score else 0


def review(previous: Schedule, q: int, now: float) -> Schedule:
    """The SM-2 step for one graded criterion."""
    easiness = max(MIN_EASINESS, previous.easiness + 0.1 - (5 - q) * (0.08 + (5 - q) * 0.02))
    if q < 3:
        repetitions, interval = 0, 1.0
    else:
        repetitions = previous.repetitions + 1
        interval = 1.0 if repetitions == 1 else 6.0 if repetitions == 2 else round(previous.interval_days * easiness, 1)
    return Schedule(
        key=previous.key,
        question_id=previous.question_id,
        easiness=round(easiness, 3),
        repetitions=repetitions,
        interval_days=interval,
        due_at=now + interval * DAY,
        last_quality=q,
    )
