"""Grading quality and speed of the offline grader.

    python benchmarks/bench_grader.py [--speed/--no-speed]

Quality: agreement with expert scores on the development set (../shared/eval/dev-answers.jsonl,
in-sample: the calibration was fitted on it; `python -m interviewer.grading.fit` prints the
leave-one-question-out figures), on the challenge answers in benchmarks/challenge-answers.jsonl
(written for this project by an author who never saw the grader; it guided two thresholds, so it
is a validation set), on the second held-out set in benchmarks/holdout-answers.jsonl (written by
another author who saw neither the grader nor the rubrics, measured after the grader was settled:
32 fluent answers with one core error, 16 correct answers that name a wrong belief to reject it,
16 solid answers), per kind against the targets, and reference-only grading on zh-ads
(../shared/eval/external/zh-ads/, skipped when absent).
Speed: one grade after warm-up (p50, p95), and `interviewer grade` on 1,000 answers as a process:
throughput and peak memory (ru_maxrss).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import typer

from interviewer.faces.batch import grade_line
from interviewer.grading import metrics
from interviewer.services import Services
from interviewer.settings import PROJECT_ROOT, Settings

SHARED = PROJECT_ROOT.parent / "shared" / "eval"
DEV = SHARED / "dev-answers.jsonl"
ZH_ADS = SHARED / "external" / "zh-ads" / "train.jsonl"
CHALLENGE = PROJECT_ROOT / "benchmarks" / "challenge-answers.jsonl"
HOLDOUT = PROJECT_ROOT / "benchmarks" / "holdout-answers.jsonl"
TARGETS = {  # kind -> (lowest allowed mean, highest allowed mean)
    "keyword-list": (None, 2.0),
    "off-topic": (None, 2.0),
    "steering": (None, 2.0),
    "misconception": (None, 4.0),
    "plain-words": (6.0, None),
}


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def agreement(services: Services, data: list[dict], label: str) -> list[float]:
    grades = [grade_line(services, services.offline_grader, i, r)["grade"] for i, r in enumerate(data, start=1)]
    predicted = [g["score"] for g in grades]
    named = [any(c["misconceptions"] for c in g["criteria"]) for g in grades]
    expert = [float(r["score"]) for r in data]
    lengths = [len(r["answer"]) for r in data]
    print(
        f"{label}: n={len(data)}  Pearson {metrics.pearson(predicted, expert):.3f}  Spearman {metrics.spearman(predicted, expert):.3f}  "
        f"QWK {metrics.quadratic_weighted_kappa(predicted, expert):.3f}  MAE {metrics.mean_absolute_error(predicted, expert):.2f}  "
        f"Spearman|length {metrics.partial_spearman(predicted, expert, lengths):.3f}"
    )
    kinds: dict[str, list[tuple[float, float, bool]]] = {}
    for row, p, found in zip(data, predicted, named, strict=True):
        kinds.setdefault(row.get("kind", "all"), []).append((p, float(row["score"]), found))
    for kind, pairs in sorted(kinds.items()):
        scores = [p for p, _, _ in pairs]
        expert_mean = sum(e for _, e, _ in pairs) / len(pairs)
        low, high = TARGETS.get(kind, (None, None))
        verdict = ""
        if high is not None:
            verdict = f"  target: mean <= {high}: {'met' if sum(scores) / len(scores) <= high else 'NOT met'}"
        if low is not None:
            verdict = f"  target: mean >= {low}: {'met' if sum(scores) / len(scores) >= low else 'NOT met'}"
        print(
            f"   {kind:15s} n={len(pairs):2d}  mean {sum(scores) / len(scores):4.1f} (expert {expert_mean:4.1f})"
            f"  min {min(scores):4.1f}  max {max(scores):4.1f}  a misconception named in {sum(f for *_, f in pairs):2d}{verdict}"
        )
    return predicted


def reference_only(services: Services) -> None:
    if not ZH_ADS.exists():
        print("zh-ads: skipped (not found)")
        return
    data = rows(ZH_ADS)
    predicted, expert = [], []
    for i, row in enumerate(data, start=1):
        predicted.append(grade_line(services, services.offline_grader, i, {**row, "question": row["question"]})["grade"]["score"])
        expert.append(float(row["score"]))
    print(
        f"zh-ads reference-only (in-sample fit): n={len(data)}  Pearson {metrics.pearson(predicted, expert):.3f}  "
        f"Spearman {metrics.spearman(predicted, expert):.3f}  QWK {metrics.quadratic_weighted_kappa(predicted, expert):.3f}"
    )


def speed(services: Services) -> None:
    data = rows(DEV) if DEV.exists() else rows(CHALLENGE)
    for row in data[:20]:
        services.offline_grader.grade(services.bank.get(row["question_id"]), row["answer"])
    times = []
    for run in range(3):  # each answer made unique, so that no earlier reading is reused
        for row in data:
            started = time.perf_counter()
            services.offline_grader.grade(services.bank.get(row["question_id"]), f"{row['answer']}\n({run})")
            times.append((time.perf_counter() - started) * 1000)
    times.sort()
    print(f"one grade after warm-up: p50 {times[len(times) // 2]:.1f} ms, p95 {times[int(0.95 * len(times))]:.1f} ms (n={len(times)})")

    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "answers.jsonl"
        with source.open("w", encoding="utf-8") as out:
            for i in range(1000):
                row = data[i % len(data)]
                answer = f"{row['answer']}\n({i})"  # unique: no reading reused
                out.write(json.dumps({"id": i, "question_id": row["question_id"], "answer": answer}, ensure_ascii=False) + "\n")
        env = {**os.environ, "INTERVIEWER_HOME": tmp}
        started = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "interviewer.faces.cli",
                "grade",
                str(source),
                "--out",
                str(Path(tmp) / "out.jsonl"),
                "--grader",
                "offline",
            ],
            check=True,
            env=env,
        )
        elapsed = time.perf_counter() - started
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(
        f"`interviewer grade` on 1,000 answers: {elapsed:.1f} s including start-up ({1000 / elapsed:.0f} answers/s), peak RSS {peak:.0f} MB"
    )


def main(run_speed: bool = typer.Option(True, "--speed/--no-speed", help="Also measure speed.")) -> None:
    services = Services(Settings())
    if DEV.exists():
        agreement(services, rows(DEV), "development set (in-sample)")
    agreement(services, rows(CHALLENGE), "challenge set (held out, used for validation)")
    agreement(services, rows(HOLDOUT), "second held-out set")
    reference_only(services)
    if run_speed:
        speed(services)


if __name__ == "__main__":
    typer.run(main)
