"""Index build time: from nothing, and again with nothing changed.

    python benchmarks/bench_index.py [--runs 3]

Each run uses a fresh temporary INTERVIEWER_HOME; the times are of ``KnowledgeIndex.build()``
in a warm process (imports excluded), plus one cold ``interviewer index`` process for reference.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import typer

from interviewer.retrieval.index import KnowledgeIndex
from interviewer.settings import Settings


def main(runs: int = 3) -> None:
    cold: list[float] = []
    warm: list[float] = []
    passages = 0
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as home:
            first = KnowledgeIndex(Settings(home=Path(home))).build()
            again = KnowledgeIndex(Settings(home=Path(home))).build()
            assert again.embedded == 0
            cold.append(first.seconds)
            warm.append(again.seconds)
            passages = first.passages
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "INTERVIEWER_HOME": home}
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "interviewer.faces.cli", "index"], env=env, check=True, capture_output=True)
        process = time.perf_counter() - started
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "interviewer.faces.cli", "index"], env=env, check=True, capture_output=True)
        process_again = time.perf_counter() - started
    print(f"passages indexed:                 {passages}")
    print(f"build from nothing (median of {runs}): {statistics.median(cold):.2f} s  (target <= 10 s)")
    print(f"build, nothing changed (median):  {statistics.median(warm):.3f} s  (target <= 1 s)")
    print(f"`interviewer index` process, from nothing: {process:.2f} s; nothing changed: {process_again:.2f} s")


if __name__ == "__main__":
    typer.run(main)
