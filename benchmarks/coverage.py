"""How much of what real interviews ask the product covers (issue 19's measure).

    python benchmarks/coverage.py packet [--out DIR]   # the judges' packets: each question with its top 3 passages
    python benchmarks/coverage.py summary              # the judged counts, by area

``interview-coverage/questions.jsonl``: 60 questions (15 each on training, CUDA, clusters and
inference; 40 Chinese) as candidates report them from 2024-2026 interviews, written by an author
who never saw the bank, the knowledge base or the retriever. ``judged.jsonl``: for each, a separate
expert judge's reading of the three passages retrieval returns (``depth``: they answer it as an
expert would, every part; ``partly``; ``none``) and the bank question or follow-up that asks it,
if any. The judges saw the bank's questions and the passages, nothing else.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

import typer

HERE = Path(__file__).resolve().parent / "interview-coverage"
app = typer.Typer(add_completion=False)


def _questions() -> list[dict[str, str]]:
    return [json.loads(line) for line in (HERE / "questions.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]


@app.command()
def packet(out: Path = typer.Option(Path(tempfile.gettempdir()) / "interview-coverage", help="Where the packets go.")) -> None:  # noqa: B008
    """Two packets of 30 questions, each with the bank's questions and follow-ups first."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from interviewer.retrieval.index import KnowledgeIndex
    from interviewer.retrieval.search import Retriever
    from interviewer.services import Services
    from interviewer.settings import Settings

    settings = Settings(home=Path(tempfile.mkdtemp()))
    retriever = Retriever(KnowledgeIndex(settings))
    head = ["# Bank questions (each with its follow-ups)\n"]
    for q in Services(settings).bank.questions:
        head.append(f"- **{q.id}** (round {q.round}): {q.question.en}")
        head += [f"  - follow-up {f.id}: {f.question.en}" for f in q.followups]
    questions = _questions()
    out.mkdir(parents=True, exist_ok=True)
    for part, chunk in ((1, questions[:30]), (2, questions[30:])):
        lines = [*head, "\n# Questions, each with the three passages retrieval returns\n"]
        for item in chunk:
            lines.append(f"=== QUESTION {item['id']} [{item['area']}] {item['question']}\n")
            for i, found in enumerate(retriever.search(item["question"], k=3), 1):
                lines.append(f"--- passage {i} of {item['id']}: {found.source}\n\n{found.text}\n")
        path = out / f"packet-{part}.md"
        path.write_text("\n".join(lines), encoding="utf-8")
        print(path)


@app.command()
def summary() -> None:
    """Answered in depth, partly, not at all, and covered by a bank question: by area and overall."""
    areas = {q["id"]: q["area"] for q in _questions()}
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for line in (HERE / "judged.jsonl").read_text(encoding="utf-8").splitlines():
        judged = json.loads(line)
        for area in (areas[judged["id"]], "all"):
            counts[area][judged["depth"]] += 1
            counts[area]["bank"] += judged["bank"] != "none"
            counts[area]["n"] += 1
    for area in ("training", "cuda", "cluster", "inference", "all"):
        c = counts[area]
        n = c["n"]
        print(
            f"{area:10s} n={n:2d}  in depth {c['depth'] / n:4.0%}  partly {c['partly'] / n:4.0%}  none {c['none'] / n:4.0%}"
            f"  a bank question {c['bank'] / n:4.0%}"
        )


if __name__ == "__main__":
    app()
