"""Live turns against a model that answers at a real model's pace (benchmarks/paced_server.py).

    python benchmarks/bench_live.py browser --candidates 1
    python benchmarks/bench_live.py browser --candidates 20
    python benchmarks/bench_live.py clients --candidates 50 --model-delay 2
    python benchmarks/bench_live.py hung --candidates 10
    python benchmarks/bench_live.py kill --candidates 20
    python benchmarks/bench_live.py all

Every sub-command starts the paced model in this process and the real app in a subprocess (the web
app of ``interviewer.faces.web.create``, on a free port, with a temporary INTERVIEWER_HOME), the
model configured by environment (OPENAI_BASE_URL, INTERVIEWER_MODEL,
INTERVIEWER_LLM__STRUCTURED_OUTPUT=json_schema). Each app first plays one warm-up turn (the first
turn after a start, printed as "cold"); the figures are of the turns after it. Percentiles are
nearest-rank.

browser: N candidates in one headless Chromium (one context each: separate sessions), plan
  "question" q02 in English. A practice round, then an interview round: on every page the Submit
  button is clicked by a timer set to the same instant, and a MutationObserver in the page stamps
  the moment the last interviewer message first shows new words (the follow-up as it streams, or
  the next prompt), and in practice mode the moment the feedback card ("### Score") appears. The
  first-word figure is the interview round's (target p95 <= 1.5 s); the card's target is the
  model's grade time + 1 s. The paced model's own clock splits the first word into the time until
  the app asked the model and the time from the model's first token to the page.
clients: N candidates speaking HTTP as the page does (``Wire``: one asyncio loop, no gradio_client
  threads), the model answering every request whole in a fixed S seconds: all at once, /submit (one
  POST) then /follow (joined on the queue, read on its event stream); from the /submit call to the
  first /follow output whose last interviewer message is new words (target p95 <= 5 s, none refused).
hung: a model that never answers. The answer must be in the store (sessions.db, read directly)
  within 100 ms of the /submit call; the interviewer's next words (the scripted follow-up) must come
  within the live budget (interview.live_budget_s, 4 s by default).
kill: N candidates submit; once every answer is in the store the app is killed (SIGKILL) while its
  grades are in flight (~18.6 s each at the default pace); then restarted on the same home. No answer
  may be lost, and every answer must be graded exactly once after the restart (grade requests per
  answer received by the paced model, status 'graded' with a grade).

Diagnostics: ``clients --paced`` (the model at the default pace), ``hung --client-submit`` (/submit
through gradio_client, which sends every event through the queue, instead of one POST as the page
sends it); each measured window also prints the CPU used by the machine, the app, Chromium and this
process, and the browser rounds the CPU of their pages doing nothing for 3 s before the clicks.
``BENCH_SWITCH_S=<s>`` sets the app's interpreter switch interval (an experiment: 1 ms, tried once
against the default 5 ms, was within the spread between runs). ``BENCH_PROFILE=<file>`` samples the app's busy threads every 5 ms
during the measured window and writes the functions seen most when the app stops;
``BENCH_DEBUG=1`` prints what each page showed, and when, and keeps screenshots in /tmp.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import re
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter as Tally
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paced_server import BaseURL, serve

from interviewer.faces.page_text import WORDS

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
# a candidate's page is in the foreground: no background-tab timer throttling in 20 headless windows
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
        "--disable-backgrounding-occluded-windows", "--disable-background-networking", "--no-first-run"]  # fmt: skip
QUESTION = "q02"
ANSWER = "ZeRO-1 shards the optimizer states and ZeRO-2 the gradients as well; ZeRO-3 also shards the parameters."
TAG = re.compile(r"\(candidate (\d+)-(\w+)\)")
FALLBACK_EN = "did not give its follow-up in time"
LAUNCH = """
import os, sys
if os.environ.get("BENCH_PROFILE"):
    sys.path.insert(0, os.environ["BENCH_DIR"])
    import bench_live
    bench_live.start_sampler(os.environ["BENCH_PROFILE"])
if os.environ.get("BENCH_SWITCH_S"):
    sys.setswitchinterval(float(os.environ["BENCH_SWITCH_S"]))
