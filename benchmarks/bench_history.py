"""The history's cost with a long past: 2,000 sessions of 50 graded turns for one user (and as many
for a second user, who must not slow the first down), then the web page's history (table, charts,
weakest topics) and `interviewer progress` timed, each the median of 5 reads, with the peak memory.

    .venv/bin/python benchmarks/bench_history.py [--sessions 2000] [--turns 50]

Targets (issue 15): the history <= 200 ms, progress <= 1 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path

from interviewer.application.history import History
from interviewer.faces.web import history_frames
from interviewer.grading.grade import CriterionGrade, Grade
from interviewer.interview.plan import make_plan
from interviewer.interview.store import Store
from interviewer.services import Services
from interviewer.settings import Settings

ANSWER = "an answer " * 40


def fill(store: Store, services: Services, owner: str, sessions: int, turns: int) -> None:
    """Sessions as the engine leaves them: the full plan, main answers and follow-ups, each graded."""
    plan = make_plan(services.bank, "full")
    questions = [services.bank.get(q) for q in plan.questions]
    start = time.time() - sessions * 3600
    with store.transaction() as db:
        for n in range(sessions):
            session_id = f"{owner[:3]}{n:09d}"
            created = start + n * 3600
            db.execute(
                "INSERT INTO sessions (id, created_at, updated_at, status, mode, lang, plan, settings, prompt_shown_at, owner)"
                " VALUES (?, ?, ?, 'finished', 'interview', 'zh', ?, ?, ?, ?)",
                (session_id, created, created, json.dumps(plan.as_dict()), json.dumps({"grader": "offline"}), created, owner),
            )
            for seq in range(1, turns + 1):
                question = questions[(seq - 1) % len(questions)]
                followup = question.followups[0].id if seq > len(questions) and question.followups else None
                score = round((n * 7 + seq * 3) % 100 / 10, 1)
                grade = Grade(
                    question_id=question.id,
                    score=score,
                    criteria=[
                        CriterionGrade(id=c.id, description=c.id, weight=c.weight, score=int(score * 3 // 10), max_score=3, level="…")
                        for c in question.criteria
                    ],
                    feedback="…",
                    lang="zh",
                    grader="offline",
                    grader_version="bench",
                    rubric_version=question.version,
                )
                db.execute(
                    "INSERT INTO turns (session_id, seq, kind, question_id, followup_id, round, answer, answered_at, status, grade, score,"
                    " grader) VALUES (?, ?, 'answer', ?, ?, ?, ?, ?, 'graded', ?, ?, 'offline')",
                    (
                        session_id,
                        seq,
                        question.id,
                        followup,
                        question.round,
                        "an answer " * 40,
                        created + seq,
                        grade.model_dump_json(),
                        score,
                    ),
                )


def timed(read: object, repeat: int = 5) -> tuple[float, float]:
    """(median ms, peak MiB of the first read)."""
    tracemalloc.start()
    read()  # type: ignore[operator]
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        read()  # type: ignore[operator]
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times), peak


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=2000)
    parser.add_argument("--turns", type=int, default=50)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="bench-history-"))
    services = Services(Settings(home=home))
    store = services.store
    began = time.perf_counter()
    for owner in ("ann", "bob"):
        fill(store, services, owner, args.sessions, args.turns)
    print(f"filled {2 * args.sessions} sessions of {args.turns} turns in {time.perf_counter() - began:.1f} s ({home})")

    def page() -> object:
        return history_frames(History(store, services.bank, "ann"), "en")

    def progress() -> object:
        past = History(store, services.bank, "ann", limit=20)  # `interviewer progress`'s default
        return past.topic_history(), past.criterion_history(), past.criterion_status(time.time())

    for name, read, target in (("history (web page)", page, 200), ("progress (command line)", progress, 1000)):
        ms, peak = timed(read)
        print(f"{name}: median {ms:.0f} ms (target <= {target} ms), peak {peak:.1f} MiB traced")


if __name__ == "__main__":
    main()
