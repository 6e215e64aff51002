"""An OpenAI-compatible model on 127.0.0.1 that answers at a real model's pace, for the live benchmarks.

    python benchmarks/paced_server.py [--port 8000] [--first-token 0.6] [--rate 50] [--hang] [--fixed-delay S]

``POST /v1/chat/completions`` plays the two callers the product has:

- ``"stream": true`` is the live interviewer: it streams (OpenAI chunk format, a last chunk with
  finish_reason "stop", then ``data: [DONE]``) ``ASK <id>`` for the first follow-up listed under
  "Follow-ups you may ask:" in the user message, then a one-sentence question of about 25 tokens;
  ``NEXT`` when none is listed. The first token comes after ``first_token_s``, the others at
  ``tokens_per_s``.
- otherwise it is the grader: a ModelGrade-shaped JSON (every criterion id of the request's rubric,
  ``- id: <id> (weight``), padded to about ``grade_tokens`` tokens (900), sent whole after
  ``first_token_s + tokens / tokens_per_s`` seconds (18.6 s at the defaults), as a non-streamed
  chat.completion. Evidence lists are empty, so no quote can fail the grader's check.

A "token" is counted as one CJK character (or CJK punctuation) or up to four other characters
(``tokens()``): roughly what an English BPE vocabulary gives for English prose, and what Qwen or
DeepSeek give for Chinese.

``hang=True``: no request is ever answered (the connection is held, nothing is sent, until the
server closes). ``fixed_delay_s=S``: every request is answered whole after exactly S seconds (the
stream's chunks all at once). ``GET /v1/models`` lists one model.

``serve(**options)`` is a context manager giving the base URL (``http://127.0.0.1:PORT/v1``), a
``str`` that also carries ``.pace`` (the options, which may be changed while it runs) and
``.counter`` (requests by kind: "live", "grade", "models", "other"; every grade request's answer
text, to count how many times each answer was graded; every live request's arrival and first-token
times; the most requests open at once).
"""

from __future__ import annotations

import argparse
import json
import re
import threading
import time
from collections import Counter as Tally
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "paced-model"
CJK = "\u2e80-\u9fff\u3000-\u303f\uf900-\ufaff\uff00-\uffef"
TOKEN = re.compile(f"[{CJK}]|[^{CJK}]{{1,4}}", re.S)
FOLLOWUP = re.compile(r"^- (\S+) \(probes ", re.M)
CRITERION = re.compile(r"^- id: (\S+) \(weight [^,]*, scale 0-(\d+)\)", re.M)
ANSWER = re.compile(r"<answer>\n(.*)\n</answer>\s*$", re.S)
QUESTION = {
    "en": "Going back to what you just said, how would that work on a real cluster, and what would it cost you at scale?",
    "zh": "回到你刚才说的，这在真实集群上具体怎么实现，规模变大时代价是什么，瓶颈会在哪里？",
}
PAD = {
    "en": "The answer names the idea but does not give the mechanism, the numbers or the trade-off a strong answer would. ",
    "zh": "回答提到了概念，但没有给出机制、具体数字和取舍，强的回答会把这些讲清楚。",
}


def tokens(text: str) -> list[str]:
    """The text cut into "tokens": each CJK character alone, other text in runs of up to 4 characters."""
    return TOKEN.findall(text)


@dataclass
class Pace:
    first_token_s: float = 0.6
    tokens_per_s: float = 50.0
    grade_tokens: int = 900
    hang: bool = False
    fixed_delay_s: float | None = None


