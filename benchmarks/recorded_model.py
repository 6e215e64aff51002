"""The model grader measured on recorded replies of a real model: capture, answer, replay.

    python benchmarks/recorded_model.py capture SET.jsonl --name NAME   # the exact requests, stored
    python benchmarks/recorded_model.py pending SET.jsonl --name NAME   # which requests have no reply
    python benchmarks/recorded_model.py replay SET.jsonl --name NAME [--json]   # agreement figures
    python benchmarks/recorded_model.py fit DEV.jsonl --name NAME   # the model path's calibration

``capture`` grades every line of a JSONL set (``question_id``, ``answer``; any labels stay out of
the requests) with the product's model grader against a local OpenAI-compatible server that logs
what it receives and answers a placeholder. Each request is stored in
``benchmarks/recordings/NAME/requests.jsonl`` under the SHA-256 of its messages (system and user
text, the reply's schema included), so the same prompt always has the same key. A model (or
someone standing in for one) answers each stored request; the replies go to ``replies.jsonl``
beside it, ``{"key", "content", "by"}``, ``content`` the model's reply text.

``replay`` serves those replies by key and runs the product's evaluation (``interviewer eval``'s
code) with the model grader: the checks after the model (scores kept to each scale, quotes checked
against the answer, the overall computed from the criteria) run as they do for a live model. A
request with no reply is answered with an error (the grade falls back to the offline grader, as
it would with a failing model) and counted. When a prompt, a rubric or a passage changes, the keys
change: ``pending`` lists the requests that need new replies.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import typer

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from interviewer.faces.batch import grade_line, read_lines
from interviewer.faces.evaluation import evaluate
from interviewer.grading import metrics
from interviewer.grading.calibration import Calibration, LevelFeatures, fit
from interviewer.services import Services
from interviewer.settings import EndpointSettings, LLMSettings, Settings

RECORDINGS = Path(__file__).resolve().parent / "recordings"
MODEL = "recorded-model"
PLACEHOLDER = json.dumps({"criteria": [], "feedback": "placeholder reply of the capturing server"})
app = typer.Typer(add_completion=False, help=__doc__)


def request_key(messages: list[dict[str, Any]]) -> str:
    """The key of a request: the SHA-256 of its messages' roles and text, in order."""
    canonical = json.dumps([[m.get("role"), m.get("content")] for m in messages], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass
class Model:
    """What the local server does: with ``replies`` it replays them by key, else it captures."""

    replies: dict[str, str] | None = None
    captured: list[dict[str, Any]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        messages = body.get("messages", [])
        key = request_key(messages)
        if self.replies is None:
            with self.lock:
                self.captured.append({"key": key, "messages": messages})
            content = PLACEHOLDER
        elif key in self.replies:
            content = self.replies[key]
        else:
            with self.lock:
                self.missing.append(key)
            return 500, {"error": {"message": f"no recorded reply for request {key[:12]}", "type": "server_error"}}
        return 200, {
            "id": f"chatcmpl-{key[:12]}",
            "object": "chat.completion",
            "created": 0,
            "model": MODEL,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }


@contextmanager
def serve(model: Model) -> Iterator[str]:
    """The model on 127.0.0.1, an OpenAI-compatible base URL for as long as the block runs."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._send(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            self._send(*model.answer(body))

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def grading_settings(base_url: str, home: Path) -> Settings:
    """The model grader as a configured product runs it, one sample, no retry on a missing reply."""
    return Settings(
        home=home,
        endpoint=EndpointSettings(base_url=base_url, api_key="recorded", model=MODEL),
        llm=LLMSettings(structured_output="json_schema", samples=1, max_retries=0, timeout_s=30),
    )


def folder(name: str) -> Path:
    return RECORDINGS / name


def load_replies(name: str) -> dict[str, str]:
    path = folder(name) / "replies.jsonl"
    if not path.exists():
        return {}
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {row["key"]: row["content"] for row in rows}


def capture_requests(source: Path) -> list[dict[str, Any]]:
    """The requests the model grader sends for each line of ``source``, in order, with the line."""
    model = Model()
    rows: list[dict[str, Any]] = []
    with serve(model) as base_url, tempfile.TemporaryDirectory() as home:
        services = Services(grading_settings(base_url, Path(home)))
        grader = services.rubric_grader("llm")
        for number, value, error in read_lines(source.read_bytes().splitlines()):
            if value is None:
                raise typer.BadParameter(f"{source} line {number}: {error}")
            before = len(model.captured)
            unlabelled = {k: value[k] for k in ("question_id", "question", "answer", "reference") if k in value}
            grade_line(services, grader, number, unlabelled)
            for request in model.captured[before:]:
                rows.append({"line": number, "question_id": value.get("question_id"), **request})
    return rows


@app.command()
def capture(source: Path, name: str = typer.Option(..., help="the recording's folder under benchmarks/recordings")) -> None:
    """Store the exact requests the model grader sends for SOURCE."""
    rows = capture_requests(source)
    target = folder(name)
    target.mkdir(parents=True, exist_ok=True)
    with (target / "requests.jsonl").open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{len(rows)} requests from {source} -> {target / 'requests.jsonl'}")
    for line in describe(rows):
        print(line)


def describe(rows: list[dict[str, Any]]) -> list[str]:
    """Sizes of the captured requests, in estimated tokens (``paced_server.tokens``: one CJK
    character, or up to four other characters), and the share of each request that is the same for
    every answer to its question: the prefix a provider's prompt cache can reuse."""
    from paced_server import tokens

    if not rows:
        return []
    texts = ["".join(m["content"] for m in row["messages"]) for row in rows]
    sizes = sorted(len(tokens(t)) for t in texts)
    # what comes before the answer; requests to one question in one language must share it whole
    prefixes = [t[: t.rindex("<answer>")] for t in texts]
    groups = {(row["question_id"], p.rsplit("Write the feedback in ", 1)[-1][:8]) for row, p in zip(rows, prefixes, strict=True)}
    system = {row["messages"][0]["content"] for row in rows}
    shared = sum(len(tokens(p)) for p in prefixes)
    p90 = sizes[min(len(sizes) - 1, int(len(sizes) * 0.9))]
    return [
        f"input per request: median {sizes[len(sizes) // 2]:,} tokens, p90 {p90:,}, largest {sizes[-1]:,} (estimated)",
        f"before the answer (system text, question, rubric, passages): {shared / sum(sizes):.0%} of the input tokens;"
        f" {len(set(prefixes))} distinct prefixes for {len(groups)} question-and-language pairs; {len(system)} system text(s)",
    ]


@app.command()
def pending(source: Path, name: str = typer.Option(...)) -> None:
    """The requests SOURCE would send today that have no recorded reply (after a prompt change)."""
    replies = load_replies(name)
    rows = capture_requests(source)
    missing = [row for row in rows if row["key"] not in replies]
    for row in missing:
        print(f"line {row['line']} {row['question_id'] or '-'} {row['key'][:16]}")
    print(f"{len(missing)} of {len(rows)} requests have no reply in {folder(name) / 'replies.jsonl'}")
    raise typer.Exit(1 if missing else 0)


def replay_report(source: Path, replies: dict[str, str]) -> tuple[Any, list[str]]:
    """The evaluation of SOURCE with the model grader answered from ``replies``; and the keys asked
    for that had none."""
    model = Model(replies=replies)
    with serve(model) as base_url, tempfile.TemporaryDirectory() as home:
        services = Services(grading_settings(base_url, Path(home)))
        report = evaluate(services, services.rubric_grader("llm"), source.read_bytes().splitlines())
    return report, model.missing


@app.command()
def replay(source: Path, name: str = typer.Option(...), as_json: bool = typer.Option(False, "--json")) -> None:
    """Agreement of the model grader with SOURCE's expert scores, from the recorded replies."""
    report, missing = replay_report(source, load_replies(name))
    summary = report.summary()
    summary["requests_without_a_reply"] = len(missing)
    if as_json:
        print(json.dumps(summary, ensure_ascii=False, indent=2))
        return
    print(f"{source.name}: {summary['n']} answers, {len(missing)} without a recorded reply (graded offline)")
    for key in ("spearman", "qwk", "mae"):
        print(f"  {key}: {summary.get(key)}")
    for kind, row in sorted(summary.get("by_kind", {}).items()):
        print(f"  {kind}: {row}")


def replayed_features(source: Path, replies: dict[str, str]) -> list[tuple[str, LevelFeatures, float, str]]:
    """(question, features, expert score, kind) of every labelled line, graded by the model grader
    from ``replies`` before any calibration: what a fit of the model path learns from."""
    model = Model(replies=replies)
    out: list[tuple[str, LevelFeatures, float, str]] = []
    with serve(model) as base_url, tempfile.TemporaryDirectory() as home:
        services = Services(grading_settings(base_url, Path(home)))
        grader = services.rubric_grader("llm")
        grader.calibration = Calibration.identity()  # type: ignore[attr-defined]
        for number, value, _error in read_lines(source.read_bytes().splitlines()):
            if value is None or "score" not in value:
                continue
            grade = grade_line(services, grader, number, value)["grade"]
            criteria = [SimpleNamespace(**c) for c in grade["criteria"]]
            out.append(
                (
                    str(value["question_id"]),
                    LevelFeatures.of(criteria, grade["flags"]),
                    float(value["score"]),
                    str(value.get("kind", "all")),
                )
            )
    if model.missing:
        raise typer.BadParameter(f"{len(model.missing)} requests have no recorded reply: run `pending` and record them first")
    return out


def figures(predicted: list[float], expert: list[float]) -> str:
    return (
        f"Spearman {metrics.spearman(predicted, expert):.3f}, QWK {metrics.quadratic_weighted_kappa(predicted, expert):.3f}, "
        f"MAE {metrics.mean_absolute_error(predicted, expert):.2f}"
    )


@app.command("fit")
def fit_model(
    source: Path, name: str = typer.Option(...), save: bool = typer.Option(True, help="write calibration.json's model section")
) -> None:
    """Fit the model grader's mapping from criterion levels to 0-10 on SOURCE's recorded replies
    (monotone, as the offline grader's), reporting the leave-one-question-out figure first."""
    rows = replayed_features(source, load_replies(name))
    questions = [q for q, *_ in rows]
    features = [f for _, f, _, _ in rows]
    expert = [e for *_, e, _ in rows]
    identity = Calibration.identity()
    print(f"{source.name}: {len(rows)} answers, recorded replies")
    print(f"  uncalibrated (10 x the levels' weighted share): {figures([identity.score(f) for f in features], expert)}")
    held_out = [0.0] * len(rows)
    for question in sorted(set(questions)):
        train = [i for i, q in enumerate(questions) if q != question]
        fitted = fit([features[i] for i in train], [expert[i] for i in train], "leave-one-question-out")
        for i, q in enumerate(questions):
            if q == question:
                held_out[i] = fitted.score(features[i])
    print(f"  calibrated, leave-one-question-out: {figures(held_out, expert)}")
    by_kind: dict[str, list[int]] = {}
    for i, (*_, kind) in enumerate(rows):
        by_kind.setdefault(kind, []).append(i)
    for kind, items in sorted(by_kind.items()):
        raw_mean = sum(identity.score(features[i]) for i in items) / len(items)
        held_mean = sum(held_out[i] for i in items) / len(items)
        expert_mean = sum(expert[i] for i in items) / len(items)
        print(f"    {kind}: uncalibrated {raw_mean:.1f}, calibrated {held_mean:.1f}, expert {expert_mean:.1f}")
    final = fit(features, expert, f"{source.name} ({len(rows)} answers, recorded replies of a frontier-class model)")
    print(f"  fitted on all: penalty {final.misconception_penalty}, keyword factor {final.keyword_factor}, cap {final.misconception_cap}")
    print(f"  knot values {final.values}")
    if save:
        final.save(section="model")
        print("  saved to interviewer/grading/calibration.json (model)")


if __name__ == "__main__":
    app()
