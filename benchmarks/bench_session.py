"""One offline turn of an interview: commit the answer, read it, choose what follows, store it.

    python benchmarks/bench_session.py [--turns 200]

Times ``Engine.submit`` end to end (two SQLite transactions in WAL mode, the offline reading of the
answer against the question's rubric and against each follow-up it might ask, to know what the
answer already covered, the follow-up policy) in a warm process (every rubric compiled, as a
server has them after its first interviews) on a temporary store, cycling through real answers,
each made unique so that no reading of an earlier turn is reused.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

import typer
import yaml

from interviewer.interview.engine import Engine
from interviewer.interview.plan import make_plan
from interviewer.interview.store import Store
from interviewer.services import Services
from interviewer.settings import PROJECT_ROOT, Settings

ANSWERS = yaml.safe_load((PROJECT_ROOT / "tests" / "data" / "answers.yaml").read_text(encoding="utf-8"))


def main(turns: int = 200) -> None:
    services = Services(Settings())
    texts = list(ANSWERS.values())
    with tempfile.TemporaryDirectory() as tmp:
        engine = Engine(Store(Path(tmp) / "sessions.db").open(), services.bank, services.offline_grader)
        for question in services.bank.questions:  # warm-up: jieba, every rubric's phrases compiled once
            services.offline_grader.grade(question, texts[0])
            for followup in question.followups:
                services.offline_grader.grade_followup(question, followup, texts[0])
        times: list[float] = []
        state = engine.start(make_plan(services.bank, "full"), mode="practice")
        for i in range(turns):
            while (kind := state.prompt.kind) not in {"question", "followup"}:
                if kind == "round-summary":
                    state = engine.proceed(state.id)
                else:
                    state = engine.start(make_plan(services.bank, "full"), mode="practice")
            started = time.perf_counter()
            state = engine.submit(state.id, f"{texts[i % len(texts)]}\n\n({i})").state
            times.append((time.perf_counter() - started) * 1000)
    times.sort()
    p95 = times[int(0.95 * len(times))]
    print(f"offline turn: p50 {statistics.median(times):.1f} ms, p95 {p95:.1f} ms, n={len(times)} (target p95 <= 100 ms)")


if __name__ == "__main__":
    typer.run(main)