import app
app.main()
"""  # the app as ``python app.py`` starts it (its warm-up included), on GRADIO_SERVER_PORT
# where a thread waits, not works: a sample ending in one of these is idle
IDLE = (
    "wait",
    "select",
    "poll",
    "recv",
    "recv_into",
    "accept",
    "sleep",
    "_worker",
    "get",
    "readinto",
    "read",
    "acquire",
    "epoll",
    "block_thread",
    "_timed",
    "pump",
    "worker",
    "run",
)  # fmt: skip (asyncio's run: uvloop waiting, in C)


def start_sampler(path: str, every_s: float = 0.005) -> None:
    """A diagnostic (BENCH_PROFILE=<file> in the app's environment): every few ms, the stack of each
    thread of the app that is not waiting; on SIGTERM, the functions seen most, as self and as total."""
    import collections
    import signal as signals

    own: collections.Counter[str] = collections.Counter()
    total: collections.Counter[str] = collections.Counter()
    stacks: collections.Counter[str] = collections.Counter()
    samples = [0]

    def where(frame: Any) -> str:
        code = frame.f_code
        return f"{code.co_filename.split('site-packages/')[-1].split('/work/main/')[-1]}:{code.co_name}"

    def sample() -> None:
        me = threading.get_ident()
        while True:
            time.sleep(every_s)
            for ident, frame in sys._current_frames().items():
                try:
                    if ident == me or frame.f_code.co_name in IDLE:
                        continue
                    chain = []
                    while frame is not None:
                        chain.append(where(frame))
                        frame = frame.f_back
                except Exception:  # a frame changing under us
                    continue
                if any("importlib" in c for c in chain):
                    continue
                samples[0] += 1
                own[chain[0]] += 1
                total.update(set(chain))
                stacks[" < ".join(chain[:7])] += 1

    def dump(*_: Any) -> None:
        with open(path, "w") as out:
            out.write(f"{samples[0]} busy samples every {every_s * 1000:.0f} ms\n\nself:\n")
            out.writelines(f"{n:7d} {name}\n" for name, n in own.most_common(40))
            out.write("\ntotal (in the stack):\n")
            out.writelines(f"{n:7d} {name}\n" for name, n in total.most_common(100))
            out.write("\nstacks (leaf first):\n")
            out.writelines(f"{n:7d} {name}\n" for name, n in stacks.most_common(40))
        os._exit(0)

    def reset(*_: Any) -> None:  # the measured window begins
        own.clear(), total.clear(), stacks.clear()
        samples[0] = 0

    signals.signal(signals.SIGTERM, dump)
    signals.signal(signals.SIGUSR1, reset)
    threading.Thread(target=sample, daemon=True, name="bench-sampler").start()


# -- figures -----------------------------------------------------------------------------------------
def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1))]


def figures(name: str, values: list[float], target: str = "", unit: str = "s") -> str:
    if not values:
        line = f"  {name}: no values"
    else:
        scale, fmt = (1000.0, "{:.0f}") if unit == "ms" else (1.0, "{:.2f}")
        p50, p95, top = (fmt.format(v * scale) for v in (statistics.median(values), pct(values, 0.95), max(values)))
        line = f"  {name}: p50 {p50} {unit}, p95 {p95} {unit}, max {top} {unit}, n={len(values)}"
    print(line + (f"   (target {target})" if target else ""), flush=True)
    return line


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


# -- the app ---------------------------------------------------------------------------------------------
def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class App:
    """The web app in a subprocess of its own, on a free port, its output in ``home/app-N.log``."""

    starts = 0

    def __init__(self, home: Path, model_url: str, env: dict[str, str] | None = None):
        self.home, self.model_url, self.env = home, model_url, env or {}
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.started_s = 0.0
        self.logs: list[Path] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self) -> App:
        env = {
            **os.environ,
            "INTERVIEWER_HOME": str(self.home),
            "OPENAI_BASE_URL": self.model_url,
            "OPENAI_API_KEY": "sk-bench",
            "INTERVIEWER_MODEL": "paced-model",
            "INTERVIEWER_LLM__STRUCTURED_OUTPUT": "json_schema",
            "GRADIO_ANALYTICS_ENABLED": "False",
            "PYTHONUNBUFFERED": "1",
            "BENCH_DIR": str(Path(__file__).resolve().parent),
            **self.env,
        }
        App.starts += 1
        self.port = free_port()
        env["GRADIO_SERVER_PORT"] = str(self.port)
        self.log = self.home / f"app-{App.starts}.log"
        self.logs.append(self.log)
        begun = time.perf_counter()
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen([sys.executable, "-c", LAUNCH], env=env, cwd=ROOT, stdout=out, stderr=out)
        while time.perf_counter() - begun < 120:
            if self.process.poll() is not None:
                raise RuntimeError(f"the app exited ({self.process.returncode}); see {self.log}:\n{self.log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(self.url, timeout=2) as response:
                    if response.status == 200:
                        self.started_s = time.perf_counter() - begun
                        return self
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("the app did not serve within 120 s")

    def kill(self) -> None:
        """SIGKILL, as a crash or the OOM killer would."""
        if self.process is not None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)
            self.process = None

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)
            self.process = None

    def errors(self) -> list[str]:
        """Each traceback in the app's output, as its last frame and its exception line."""
        lines = [line for log in self.logs if log.exists() for line in log.read_text(errors="replace").splitlines()]
        found, frame = [], ""
        inside = False
        for line in lines:
            if line.startswith("Traceback"):
                inside, frame = True, ""
            elif inside and line.startswith("  File"):
                frame = line.strip()
            elif inside and line and not line.startswith(" "):
                found.append(f"{line.strip()[:200]}  [{frame[:160]}]")
                inside = False
        return found


@contextlib.contextmanager
def bench_setup(**pace: Any) -> Iterator[tuple[BaseURL, App, Path]]:
    """The paced model, a temporary home and the app on them; everything cleaned up after."""
    with tempfile.TemporaryDirectory(prefix="bench-live-") as tmp, serve(**pace) as model:
        home = Path(tmp) / "home"
        home.mkdir()
        app = App(home, model)
        try:
            app.start()
            print(f"  app up in {app.started_s:.1f} s (port {app.port}); model at {model}", flush=True)
            yield model, app, home
        finally:
            app.stop()
            errors = Tally(app.errors())
            if errors:
                kept = Path(tempfile.gettempdir()) / f"bench-live-{app.log.name}"
                kept.write_bytes(b"".join(log.read_bytes() for log in app.logs if log.exists()))
                print(f"  app log: {sum(errors.values())} traceback(s), kept in {kept}:")
                for line, count in errors.most_common(5):
                    print(f"    {count} x {line}")


# -- the store, read directly --------------------------------------------------------------------------
def store_turns(home: Path) -> list[dict[str, Any]]:
    path = home / "sessions.db"
    if not path.exists():
        return []
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    db.row_factory = sqlite3.Row
    try:
        rows = db.execute(
            "SELECT id, session_id, kind, answer, status, grade IS NOT NULL AS graded, grader, decision IS NOT NULL AS decided,"
            " answered_at, graded_at FROM turns WHERE kind = 'answer'"
        ).fetchall()
    except sqlite3.OperationalError:  # the schema is being created
        return []
    finally:
        db.close()
    return [dict(r) for r in rows]


def tagged(turns: list[dict[str, Any]], run: str) -> dict[int, dict[str, Any]]:
    """This run's answers, by candidate number."""
    found: dict[int, dict[str, Any]] = {}
    for turn in turns:
        match = TAG.search(turn["answer"] or "")
        if match and match.group(2) == run:
            found[int(match.group(1))] = turn
    return found


# -- a candidate over HTTP -------------------------------------------------------------------------------
def message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


def last_interviewer(chat: list[dict[str, Any]] | None) -> str:
    for message in reversed(chat or []):
        if message.get("role") == "assistant":
            return message_text(message).strip()
    return ""


def new_words(text: str, before: str) -> bool:
    """The interviewer's new words: neither the prompt answered nor the thinking mark."""
    return bool(text) and text != before and text not in {"…", "……"}


class Candidate:
    """One candidate with gradio_client: a client of its own (its own Gradio session and state)."""

    def __init__(self, url: str, number: int, run: str):
        from gradio_client import Client

        self.number, self.run, self.url = number, run, url
        self.client = Client(url, verbose=False)
        self.session = ""
        self.asked = ""

    @property
    def answer(self) -> str:
        return f"{ANSWER} (candidate {self.number:02d}-{self.run})"

    def start(self, mode: str = "interview") -> None:
        out = self.client.predict("question", QUESTION, "zero", mode, "en", "", api_name="/start")  # "": no interview to leave
        self.session, self.asked = out[0], last_interviewer(out[1])
        if not self.session or "[q02]" not in self.asked:
            raise RuntimeError(f"the session did not start: {self.asked[:80]!r}")

    def submit(self, direct: bool = False) -> None:
        """/submit: by gradio_client (which sends every event through the queue), or ``direct`` as the
        page sends this queue=False event, one POST to /gradio_api/run/submit (the tab's position
        state is left to the session's own)."""
        if not direct:
            self.client.predict(self.session, self.answer, "", api_name="/submit")
            return
        body = json.dumps({"data": [self.session, self.answer, "", None], "session_hash": self.client.session_hash}).encode()
        request = urllib.request.Request(self.url + "gradio_api/run/submit", data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            reply = json.loads(response.read())
        if "data" not in reply:
            raise RuntimeError(f"/submit failed: {str(reply)[:200]}")

    def follow(self, began: float, timeout_s: float = 60.0) -> tuple[float | None, str, Any]:
        """Start /follow; (seconds from ``began`` to the first new interviewer words, those words, the job)."""
        job = self.client.submit(self.session, api_name="/follow")
        deadline = time.monotonic() + timeout_s
        seen = 0
        while time.monotonic() < deadline:
            outputs = job.outputs()
            for out in outputs[seen:]:
                text = last_interviewer(out[1])
                if new_words(text, self.asked):
                    return time.perf_counter() - began, text, job
            seen = len(outputs)
            if job.done() and len(job.outputs()) == seen:
                break
            time.sleep(0.01)  # 50 candidates polling: the harness must not eat the cores it measures
        return None, "", job


def make_candidates(url: str, count: int, run: str, mode: str = "interview", parallel: int = 8) -> list[Candidate]:
    """``count`` candidates, each with a session started (``parallel`` at a time)."""
    from concurrent.futures import ThreadPoolExecutor

    def one(number: int) -> Candidate:
        candidate = Candidate(url, number, run)
        candidate.start(mode)
        return candidate

    with ThreadPoolExecutor(parallel) as pool:
        return list(pool.map(one, range(count)))


def warm_up(app: App, model: BaseURL) -> float | None:
    """One turn on a fresh app (the first live call builds the model client, the first reading loads
    jieba and compiles rubrics): the seconds from /submit to the first words, "cold"."""
    candidate = Candidate(app.url, 99, "warmup")
    candidate.start()
    began = time.perf_counter()
    candidate.submit()
    first, text, job = candidate.follow(began)
    with contextlib.suppress(Exception):
        job.result(timeout=30)
    what = "the scripted fallback" if FALLBACK_EN in text else "the model's follow-up" if text.startswith("**↪**") else repr(text[:40])
    print(f"  cold first turn (the first after the app starts): first words after {first or float('nan'):.2f} s ({what})", flush=True)
    return first


def wait_until(check: Callable[[], bool], timeout_s: float, every: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(every)
    return check()


def all_at_once(count: int, work: Callable[[int, threading.Barrier], None], timeout_s: float) -> None:
    barrier = threading.Barrier(count)
    threads = [threading.Thread(target=work, args=(i, barrier), daemon=True) for i in range(count)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout_s
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))


# -- browser ---------------------------------------------------------------------------------------------
ARM = """([target, wantCard]) => {
  const lastBot = () => { const b = document.querySelectorAll('.message.bot'); return b.length ? b[b.length - 1].innerText.trim() : ''; };
  const hasCard = () => Array.from(document.querySelectorAll('h3')).some(h => /(Score|得分)\\s*[0-9.]+\\/10/.test(h.innerText));
  const now = () => performance.timeOrigin + performance.now();
  // not words: the thinking mark, and Gradio's placeholder while it re-renders a message
  const placeholder = (t) => t === '…' || t === '……' || t.startsWith('Loading content');
  const baseline = lastBot();
  const r = window.__bench = {clicked: null, first: null, firstText: null, card: null, thinking: null, toast: null,
                              visibility: document.visibilityState};
  r.log = [];
  const check = () => {
    if (r.clicked === null) return;
    const seen = lastBot();
    const shown = seen.slice(0, 60);  // what the last message showed, and when (ms after the click): kept for the report
    if (r.log.length < 30 && (!r.log.length || r.log[r.log.length - 1][1] !== shown)) r.log.push([Math.round(now() - r.clicked), shown]);
    if (r.thinking === null && seen === '…') r.thinking = now();
    if (r.toast === null) { const toast = document.querySelector('.toast-body'); if (toast) r.toast = toast.innerText.slice(0, 200); }
    if (r.first === null) {
      const t = lastBot();
      if (t && t !== baseline && !placeholder(t)) { r.first = now(); r.firstText = t.slice(0, 100); }
    }
    if (wantCard && r.card === null && hasCard()) r.card = now();
    if (r.first !== null && (!wantCard || r.card !== null)) observer.disconnect();
  };
  const observer = new MutationObserver(check);
  observer.observe(document.body, {subtree: true, childList: true, characterData: true});
  const button = Array.from(document.querySelectorAll('button')).find(b => b.innerText.trim() === 'Submit');
  if (!button || button.disabled) return 'no Submit button to click';
  setTimeout(() => { r.clicked = now(); button.click(); }, Math.max(0, target - Date.now()));
  return 'armed';
}"""


async def start_session(page: Any, url: str, mode: str, first: bool) -> None:
    if first:
        await page.goto(url)
        await page.get_by_label("English", exact=True).check()  # the page's labels then are WORDS["en"]
        await page.get_by_label(WORDS["en"]["question"], exact=True).check()
        await page.get_by_label(WORDS["en"]["question_pick"]).click()
        await page.get_by_role("option", name=QUESTION, exact=False).first.click()
    mode_choice = page.get_by_label(WORDS["en"][mode], exact=True)
    if not await mode_choice.is_visible():  # the sidebar closes once an interview runs
        await page.get_by_role("button", name="Toggle Sidebar").click()
    await mode_choice.check()
    await page.get_by_role("button", name=WORDS["en"]["start"]).click()
    await page.wait_for_function(
        """(mode) => document.body.innerText.includes('· ' + mode) && document.querySelectorAll('.message.bot').length === 1
             && document.querySelectorAll('.message.user').length === 0 && document.body.innerText.includes('[q02]')""",
        arg=mode,
        timeout=120_000,
    )


class CPU:
    """Core-seconds used between two readings: the machine, the app, Chromium, this process."""

    def __init__(self, app: App):
        self.app = app
        self.before = self.read()
        if os.environ.get("BENCH_PROFILE") and app.process is not None:
            os.kill(app.process.pid, signal.SIGUSR1)  # the app's sampler starts counting here

    def read(self) -> dict[str, float]:
        tick = os.sysconf("SC_CLK_TCK")
        fields = [float(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
        busy = sum(fields) - fields[3] - fields[4]  # less idle and iowait
        out = {"machine": busy / tick, "app": 0.0, "chromium": 0.0, "bench": 0.0, "wall": time.monotonic()}
        app_pid = self.app.process.pid if self.app.process else -1
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                stat = (proc / "stat").read_text()
                command = (proc / "cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
            except OSError:
                continue
            parts = stat.rsplit(")", 1)[1].split()
            used = (float(parts[11]) + float(parts[12])) / tick  # utime, stime
            if int(proc.name) == app_pid:
                out["app"] += used
            elif int(proc.name) == os.getpid():
                out["bench"] += used
            elif "chrom" in command:
                out["chromium"] += used
        return out

    def line(self) -> str:
        after = self.read()
        wall = after["wall"] - self.before["wall"]
        used = {k: after[k] - self.before[k] for k in ("machine", "app", "chromium", "bench")}
        cores = os.cpu_count() or 1
        return (
            f"CPU over {wall:.0f} s: machine {100 * used['machine'] / (wall * cores):.0f}% of {cores} cores; "
            f"app {used['app']:.1f} core-s, Chromium {used['chromium']:.1f} core-s, this process {used['bench']:.1f} core-s"
        )


async def browser_round(pages: list[Any], app: App, home: Path, mode: str, run: str, first: bool, model: BaseURL) -> list[dict[str, Any]]:
    gate = asyncio.Semaphore(2)  # 2 cores: more page loads at once only thrash

    async def ready(index: int, page: Any) -> None:
        async with gate:
            await start_session(page, app.url, mode, first)
            await page.get_by_label("Your answer").fill(f"{ANSWER} (candidate {index:02d}-{run})")

    began = time.perf_counter()
    await asyncio.gather(*(ready(i, p) for i, p in enumerate(pages)))
    print(f"  {len(pages)} page(s) ready in {mode} mode in {time.perf_counter() - began:.1f} s", flush=True)
    wait_until(lambda: all(t["status"] != "pending" for t in store_turns(home)), 40)  # earlier grades are in: idle workers
    idle = CPU(app)
    await asyncio.sleep(3)
    print(f"  the {len(pages)} page(s) doing nothing, for reference: {idle.line()}", flush=True)
    cpu = CPU(app)
    target = time.time() * 1000 + 1500 + 50 * len(pages)
    want_card = mode == "practice"
    armed = await asyncio.gather(*(p.evaluate(ARM, [target, want_card]) for p in pages))
    if any(a != "armed" for a in armed):
        raise RuntimeError(f"could not arm every page: {armed}")
    deadline = time.monotonic() + (150 if want_card else 60)
    results: list[dict[str, Any]] = []
    done, changed = -1, time.monotonic()
    while time.monotonic() < deadline:
        await asyncio.sleep(0.25)
        results = await asyncio.gather(*(p.evaluate("() => window.__bench") for p in pages))
        now_done = sum((r["first"] is not None) + (r["card"] is not None) for r in results)
        if now_done != done:
            done, changed = now_done, time.monotonic()
        if all(r["first"] is not None and (not want_card or r["card"] is not None) for r in results):
            break
        if time.monotonic() - changed > 30:  # nothing new on any page for 30 s: the rest are not coming
            break
    print(f"  {cpu.line()}")
    lives: dict[int, dict[str, Any]] = {}
    for record in list(model.counter.lives):
        if (match := TAG.search(record["answer"] or "")) and match.group(2) == run:
            lives[int(match.group(1))] = record
    stored = tagged(store_turns(home), run)
    for index, r in enumerate(results):
        r["live"] = lives.get(index)
        r["committed"] = stored[index]["answered_at"] * 1000 if index in stored else None
    if os.environ.get("BENCH_DEBUG"):
        for r in results:
            print("   ", json.dumps({k: v for k, v in r.items() if k != "live"}, ensure_ascii=False)[:1500])
        await pages[0].screenshot(path=f"/tmp/bench-{mode}.png", full_page=True)
    return results


def report_browser_round(results: list[dict[str, Any]], mode: str, grade_s: float | None) -> dict[str, bool]:
    n = len(results)
    clicked = [r for r in results if r["clicked"] is not None]
    first = [(r["first"] - r["clicked"]) / 1000 for r in clicked if r["first"] is not None]
    clicks = [r["clicked"] for r in clicked]
    print(f"  {mode} round, {n} page(s); the clicks fired within {max(clicks) - min(clicks):.0f} ms of each other; "
          f"visibility {sorted({r['visibility'] for r in results})}")  # fmt: skip
    outcome = {}
    figures(f"{mode}: Submit click -> first interviewer word on the page", first, "p95 <= 1.50 s" if mode == "interview" else "")
    if mode == "interview":
        outcome["first word p95 <= 1.5 s"] = len(first) == n and pct(first, 0.95) <= 1.5
    commit = [(r["committed"] - r["clicked"]) / 1000 for r in clicked if r["committed"]]
    thinking = [(r["thinking"] - r["clicked"]) / 1000 for r in clicked if r["thinking"]]
    asked = [(r["live"]["received"] * 1000 - r["clicked"]) / 1000 for r in clicked if r["live"]]
    shown = [
        (r["first"] - r["live"]["first_token"] * 1000) / 1000 for r in clicked if r["live"] and r["live"]["first_token"] and r["first"]
    ]
    figures(f"{mode}:   click -> answer committed (store's answered_at)", commit)
    figures(f"{mode}:   click -> the thinking mark shown", thinking)
    figures(f"{mode}:   click -> the app asks the model", asked)
    figures(f"{mode}:   the model's first token -> the word on the page", shown)
    fallbacks = sum(1 for r in results if r["firstText"] and FALLBACK_EN in r["firstText"])
    kinds = Tally("follow-up" if (r["firstText"] or "").startswith("↪") else "other" for r in results if r["firstText"])
    print(f"  {mode}: first words were {dict(kinds)}; scripted fallbacks {fallbacks}; pages with no new words {n - len(first)}")
    for index, r in enumerate(results):
        if r["first"] is None:
            print(f"    page {index}: no new words; committed {r['committed'] is not None}; model asked {r['live'] is not None}; "
                  f"toast {r['toast']!r}; what it showed: {r['log'][-3:]}")  # fmt: skip
    if mode == "practice":
        cards = [(r["card"] - r["clicked"]) / 1000 for r in clicked if r["card"] is not None]
        target = grade_s + 1 if grade_s else None
        figures("practice: Submit click -> feedback card on the page", cards, f"<= model grade {grade_s:.1f} s + 1 s" if grade_s else "")
        print(f"  practice: pages with no card {n - len(cards)}")
        outcome["card p95 <= grade + 1 s"] = bool(target) and len(cards) == n and pct(cards, 0.95) <= (target or 0)
    return outcome


async def run_browser(app: App, count: int, model: BaseURL, home: Path) -> dict[str, bool]:
    from playwright.async_api import async_playwright

    outcome: dict[str, bool] = {}
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            contexts = [await browser.new_context(viewport={"width": 1200, "height": 900}) for _ in range(count)]
            pages = [await c.new_page() for c in contexts]
            for p in pages:
                p.set_default_timeout(120_000)
            practice = await browser_round(pages, app, home, "practice", "p" + str(int(time.time())), True, model)
            outcome.update(report_browser_round(practice, "practice", model.counter.grade_delay_s))
            # the practice grades are all in when every card is: the interview round starts on idle workers
            interview = await browser_round(pages, app, home, "interview", "i" + str(int(time.time())), False, model)
            outcome.update(report_browser_round(interview, "interview", model.counter.grade_delay_s))
        finally:
            await browser.close()
    return outcome


def cmd_browser(args: argparse.Namespace) -> dict[str, bool]:
    print(f"\n== browser: {args.candidates} candidate(s) in headless Chromium, paced model "
          f"(first token {args.first_token} s, {args.rate:.0f} tokens/s)", flush=True)  # fmt: skip
    with bench_setup(first_token_s=args.first_token, tokens_per_s=args.rate) as (model, app, home):
        warm_up(app, model)
        outcome = asyncio.run(run_browser(app, args.candidates, model, home))
        print(f"  model requests: {model.counter.snapshot()}, most at once {model.counter.most_open}")
    return outcome


# -- clients ---------------------------------------------------------------------------------------------
class Wire:
    """One candidate speaking to the app as its page does, with none of gradio_client's threads: a
    session hash of its own, queued events joined over HTTP and followed on their event stream,
    /submit as one POST. Fifty of these run on one asyncio loop, so the harness spends a fraction of
    a core where fifty gradio_client clients (a reader thread each, polled every 10 ms) spent more
    of the two cores than the app they measured."""

    def __init__(self, http: Any, fns: dict[str, int], number: int, run: str):
        self.http, self.fns, self.number, self.run = http, fns, number, run
        self.hash = f"bench{run}{number:03d}"
        self.session = ""
        self.asked = ""

    @property
    def answer(self) -> str:
        return f"{ANSWER} (candidate {self.number:02d}-{self.run})"

    async def queued(self, api_name: str, data: list[Any]) -> Any:
        """Each output of a queued event as it arrives (the whole outputs, diffs applied)."""
        from gradio_client.utils import apply_diff

        body = {"data": data, "fn_index": self.fns[api_name], "session_hash": self.hash, "event_data": None, "trigger_id": None}
        joined = await self.http.post("gradio_api/queue/join", json=body)
        joined.raise_for_status()
        event = joined.json()["event_id"]
        outputs: list[Any] | None = None
        async with self.http.stream("GET", "gradio_api/queue/data", params={"session_hash": self.hash}) as stream:
            async for line in stream.aiter_lines():
                if not line.startswith("data:"):
                    continue
                message = json.loads(line[5:])
                if message.get("event_id") != event:
                    continue
                if message["msg"] == "process_generating":
                    data_out = message["output"]["data"]
                    if outputs is None:
                        outputs = list(data_out)
                    else:
                        outputs = [apply_diff(old, new) for old, new in zip(outputs, data_out, strict=True)]
                    yield outputs
                elif message["msg"] == "process_completed":
                    if not message.get("success", True) or "error" in message.get("output", {}):
                        raise RuntimeError(f"{api_name} failed: {str(message.get('output'))[:200]}")
                    yield message["output"]["data"]
                    return

    async def start(self, mode: str = "interview") -> None:
        out: Any = None
        async for latest in self.queued("start", ["question", QUESTION, "zero", mode, "en", "", None]):
            out = latest
        self.session, self.asked = out[0], last_interviewer(out[2])
        if not self.session or "[q02]" not in self.asked:
            raise RuntimeError(f"the session did not start: {self.asked[:80]!r}")

    async def submit(self) -> None:
        body = {"data": [self.session, self.answer, "", None], "session_hash": self.hash}
        reply = await self.http.post("gradio_api/run/submit", json=body)
        if reply.status_code != 200 or "data" not in reply.json():
            raise RuntimeError(f"/submit failed ({reply.status_code}): {reply.text[:200]}")

    async def follow(self, began: float) -> tuple[float | None, str]:
        """(seconds from ``began`` to the first new interviewer words, those words); the stream is
        read to its end, as the page does."""
        first: float | None = None
        text = ""
        async for out in self.queued("follow", [self.session, None]):
            now_text = last_interviewer(out[2])
            if first is None and new_words(now_text, self.asked):
                first, text = time.perf_counter() - began, now_text
        return first, text


def api_functions(url: str) -> dict[str, int]:
    with urllib.request.urlopen(url + "config", timeout=10) as response:
        config = json.loads(response.read())
    return {d["api_name"]: i for i, d in enumerate(config["dependencies"]) if d.get("api_name")}


def cmd_clients(args: argparse.Namespace) -> dict[str, bool]:
    n = args.candidates
    pace = "at the default pace (first token 0.6 s, 50 tokens/s)" if args.paced else f"answering every request in {args.model_delay} s"
    print(f"\n== clients: {n} candidates at once, speaking HTTP as the page does; the model {pace}", flush=True)
    with bench_setup() as (model, app, home):
        warm_up(app, model)
        if not args.paced:
            model.pace.fixed_delay_s = args.model_delay
        run = "c" + str(int(time.time()))
        return asyncio.run(clients_round(args, model, app, home, run))


async def clients_round(args: argparse.Namespace, model: BaseURL, app: App, home: Path, run: str) -> dict[str, bool]:
    import httpx

    n = args.candidates
    limits = httpx.Limits(max_connections=4 * n, max_keepalive_connections=2 * n)
    async with httpx.AsyncClient(base_url=app.url, timeout=httpx.Timeout(90.0), limits=limits) as http:
        fns = api_functions(app.url)
        candidates = [Wire(http, fns, i, run) for i in range(n)]
        began = time.perf_counter()
        try:
            for chunk in range(0, n, 10):
                await asyncio.gather(*(c.start() for c in candidates[chunk : chunk + 10]))
        except Exception as exc:
            print(f"  could not start {n} sessions: {exc!r}")
            return {"none refused": False}
        print(f"  {n} candidates with a session each in {time.perf_counter() - began:.1f} s", flush=True)
        starts: dict[int, float] = {}  # time.time() of each /submit call
        submits: dict[int, float] = {}
        firsts: dict[int, float] = {}
        texts: dict[int, str] = {}
        errors: list[str] = []

        async def one(index: int) -> None:
            candidate = candidates[index]
            starts[index] = time.time()
            t0 = time.perf_counter()
            try:
                await candidate.submit()
                submits[index] = time.perf_counter() - t0
                first, text = await candidate.follow(t0)
                if first is None:
                    errors.append(f"{index}: no new words")
                else:
                    firsts[index], texts[index] = first, text
            except Exception as exc:  # refused, an error event, a timeout
                errors.append(f"{index}: {type(exc).__name__}: {str(exc)[:120]}")

        cpu = CPU(app)
        await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(n))), timeout=150)
        cpu_line = cpu.line()
    committed = tagged(store_turns(home), run)
    lives = {int(m.group(1)): r for r in list(model.counter.lives) if (m := TAG.search(r["answer"] or "")) and m.group(2) == run}
    figures("/submit call returned (the answer committed)", list(submits.values()))
    figures("  /submit call -> the store's answered_at", [committed[i]["answered_at"] - starts[i] for i in committed if i in starts])
    figures("  /submit call -> the app asks the model", [lives[i]["received"] - starts[i] for i in lives if i in starts])
    figures("/submit call -> first new interviewer words from /follow", list(firsts.values()), "p95 <= 5 s")
    fallbacks = sum(1 for t in texts.values() if FALLBACK_EN in t)
    print(f"  answers in the store {len(committed)}/{n}; new words {len(firsts)}/{n}; scripted fallbacks {fallbacks}; "
          f"refused or errored {len(errors)}")  # fmt: skip
    for line in errors[:10]:
        print(f"    {line}")
    print(f"  {cpu_line}")
    print(f"  model requests: {model.counter.snapshot()}, most at once {model.counter.most_open}")
    ok = len(firsts) == n and pct(list(firsts.values()), 0.95) <= 5.0
    return {"p95 <= 5 s": ok, "none refused": not errors and len(committed) == n}


# -- hung ------------------------------------------------------------------------------------------------
def cmd_hung(args: argparse.Namespace) -> dict[str, bool]:
    n = args.candidates
    how = "gradio_client (through the queue)" if args.client_submit else "a direct POST, as the page sends it"
    print(f"\n== hung: {n} candidates at once, a model that never answers; /submit by {how}", flush=True)
    with bench_setup() as (model, app, home):
        warm_up(app, model)
        model.pace.hang = True
        run = "h" + str(int(time.time()))
        candidates = make_candidates(app.url, n, run)
        starts: dict[int, float] = {}  # time.time() of each /submit call
        submits: dict[int, float] = {}
        firsts: dict[int, float] = {}
        texts: dict[int, str] = {}
        seen: dict[int, float] = {}
        errors: list[str] = []
        polling = threading.Event()

        def poll() -> None:  # the store as another process sees it, every few milliseconds
            while not polling.is_set():
                now = time.time()
                for number in tagged(store_turns(home), run):
                    seen.setdefault(number, now)
                time.sleep(0.003)

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()

        def work(index: int, barrier: threading.Barrier) -> None:
            candidate = candidates[index]
            barrier.wait()
            starts[index] = time.time()
            t0 = time.perf_counter()
            try:
                candidate.submit(direct=not args.client_submit)
                submits[index] = time.perf_counter() - t0
                first, text, _ = candidate.follow(t0, timeout_s=40)
                if first is None:
                    errors.append(f"{index}: no new words")
                else:
                    firsts[index], texts[index] = first, text
            except Exception as exc:
                errors.append(f"{index}: {type(exc).__name__}: {str(exc)[:120]}")

        all_at_once(n, work, timeout_s=90)
        polling.set()
        poller.join(2)
        stored = tagged(store_turns(home), run)
        budget = 4.0
        in_store = [stored[i]["answered_at"] - starts[i] for i in stored if i in starts]
        observed = [seen[i] - starts[i] for i in seen if i in starts]
        figures("/submit call -> answer committed (the store's answered_at)", in_store, "<= 100 ms", unit="ms")
        figures("/submit call -> answer seen in sessions.db by another process", observed, "<= 100 ms", unit="ms")
        figures("/submit call round trip (returns after the commit)", list(submits.values()), unit="ms")
        figures(
            "/submit call -> the interviewer's next words (scripted)", list(firsts.values()), f"within the live budget of {budget:.0f} s"
        )
        lives = {int(m.group(1)): r for r in list(model.counter.lives) if (m := TAG.search(r["answer"] or "")) and m.group(2) == run}
        figures("  /submit call -> the app asks the (hung) model", [lives[i]["received"] - starts[i] for i in lives if i in starts])
        figures(
            "  the app asks the model -> the next words",
            [starts[i] + firsts[i] - lives[i]["received"] for i in lives if i in firsts],
            f"the budget, {budget:.0f} s",
        )
        fallbacks = sum(1 for t in texts.values() if FALLBACK_EN in t)
        print(f"  answers in the store {len(stored)}/{n}; next words {len(firsts)}/{n}, of which with the fallback notice {fallbacks}; "
              f"errors {len(errors)}")  # fmt: skip
        for line in errors[:10]:
            print(f"    {line}")
        print(f"  model requests: {model.counter.snapshot()}, held open now {model.counter.open}")
        # the budget is counted from the commit and is the candidate's: the scripted words are due within it
        words_ok = len(firsts) == n and max(firsts.values()) <= budget
    return {
        "answers stored <= 100 ms": len(in_store) == n and max(in_store) <= 0.1,
        "next words within the budget": words_ok,
    }


# -- kill ------------------------------------------------------------------------------------------------
def cmd_kill(args: argparse.Namespace) -> dict[str, bool]:
    n = args.candidates
    print(f"\n== kill: {n} candidates submit, the app is killed (SIGKILL) with their grades in flight, then restarted", flush=True)
    with bench_setup() as (model, app, home):
        run = "k" + str(int(time.time()))
        candidates = make_candidates(app.url, n, run)
        jobs: list[Any] = []

        def work(index: int, barrier: threading.Barrier) -> None:
            barrier.wait()
            try:
                candidates[index].submit()
                jobs.append(candidates[index].client.submit(candidates[index].session, api_name="/follow"))
            except Exception as exc:
                print(f"    {index}: {type(exc).__name__}: {str(exc)[:120]}")

        began = time.perf_counter()
        all_at_once(n, work, timeout_s=60)
        committed = wait_until(lambda: len(tagged(store_turns(home), run)) == n, 30, every=0.02)
        at_commit = time.perf_counter() - began
        # then the kill lands while the grades are with the model (16 background graders: at most 16 at once)
        in_flight = lambda: len([a for a in model.counter.grades_since(0) if run in a])  # noqa: E731
        wait_until(lambda: in_flight() >= min(n, 16), 20, every=0.05)
        grades_before = in_flight()
        app.kill()
        print(f"  all {n} answers committed after {at_commit:.2f} s: {committed}; killed at {time.perf_counter() - began:.2f} s "
              f"with {grades_before} grade request(s) in flight")  # fmt: skip
        after_kill = tagged(store_turns(home), run)
        pending = [i for i, t in after_kill.items() if t["status"] == "pending"]
        undecided = [i for i, t in after_kill.items() if not t["decided"]]
        print(f"  after the kill: answers in the store {len(after_kill)}/{n} (lost {n - len(after_kill)}); pending {len(pending)}; "
              f"undecided {len(undecided)}")  # fmt: skip
        restarted_at = time.time()
        app.start()
        print(f"  restarted in {app.started_s:.1f} s", flush=True)
        done = wait_until(lambda: all(t["status"] != "pending" for t in tagged(store_turns(home), run).values()), 150, every=0.5)
        settled = time.time() - restarted_at
        final = tagged(store_turns(home), run)
        asked = Tally(int(m.group(1)) for a in model.counter.grades_since(restarted_at) if (m := TAG.search(a)) and m.group(2) == run)
        twice = sorted(i for i, c in asked.items() if c > 1)
        unasked = sorted(i for i in pending if asked[i] == 0)
        extra = sorted(i for i in asked if i not in pending)
        graded = [i for i, t in final.items() if t["status"] == "graded" and t["graded"]]
        by_model = [i for i in graded if final[i]["grader"] == "llm"]
        decided = [i for i, t in final.items() if t["decided"]]
        print(f"  no turn pending after {settled:.1f} s from the restart: {done}")
        print(f"  grade requests after the restart: {sum(asked.values())} for {len(asked)} answers (pending at the kill: {len(pending)})")
        print(f"  asked twice {twice or 'none'}; pending but never asked {unasked or 'none'}; asked but not pending {extra or 'none'}")
        print(f"  status 'graded' with a grade {len(graded)}/{n} (by the model: {len(by_model)}); decided {len(decided)}/{n}")
        for job in jobs:  # the killed app's streams: over
            with contextlib.suppress(Exception):
                job.cancel()
    return {
        "0 answers lost": len(after_kill) == n,
        "each pending answer graded once after the restart": not twice and not unasked and sum(asked.values()) == len(pending),
        "all graded": len(graded) == n,
    }


# -- main ------------------------------------------------------------------------------------------------
def main() -> None:
    parser = argparse.ArgumentParser(description="Live turns against a paced model (see the module docstring).")
    sub = parser.add_subparsers(dest="command", required=True)
    browser = sub.add_parser("browser", help="first word and feedback card in headless Chromium")
    browser.add_argument("--candidates", type=int, default=1)
    browser.add_argument("--first-token", type=float, default=0.6)
    browser.add_argument("--rate", type=float, default=50.0, help="tokens per second")
    clients = sub.add_parser("clients", help="many candidates at once over HTTP")
    clients.add_argument("--candidates", type=int, default=50)
    clients.add_argument("--model-delay", type=float, default=2.0, help="seconds the model takes for every request")
    clients.add_argument("--paced", action="store_true", help="the model at the default pace instead (a diagnostic)")
    hung = sub.add_parser("hung", help="a model that never answers")
    hung.add_argument("--candidates", type=int, default=10)
    hung.add_argument("--client-submit", action="store_true", help="/submit through gradio_client (the queue), not as the page sends it")
    kill = sub.add_parser("kill", help="kill -9 the app with grades in flight, restart, count")
    kill.add_argument("--candidates", type=int, default=20)
    sub.add_parser("all", help="browser 1, browser 20, clients 50, hung 10, kill 20")
    args = parser.parse_args()

    began = time.perf_counter()
    runs: list[tuple[str, Callable[[argparse.Namespace], dict[str, bool]], argparse.Namespace]]
    if args.command == "all":
        paced = {"first_token": 0.6, "rate": 50.0}
        runs = [
            ("browser 1", cmd_browser, argparse.Namespace(candidates=1, **paced)),
            ("browser 20", cmd_browser, argparse.Namespace(candidates=20, **paced)),
            ("clients 50", cmd_clients, argparse.Namespace(candidates=50, model_delay=2.0, paced=False)),
            ("hung 10", cmd_hung, argparse.Namespace(candidates=10, client_submit=False)),
            ("kill 20", cmd_kill, argparse.Namespace(candidates=20)),
        ]
    else:
        command = {"browser": cmd_browser, "clients": cmd_clients, "hung": cmd_hung, "kill": cmd_kill}[args.command]
        runs = [(f"{args.command} {args.candidates}", command, args)]
    summary: list[str] = []
    for name, command, namespace in runs:
        started = time.perf_counter()
        try:
            outcome = command(namespace)
        except Exception as exc:  # one sub-command's failure is reported; the others still run
            outcome = {f"ran ({type(exc).__name__}: {str(exc)[:200]})": False}
        summary += [f"  {verdict(ok)}  {name}: {what}" for what, ok in outcome.items()]
        print(f"  ({name} took {time.perf_counter() - started:.0f} s)", flush=True)
    print("\n== summary")
    print("\n".join(summary))
    print(f"  total {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
