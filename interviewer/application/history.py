"""One user's history across sessions: the history table, scores per topic over time, each
criterion's share of full marks over time and its review schedule, and the weakest topics.

It is read per user and per page: one page of sessions (the newest first) with their turns' scores
from the store's score column, so its cost follows the page, not everything ever answered; the
weakest topics come from each question's latest score, one query. Nothing here writes.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from interviewer.content.bank import Bank
from interviewer.interview.state import Scores, score_turns, topic_means
from interviewer.interview.store import LOCAL, SessionRow, Store, Turn

PAGE = 50  # sessions on one page of the history


@dataclass(frozen=True)
class HistoryRow:
    id: str
    started: datetime.datetime
    status: str
    mode: str
    lang: str
    plan: str
    answered: int
    questions: int
    overall: float | None

    def as_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "started": self.started.strftime("%Y-%m-%d %H:%M"), "created_at": self.started.timestamp()}


def started(row: SessionRow) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(row.created_at)


class History:
    """One user's sessions and their scores as of one read: a page of ``limit`` sessions from
    ``offset`` (None: every session)."""

    def __init__(self, store: Store, bank: Bank, owner: str = LOCAL, limit: int | None = PAGE, offset: int = 0):
        self.store = store
        self.bank = bank
        self.owner = owner
        self.sessions = store.sessions(owner, limit, offset)  # newest first
        self.total = store.count_sessions(owner) if limit is not None else len(self.sessions)
        turns = store.scores_of([row.id for row in self.sessions])
        self.scores: dict[str, Scores] = {row.id: score_turns(row.plan, bank, turns[row.id]) for row in self.sessions}

    @cached_property
    def schedules(self) -> list[Any]:
        return self.store.reviews(self.owner)

    @cached_property
    def turns(self) -> dict[str, list[Turn]]:
        """The page's turns whole, grades parsed (only the criteria's history needs them)."""
        return self.store.turns_of([row.id for row in self.sessions])

    def rows(self) -> list[HistoryRow]:
        return [
            HistoryRow(
                row.id,
                started(row),
                row.status,
                row.mode,
                row.lang,
                row.plan.label,
                self.scores[row.id].answered,
                len(row.plan.questions),
                self.scores[row.id].overall,
            )
            for row in self.sessions
        ]

    def latest_scores(self) -> dict[str, float]:
        """Each question's latest main-answer score across all the user's sessions (not just the page)."""
        return self.store.latest_scores([q.id for q in self.bank.questions], self.owner)

    def weakest_topics(self, limit: int = 8) -> list[tuple[str, float, int]]:
        """(topic, mean of its questions' latest scores, questions), weakest first."""
        by_topic: dict[str, list[float]] = {}
        for question_id, score in self.latest_scores().items():
            for topic in self.bank.get(question_id).topics:
                by_topic.setdefault(topic, []).append(score)
        ranked = sorted((sum(v) / len(v), topic, len(v)) for topic, v in by_topic.items())
        return [(topic, round(mean, 1), n) for mean, topic, n in ranked[:limit]]

    def overall_over_time(self) -> list[tuple[datetime.datetime, float, str]]:
        """(started, overall, plan) of every session of the page with a score, oldest first."""
        return [
            (started(row), overall, row.plan.label)
            for row in reversed(self.sessions)
            if (overall := self.scores[row.id].overall) is not None
        ]

    def topic_history(self) -> list[dict[str, Any]]:
        """One row per session of the page and topic: the mean score of the topic's answered questions, oldest first."""
        rows = []
        for row in reversed(self.sessions):
            when = started(row).strftime("%Y-%m-%d %H:%M")
            for topic, mean in sorted(topic_means(self.scores[row.id], self.bank)):
                rows.append({"session_id": row.id, "started": when, "topic": topic, "score": mean})
        return rows

    def criterion_history(self) -> list[dict[str, Any]]:
        """One row per session of the page and criterion of a main answer: the criterion's score share (0-1)."""
        rows: list[dict[str, Any]] = []
        for row in reversed(self.sessions):
            when = started(row).strftime("%Y-%m-%d %H:%M")
            latest: dict[str, float] = {}
            for turn in self.turns[row.id]:
                if turn.grade and turn.followup_id is None and turn.question_id:
                    for c in turn.grade.criteria:
                        latest[f"{turn.question_id}/{c.id}"] = round(c.score / c.max_score, 2)
            rows.extend({"session_id": row.id, "started": when, "criterion": k, "share": v} for k, v in sorted(latest.items()))
        return rows

    def criterion_status(self, now: float) -> list[dict[str, Any]]:
        """Every scheduled criterion: its last quality (0-5), easiness, interval and when it is due."""
        return [
            {
                "criterion": s.key,
                "question_id": s.question_id,
                "last_quality": s.last_quality,
                "easiness": s.easiness,
                "interval_days": s.interval_days,
                "due_in_days": round((s.due_at - now) / 86_400, 1),
            }
            for s in self.schedules
        ]
