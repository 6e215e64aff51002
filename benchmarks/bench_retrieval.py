"""Retrieval quality and latency on the labelled queries in benchmarks/queries/.

    python benchmarks/bench_retrieval.py [--misses] [--queries benchmarks/broad-queries.yaml]

``--queries`` measures one other file of the same shape instead: ``broad-queries.yaml`` holds 40
broad, plainly worded interview questions (several topics in one, little jargon), written and
labelled blind, by someone who read only the knowledge base, never the retriever.

Recall@k: the share of queries with at least one relevant passage in the top k. Coverage@k: the
share of all relevant passages that are in the top k (a broad question wants several of them).
MRR: mean reciprocal rank of the first relevant passage within the top 10.
Latency: one ``Retriever.search`` call (segmentation, BM25, Chroma query, fusion) after warm-up.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import typer
import yaml

from interviewer.retrieval.index import KnowledgeIndex
from interviewer.retrieval.search import Retriever
from interviewer.settings import PROJECT_ROOT, Settings

QUERIES = PROJECT_ROOT / "benchmarks" / "queries"


def load_queries(only: Path | None = None) -> list[dict]:
    queries: list[dict] = []
    for path in [only] if only is not None else sorted(QUERIES.glob("*.yaml")):
        queries.extend(yaml.safe_load(path.read_text(encoding="utf-8"))["queries"])
    return queries


def main(
    misses: bool = typer.Option(False, help="Print the queries that miss the top 3."),
    queries_file: Path | None = typer.Option(None, "--queries", help="One query file to measure instead of benchmarks/queries/."),  # noqa: B008
) -> None:
    queries = load_queries(queries_file)
    with tempfile.TemporaryDirectory() as home:
        retriever = Retriever(KnowledgeIndex(Settings(home=Path(home))))
        retriever.search("warm-up 预热")
        ranks: list[int | None] = []
        latencies: list[float] = []
        by_lang: dict[str, list[bool]] = defaultdict(list)
        covered: dict[int, list[float]] = defaultdict(list)
        for q in queries:
            started = time.perf_counter()
            results = retriever.search(q["query"], k=10)
            latencies.append((time.perf_counter() - started) * 1000)
            sources = [r.source for r in results]
            for k in (3, 5, 10):
                covered[k].append(sum(s in sources[:k] for s in q["relevant"]) / len(q["relevant"]))
            rank = next((i for i, s in enumerate(sources, start=1) if s in q["relevant"]), None)
            ranks.append(rank)
            by_lang[q["lang"]].append(rank is not None and rank <= 3)
            if misses and (rank is None or rank > 3):
                print(f"MISS rank={rank} [{q['lang']}] {q['query']}\n   want {q['relevant']}\n   got  {sources[:3]}")
    n = len(queries)
    recall = {k: sum(1 for r in ranks if r is not None and r <= k) / n for k in (1, 3, 5)}
    mrr = sum(1 / r for r in ranks if r is not None) / n
    latencies.sort()
    p95 = latencies[min(n - 1, int(0.95 * n))]
    print(f"queries: {n} ({', '.join(f'{lang} {len(v)}' for lang, v in sorted(by_lang.items()))})")
    print(f"recall@1 {recall[1]:.3f}  recall@3 {recall[3]:.3f}  recall@5 {recall[5]:.3f}  MRR@10 {mrr:.3f}")
    print("coverage (relevant passages found): " + ", ".join(f"@{k} {statistics.mean(v):.3f}" for k, v in covered.items()))
    print("recall@3 by language: " + ", ".join(f"{lang} {sum(v) / len(v):.3f}" for lang, v in sorted(by_lang.items())))
    print(f"latency per query: p50 {statistics.median(latencies):.1f} ms, p95 {p95:.1f} ms (target <= 50 ms)")


if __name__ == "__main__":
    typer.run(main)
