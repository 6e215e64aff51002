"""Choosing what to practise: a plan by name, and the weak-points plan drawn from the history."""

from __future__ import annotations

import time

from interviewer.application.history import History
from interviewer.content.bank import Bank
from interviewer.interview.plan import Plan, PlanError, PlanKind, make_plan, topic_questions
from interviewer.interview.store import LOCAL, Store

WEAK_BELOW = 7.0  # a question whose latest score is under this is a weak point
WEAK_LIMIT = 5


def weak_plan(
    store: Store, bank: Bank, limit: int = WEAK_LIMIT, topic: str | None = None, now: float | None = None, owner: str = LOCAL
) -> Plan:
    """The questions whose criteria are due for review (spaced repetition), most overdue and
    hardest first; when nothing is due yet, the questions whose latest score is lowest."""
    now = time.time() if now is None else now
    past = History(store, bank, owner, limit=0)  # no page of sessions: the schedule and the latest scores
    wanted = set(topic_questions(bank, topic) if topic is not None else (q.id for q in bank.questions))
    chosen: list[str] = []
    for schedule in past.schedules:  # sorted by due date, then easiness
        due = schedule.due_at <= now and schedule.last_quality is not None and schedule.last_quality < 5
        if due and schedule.question_id in wanted and schedule.question_id not in chosen:
            chosen.append(schedule.question_id)
    if not chosen:
        order = [q.id for q in bank.questions]
        weak = sorted((score, qid) for qid, score in past.latest_scores().items() if score < WEAK_BELOW and qid in wanted)
        chosen = [qid for _, qid in weak if qid in order]
    if not chosen:
        raise PlanError("no weak points yet: sit an interview or a round first" + (f" (topic {topic})" if topic else ""))
    return Plan("weak", "my weak points" + (f": {topic}" if topic else ""), chosen[:limit])


def select_plan(store: Store, bank: Bank, kind: str, value: str | int | None = None, owner: str = LOCAL) -> Plan:
    """The plan a face asked for: ``full``; ``round`` N; ``question`` qNN; ``topic`` T; ``weak`` (optionally of topic T)."""
    if kind == "weak":
        return weak_plan(store, bank, topic=str(value) if value else None, owner=owner)
    by_bank: dict[str, PlanKind] = {"full": "full", "round": "round", "question": "question", "topic": "topic"}
    if kind not in by_bank:
        raise PlanError(f"unknown plan '{kind}': use full, round, question, topic or weak")
    return make_plan(bank, by_bank[kind], value)