@dataclass
class Counter:
    """What the server was asked: requests by kind, and each grade request's (time, answer)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    kinds: Tally[str] = field(default_factory=Tally)
    grades: list[tuple[float, str]] = field(default_factory=list)
    # every live request: {"received", "first_token", "answer"} (time.time(); first_token None until sent)
    lives: list[dict[str, Any]] = field(default_factory=list)
    grade_delay_s: float | None = None  # how long the last grade took to send (its pace)
    open: int = 0  # requests being answered now
    most_open: int = 0

    def count(self, kind: str, answer: str | None = None) -> None:
        with self.lock:
            self.kinds[kind] += 1
            if kind == "grade":
                self.grades.append((time.time(), answer or ""))

    def live(self, answer: str) -> dict[str, Any]:
        record: dict[str, Any] = {"received": time.time(), "first_token": None, "answer": answer}
        with self.lock:
            self.lives.append(record)
        return record

    def enter(self) -> None:
        with self.lock:
            self.open += 1
            self.most_open = max(self.most_open, self.open)

    def leave(self) -> None:
        with self.lock:
            self.open -= 1

    def grades_since(self, since: float) -> list[str]:
        """The answers of the grade requests received at or after ``since`` (time.time())."""
        with self.lock:
            return [answer for at, answer in self.grades if at >= since]

    def snapshot(self) -> dict[str, int]:
        with self.lock:
            return dict(self.kinds)


class BaseURL(str):
    """The server's base URL, with its pace and its counter."""

    pace: Pace
    counter: Counter


def _lang(messages: list[dict[str, Any]]) -> str:
    system = " ".join(str(m.get("content", "")) for m in messages if m.get("role") == "system")
    return "zh" if "Chinese" in system else "en"


def _user(messages: list[dict[str, Any]]) -> str:
    return "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")


def live_reply(messages: list[dict[str, Any]]) -> str:
    """``ASK <first listed follow-up>`` and a question, or ``NEXT``."""
    listed = FOLLOWUP.findall(_user(messages).partition("Follow-ups you may ask:")[2].partition("\n\n")[0])
    return f"ASK {listed[0]}\n{QUESTION[_lang(messages)]}" if listed else "NEXT"


