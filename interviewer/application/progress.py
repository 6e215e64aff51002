"""Progress across sessions: the score per topic and per criterion over time, and what is due."""

from __future__ import annotations

import datetime
from typing import Any

from interviewer.content.bank import Bank
from interviewer.interview.session import Session
from interviewer.interview.store import Store


def topic_history(store: Store, bank: Bank, grader: Any) -> list[dict[str, Any]]:
    """One row per session and topic: the mean score of the topic's answered questions."""
    rows = []
    for row in reversed(store.sessions()):  # oldest first
        scores = Session(store, bank, grader, row).scores()
        by_topic: dict[str, list[float]] = {}
        for r in scores.rounds:
            for q in r.questions:
                if q.score is not None:
                    for topic in bank.get(q.id).topics:
                        by_topic.setdefault(topic, []).append(q.score)
        started = datetime.datetime.fromtimestamp(row.created_at).strftime("%Y-%m-%d %H:%M")
        for topic, values in sorted(by_topic.items()):
            rows.append({"session_id": row.id, "started": started, "topic": topic, "score": round(sum(values) / len(values), 1)})
    return rows


def criterion_history(store: Store) -> list[dict[str, Any]]:
    """One row per session and criterion of a main answer: the criterion's score share (0-1)."""
    rows: list[dict[str, Any]] = []
    for row in reversed(store.sessions()):
        started = datetime.datetime.fromtimestamp(row.created_at).strftime("%Y-%m-%d %H:%M")
        latest: dict[str, float] = {}
        for turn in store.turns(row.id):
            if turn.grade and turn.followup_id is None and turn.question_id:
                for c in turn.grade.get("criteria", []):
                    latest[f"{turn.question_id}/{c['id']}"] = round(c["score"] / c["max_score"], 2)
        rows.extend({"session_id": row.id, "started": started, "criterion": k, "share": v} for k, v in sorted(latest.items()))
    return rows


def criterion_status(store: Store, now: float) -> list[dict[str, Any]]:
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
        for s in store.reviews()
    ]
