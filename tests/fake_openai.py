"""An OpenAI-compatible server on 127.0.0.1 for tests: real HTTP, so the request the project sends
is what gets checked. It records every request (path, headers, the parsed body and its raw bytes)."""

from __future__ import annotations

import base64
import json
import socket
import struct
import subprocess
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import default as default_policy
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DIM = 64


def fake_embedding(text: str) -> list[float]:
    """Deterministic bag-of-words vector: texts sharing words get similar vectors."""
    vector = [0.0] * DIM
    for word in text.lower().split():
        vector[zlib.crc32(word.encode()) % DIM] += 1.0
    norm = sum(v * v for v in vector) ** 0.5 or 1.0
    return [v / norm for v in vector]


@dataclass
class Recorded:
    requests: list[dict[str, Any]] = field(default_factory=list)
    # scripted chat replies, used in order; each: {"status": int, "headers": {...}, "content": str,
    # "tool_arguments": str, "refusal": str, "delay": seconds, "error": message}
    script: list[dict[str, Any]] = field(default_factory=list)
    # replies for streamed requests (the live interviewer), used in order before ``script``: the live
    # turn and the background grade run at once, so each kind of request keeps its own queue
    streams: list[dict[str, Any]] = field(default_factory=list)
    # scripted /audio/transcriptions replies, in order: {"text": str} or {"status": int, "error": str}, "delay"
    transcripts: list[dict[str, Any]] = field(default_factory=list)
    # scripted /audio/speech failures, in order ({"status": int, "error": str} or {"delay": s}); else espeak-ng speaks
    speeches: list[dict[str, Any]] = field(default_factory=list)
    models_status: int = 200  # what GET /models answers: 200 lists "test-model", anything else is an error

    def speech_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"].endswith("/audio/speech")]

    def transcription_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"].endswith("/audio/transcriptions")]

    def chat_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"].endswith("/chat/completions")]


