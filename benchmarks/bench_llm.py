"""The product's own overhead per LLM turn, against a local OpenAI-compatible server that answers at once.

    python benchmarks/bench_llm.py [--turns 100]

A turn is ``Engine.submit`` with the LLM grader: commit the answer, the offline second opinion,
build the prompt (rubric, passages, fenced answer), one HTTP round trip to the instant server,
check the reply, choose the follow-up, store everything. The server's own time is nil, so the
figure is what the product adds on top of a model's latency.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import typer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from interviewer.grading.model import LLMGrader
from interviewer.interview.engine import Engine
from interviewer.interview.plan import make_plan
from interviewer.interview.store import Store
from interviewer.provider import StructuredCaller
from interviewer.services import Services
from interviewer.settings import EndpointSettings, LLMSettings, Settings
from tests.fake_openai import serve

ANSWER = "ZeRO-1 切分优化器状态，ZeRO-2 再切梯度，ZeRO-3 再切参数，通信约 3Ψ，靠预取和计算重叠隐藏。"


def main(turns: int = 100) -> None:
    with serve() as (base_url, recorded), tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            home=Path(tmp),
            endpoint=EndpointSettings(base_url=base_url, api_key="sk-bench", model="bench-model"),
            llm=LLMSettings(structured_output="json_schema"),
        )
        services = Services(settings)
        grader = LLMGrader(settings, services.offline_grader, services.passage_texts, caller=StructuredCaller(settings))
        engine = Engine(Store(Path(tmp) / "sessions.db").open(), services.bank, grader)
        question = services.bank.get("q02")
        reply = json.dumps(
            {
                "criteria": [
                    {"id": c.id, "score": 2, "evidence": ["ZeRO-1 切分优化器状态"], "missing": [], "misconceptions": []}
                    for c in question.criteria
                ],
                "feedback": "ok",
            },
            ensure_ascii=False,
        )
        times: list[float] = []
        for i in range(turns + 5):
            state = engine.start(make_plan(services.bank, "question", "q02"))
            recorded.script = [{"content": reply}]
            started = time.perf_counter()
            engine.submit(state.id, ANSWER)
            if i >= 5:  # warm-up: imports, jieba, the HTTP client
                times.append((time.perf_counter() - started) * 1000)
    times.sort()
    p95 = times[int(0.95 * len(times))]
    print(f"LLM turn against an instant local server: p50 {statistics.median(times):.1f} ms, p95 {p95:.1f} ms, n={len(times)}")
    print("(target: the product's overhead beyond the model's time at most 50 ms p95)")


if __name__ == "__main__":
    typer.run(main)