def grade_reply(messages: list[dict[str, Any]], size: int) -> str:
    """A ModelGrade JSON for every criterion of the rubric sent, padded to about ``size`` tokens."""
    lang, user = _lang(messages), _user(messages)
    found = CRITERION.findall(user) or [("unknown", "3")]
    criteria = [{"id": cid, "score": max(0, int(scale) // 2), "evidence": [], "missing": [], "misconceptions": []} for cid, scale in found]
    grade: dict[str, Any] = {"criteria": criteria, "feedback": ""}
    pad = PAD[lang]
    while len(tokens(json.dumps(grade, ensure_ascii=False))) < size:  # fill the criteria's "missing", then the feedback
        spare = size - len(tokens(json.dumps(grade, ensure_ascii=False)))
        piece = pad if spare > len(tokens(pad)) else pad[: max(1, spare * (1 if lang == "zh" else 4))]
        short = min(criteria, key=lambda c: len(c["missing"]))
        if len(short["missing"]) < 2:
            short["missing"].append(piece.strip())
        else:
            grade["feedback"] += piece
    grade["feedback"] = grade["feedback"].strip() or pad.strip()
    return json.dumps(grade, ensure_ascii=False)


def answer_of(messages: list[dict[str, Any]]) -> str:
    match = ANSWER.search(_user(messages))
    return match.group(1) if match else ""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # the listen backlog: 50+ candidates connect at once
    allow_reuse_address = True

    def __init__(self, port: int, pace: Pace, counter: Counter):
        self.pace, self.counter, self.closing = pace, counter, threading.Event()
        super().__init__(("127.0.0.1", port), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:  # a client gone away (a killed app): not news
        pass


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.server.counter.count("models" if self.path.rstrip("/").endswith("/models") else "other")
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": MODEL, "object": "model", "created": 0, "owned_by": "bench"}]})
        else:
            self._json(404, {"error": {"message": "not found", "type": "bench"}})

    def do_POST(self) -> None:
        received = time.monotonic()
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self.server.counter.count("other")
            self._json(404, {"error": {"message": "not found", "type": "bench"}})
            return
        body = json.loads(raw or b"{}")
        messages = body.get("messages", [])
        stream = bool(body.get("stream"))
        self.server.counter.count("live" if stream else "grade", None if stream else answer_of(messages))
        record = self.server.counter.live(answer_of(messages)) if stream else None
        pace = self.server.pace
        self.server.counter.enter()
        try:
            if pace.hang:
                self.server.closing.wait(3600)  # never answer: hold the connection until the server closes
                return
            if stream:
                self._stream(body, tokens(live_reply(messages)), received, pace, record)
            else:
                content = grade_reply(messages, pace.grade_tokens)
                delay = pace.fixed_delay_s
                if delay is None:
                    delay = pace.first_token_s + len(tokens(content)) / pace.tokens_per_s
                self.server.counter.grade_delay_s = delay
                self._sleep_until(received + delay)
                self._json(200, self._completion(body, content))
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            self.server.counter.leave()

    # -- replies ---------------------------------------------------------------------------------
    def _sleep_until(self, when: float) -> None:
        wait = when - time.monotonic()
        if wait > 0:
            self.server.closing.wait(wait)

    def _completion(self, body: dict[str, Any], content: str) -> dict[str, Any]:
        return {
            "id": "chatcmpl-paced",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", MODEL),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content, "refusal": None}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1500, "completion_tokens": len(tokens(content)), "total_tokens": 1500 + len(tokens(content))},
        }

    def _stream(self, body: dict[str, Any], pieces: list[str], received: float, pace: Pace, record: dict[str, Any] | None) -> None:
        """Headers at once (as vLLM and OpenAI send them), then one token a chunk at the pace."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        self.wfile.flush()

        def event(delta: dict[str, Any], finish: str | None = None, usage: dict[str, int] | None = None) -> None:
            chunk: dict[str, Any] = {
                "id": "chatcmpl-paced",
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": body.get("model", MODEL),
                "choices": [] if usage else [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            if usage:
                chunk["usage"] = usage
            self.wfile.write(f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode())
            self.wfile.flush()

        fixed = pace.fixed_delay_s
        self._sleep_until(received + (fixed if fixed is not None else pace.first_token_s))
        event({"role": "assistant", "content": ""})
        for index, piece in enumerate(pieces):
            if fixed is None:
                self._sleep_until(received + pace.first_token_s + index / pace.tokens_per_s)
            event({"content": piece})
            if index == 0 and record is not None:
                record["first_token"] = time.time()
        event({}, finish="stop")
        if (body.get("stream_options") or {}).get("include_usage"):
            event({}, usage={"prompt_tokens": 900, "completion_tokens": len(pieces), "total_tokens": 900 + len(pieces)})
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        raw = json.dumps(payload, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)
        self.wfile.flush()


@contextmanager
def serve(port: int = 0, **options: Any) -> Iterator[BaseURL]:
    """The paced model on 127.0.0.1 (``port`` 0: a free one); options are :class:`Pace`'s fields."""
    pace, counter = Pace(**options), Counter()
    server = _Server(port, pace, counter)
    thread = threading.Thread(target=server.serve_forever, name="paced-model", daemon=True)
    thread.start()
    url = BaseURL(f"http://127.0.0.1:{server.server_address[1]}/v1")
    url.pace, url.counter = pace, counter
    try:
        yield url
    finally:
        server.closing.set()  # hung and sleeping replies end now
        server.shutdown()
        server.server_close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--first-token", type=float, default=0.6, help="seconds to the first token")
    parser.add_argument("--rate", type=float, default=50.0, help="tokens per second")
    parser.add_argument("--grade-tokens", type=int, default=900)
    parser.add_argument("--hang", action="store_true", help="never answer")
    parser.add_argument("--fixed-delay", type=float, default=None, help="answer every request whole after this many seconds")
    args = parser.parse_args()
    options = {"first_token_s": args.first_token, "tokens_per_s": args.rate, "grade_tokens": args.grade_tokens, "hang": args.hang}
    with serve(args.port, fixed_delay_s=args.fixed_delay, **options) as url:
        print(f"paced model at {url} (Ctrl-C to stop)", flush=True)
        try:
            while True:
                time.sleep(5)
        except KeyboardInterrupt:
            print(url.counter.snapshot())


if __name__ == "__main__":
    main()