@contextmanager
def serve() -> Iterator[tuple[str, Recorded]]:
    recorded = Recorded()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # keep test output clean
            pass

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.path.endswith("/audio/transcriptions"):
                self._transcription(raw)
                return
            body = json.loads(raw or b"{}")
            recorded.requests.append({"path": self.path, "headers": dict(self.headers), "body": body, "raw": raw, "at": time.monotonic()})
            if self.path.endswith("/audio/speech"):
                self._speech(body)
                return
            if self.path.endswith("/chat/completions"):
                self._chat(body)
                return
            if not self.path.endswith("/embeddings"):
                self._send(404, {"error": {"message": "not found"}})
                return
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            data = []
            for index, text in enumerate(inputs):
                vector = fake_embedding(str(text))
                if body.get("encoding_format") == "base64":
                    encoded: Any = base64.b64encode(struct.pack(f"<{DIM}f", *vector)).decode()
                else:
                    encoded = vector
                data.append({"object": "embedding", "index": index, "embedding": encoded})
            self._send(200, {"object": "list", "data": data, "model": body["model"], "usage": {"prompt_tokens": 1, "total_tokens": 1}})

        def do_GET(self) -> None:
            recorded.requests.append({"path": self.path, "headers": dict(self.headers), "body": None, "raw": b""})
            if self.path.endswith("/models") and recorded.models_status != 200:
                self._send(recorded.models_status, {"error": {"message": "scripted failure", "type": "test"}})
            elif self.path.endswith("/models"):
                self._send(200, {"object": "list", "data": [{"id": "test-model", "object": "model", "owned_by": "test"}]})
            else:
                self._send(404, {"error": {"message": "not found"}})

        def _transcription(self, raw: bytes) -> None:
            """multipart/form-data: the fields (model, language, prompt …) and the audio file's bytes."""
            head = f"Content-Type: {self.headers['Content-Type']}\r\n\r\n".encode()
            form: dict[str, Any] = {}
            for part in BytesParser(policy=default_policy).parsebytes(head + raw).iter_parts():
                name = part.get_param("name", header="content-disposition")
                payload = part.get_payload(decode=True)
                if part.get_filename():
                    form[str(name)] = {"filename": part.get_filename(), "bytes": payload}
                else:
                    form[str(name)] = payload.decode() if isinstance(payload, bytes) else str(payload)
            received = time.time()
            entry = {"path": self.path, "headers": dict(self.headers), "body": form, "raw": raw, "received": received}
            recorded.requests.append(entry)
            step = recorded.transcripts.pop(0) if recorded.transcripts else {"text": f"heard {len(form['file']['bytes'])} bytes"}
            if step.get("delay"):
                time.sleep(step["delay"])
            status = step.get("status", 200)
            if status != 200:
                self._send(status, {"error": {"message": step.get("error", "scripted failure"), "type": "test"}})
                return
            self._send(200, {"text": step["text"]})
            entry["endpoint_s"] = time.time() - received  # the endpoint's own time, for the product's overhead

        def _speech(self, body: dict[str, Any]) -> None:
            """The words said by espeak-ng (real speech, as WAV), or a scripted failure."""
            step = recorded.speeches.pop(0) if recorded.speeches else {}
            if step.get("delay"):
                time.sleep(step["delay"])
            if step.get("status", 200) != 200:
                self._send(step["status"], {"error": {"message": step.get("error", "scripted failure"), "type": "test"}})
                return
            voice = "cmn" if any("\u4e00" <= ch <= "\u9fff" for ch in body["input"]) else "en"
            audio = subprocess.run(["espeak-ng", "-v", voice, "--stdout", body["input"]], check=True, capture_output=True).stdout
            self.send_response(200)
            self.send_header("Content-Type", "audio/wav")
            self.send_header("Content-Length", str(len(audio)))
            self.end_headers()
            self.wfile.write(audio)

        def _chat(self, body: dict[str, Any]) -> None:
            if body.get("stream") and recorded.streams:
                step = recorded.streams.pop(0)
            else:
                step = recorded.script.pop(0) if recorded.script else {"content": "{}"}
            if step.get("delay"):
                time.sleep(step["delay"])
            status = step.get("status", 200)
            if status == 200 and body.get("stream"):
                self._stream(body, step.get("stream", ["ok"]), cut=bool(step.get("cut")), gap=float(step.get("gap", 0.0)))
                return
            if status != 200:
                self._send(status, {"error": {"message": step.get("error", "scripted failure"), "type": "test"}}, step.get("headers"))
                return
            message: dict[str, Any] = {"role": "assistant", "content": step.get("content")}
            if "tool_arguments" in step:
                name = body["tools"][0]["function"]["name"]
                message = {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": name, "arguments": step["tool_arguments"]}}],
                }
            if "refusal" in step:
                message = {"role": "assistant", "content": None, "refusal": step["refusal"]}
            self._send(
                200,
                {
                    "id": "chatcmpl-test",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body.get("model", "test-model"),
                    "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if "tool_arguments" in step else "stop"}],
                    "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150},
                },
            )

        def _stream(self, body: dict[str, Any], pieces: list[str], cut: bool, gap: float = 0.0) -> None:
            """Server-sent events as OpenAI streams them; ``cut`` drops the connection mid-answer,
            ``gap`` waits that many seconds between pieces (a model that is still writing)."""
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()

            def event(delta: dict[str, Any], finish: str | None = None) -> None:
                chunk = {
                    "id": "chatcmpl-test",
                    "object": "chat.completion.chunk",
                    "created": 0,
                    "model": body.get("model", "test-model"),
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                }
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()

            event({"role": "assistant", "content": ""})
            for number, piece in enumerate(pieces):
                if number and gap:
                    time.sleep(gap)
                event({"content": piece})
            if cut:
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            event({}, finish="stop")
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()

        def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            raw = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(raw)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", recorded
    finally:
        server.shutdown()
        server.server_close()
