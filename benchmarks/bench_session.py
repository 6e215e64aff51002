"""One offline turn of an interview: commit the answer, grade it, choose the follow-up, store it.

    python benchmarks/bench_session.py [--turns 200]

Times ``Session.submit`` end to end (two SQLite transactions in WAL mode, the offline grader, the
follow-up policy) in a warm process on a temporary store, cycling through real answers.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import typer
import yaml

from interviewer.faces.batch import Graders
from interviewer.interview.session import Session, make_plan
from interviewer.interview.store import Store
from interviewer.settings import PROJECT_ROOT, Settings

ANSWERS = yaml.safe_load((PROJECT_ROOT / "tests" / "data" / "answers.yaml").read_text(encoding="utf-8"))


def main(turns: int = 200) -> None:
    graders = Graders(Settings())
    texts = list(ANSWERS.values())
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "sessions.db").open()
        graders.offline.grade(graders.bank.get("q01"), texts[0])  # warm-up: jieba, rubric phrases
        times: list[float] = []
        session = Session.start(store, graders.bank, graders.offline, make_plan(graders.bank, "full"), mode="practice")
        for i in range(turns):
            while (kind := session.prompt().kind) not in {"question", "followup"}:
                if kind == "round-summary":
                    session.continue_after_summary()
                else:
                    session = Session.start(store, graders.bank, graders.offline, make_plan(graders.bank, "full"), mode="practice")
            started = time.perf_counter()
            session.submit(texts[i % len(texts)])
            times.append((time.perf_counter() - started) * 1000)
    times.sort()
    p95 = times[int(0.95 * len(times))]
    print(f"offline turn: p50 {statistics.median(times):.1f} ms, p95 {p95:.1f} ms, n={len(times)} (target p95 <= 100 ms)")


if __name__ == "__main__":
    typer.run(main)
