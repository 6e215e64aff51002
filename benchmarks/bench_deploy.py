"""The server deployment under load: signed-in candidates across two app processes that share one
PostgreSQL store and one Chroma server, a model answering every request in a fixed time.

    python benchmarks/bench_deploy.py                       # 50 candidates, the model 2 s
    python benchmarks/bench_deploy.py --candidates 20 --model-delay 2

Everything runs on 127.0.0.1 and is removed at the end: a throwaway PostgreSQL and Chroma server
(the tests' own, ``tests/servers.py``), the paced model (``benchmarks/paced_server.py``) and two
``app.py`` processes, each with a data folder of its own (nothing shared on disk), configured by
INTERVIEWER_DATABASE_URL and INTERVIEWER_CHROMA_URL. Each candidate is an account of its own
(``cand00`` …), signs in on Gradio's login page over HTTP and stays on one process, as a proxy with
sticky sessions sends it (odd numbers on the second). It speaks HTTP as the page does (bench_live's
``Wire``): all at once, /submit (one POST), then /follow, read on its event stream.

Figures: from the /submit call to the first new interviewer words (target p95 <= 5 s); answers
lost (target 0: every answer in the store, in its own candidate's session); reads across users
(target 0): each candidate then asks its process to /resume the next candidate's session, and
every one of those calls must be refused as a missing session. Percentiles are nearest-rank.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.servers
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_live import CPU, TAG, App, Wire, figures, new_words, pct, serve, verdict

from interviewer.application.accounts import Accounts
from interviewer.interview.store import Store
from tests.servers import ChromaServer, PostgresServer

PASSWORD = "a long bench password"


@contextlib.contextmanager
def deployment(candidates: int, model_delay: float) -> Iterator[tuple[Any, list[App], Store]]:
    """PostgreSQL, Chroma, the model and two app processes; accounts made; all stopped after."""
    with tempfile.TemporaryDirectory(prefix="bench-deploy-") as tmp, serve(fixed_delay_s=model_delay) as model:
        folder = Path(tmp)
        postgres = PostgresServer().start()
        (folder / "chroma").mkdir()
        chroma = ChromaServer(folder / "chroma").start()
        apps: list[App] = []
        store: Store | None = None
        try:
            url = postgres.new_database()
            store = Store(folder / "unused.db", url).open()
            accounts = Accounts(store)
            began = time.perf_counter()
            for number in [*range(candidates), 98, 99]:  # 98 and 99 warm the two processes up
                accounts.add(f"cand{number:02d}", PASSWORD)
            print(f"  {candidates + 2} accounts in {time.perf_counter() - began:.1f} s (argon2id)", flush=True)
            env = {"INTERVIEWER_DATABASE_URL": url, "INTERVIEWER_CHROMA_URL": chroma.url}
            for number in (1, 2):
                home = folder / f"home-{number}"
                home.mkdir()
                apps.append(App(home, model, env).start())
                print(f"  app {number} up in {apps[-1].started_s:.1f} s (port {apps[-1].port})", flush=True)
            yield model, apps, store
        finally:
            for app in apps:
                app.stop()
                unexpected = [line for line in app.errors() if "no session '" not in line]  # the refused reads are expected
                for line in unexpected[:5]:
                    print(f"    app {app.port} traceback: {line}")
            if store is not None:
                store.close()
            chroma.stop()
            postgres.stop()


class SignedIn(Wire):
    """bench_live's candidate, signed in first: its own HTTP client keeps the login cookie."""

    async def sign_in(self) -> None:
        reply = await self.http.post("login", data={"username": f"cand{self.number:02d}", "password": PASSWORD})
        if reply.status_code != 200:
            raise RuntimeError(f"sign-in refused ({reply.status_code}): {reply.text[:120]}")
        config = (await self.http.get("config")).json()
        self.fns = {d["api_name"]: i for i, d in enumerate(config["dependencies"]) if d.get("api_name")}
        self.inputs = {d["api_name"]: len(d["inputs"]) for d in config["dependencies"] if d.get("api_name")}

    async def resume_other(self, session_id: str) -> bool:
        """True when the process let this candidate read ``session_id`` (another candidate's)."""
        try:
            async for out in self.queued("resume", [session_id] + [None] * (self.inputs["resume"] - 1)):
                if out and out[0] == session_id:
                    return True
        except RuntimeError as exc:
            if "no session" in str(exc):
                return False
            raise
        return False


async def one_turn(candidate: SignedIn) -> tuple[float | None, str]:
    began = time.perf_counter()
    await candidate.submit()
    return await candidate.follow(began)


async def run(args: argparse.Namespace, apps: list[App], store: Store) -> dict[str, bool]:
    import httpx

    n = args.candidates
    run_tag = "d" + str(int(time.time()))
    limits = httpx.Limits(max_connections=8, max_keepalive_connections=4)
    clients = [httpx.AsyncClient(base_url=apps[i % 2].url, timeout=httpx.Timeout(90.0), limits=limits) for i in range(n)]
    warm = [httpx.AsyncClient(base_url=app.url, timeout=httpx.Timeout(90.0)) for app in apps]
    try:
        for number, http in enumerate(warm):
            warming = SignedIn(http, {}, 98 + number, run_tag)
            await warming.sign_in()
            await warming.start()
            first, _ = await one_turn(warming)
            print(f"  cold first turn on app {number + 1}: first words after {first or float('nan'):.2f} s", flush=True)
        candidates = [SignedIn(clients[i], {}, i, run_tag) for i in range(n)]
        began = time.perf_counter()
        for chunk in range(0, n, 10):
            await asyncio.gather(*(c.sign_in() for c in candidates[chunk : chunk + 10]))
            await asyncio.gather(*(c.start() for c in candidates[chunk : chunk + 10]))
        print(f"  {n} candidates signed in, each with a session, in {time.perf_counter() - began:.1f} s", flush=True)

        firsts: dict[int, float] = {}
        errors: list[str] = []

        async def one(index: int) -> None:
            try:
                first, text = await one_turn(candidates[index])
                if first is None or not new_words(text, candidates[index].asked):
                    errors.append(f"{index}: no new words")
                else:
                    firsts[index] = first
            except Exception as exc:
                errors.append(f"{index}: {type(exc).__name__}: {str(exc)[:120]}")

        cpu = CPU(apps[0])
        await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(n))), timeout=180)
        cpu_line = cpu.line()

        crossed = 0
        for index, candidate in enumerate(candidates):
            other = candidates[(index + 1) % n]
            crossed += await candidate.resume_other(other.session)
    finally:
        for http in [*clients, *warm]:
            await http.aclose()

    # every answer in the store, in its own candidate's session
    kept = 0
    for index, candidate in enumerate(candidates):
        answers = [t.answer or "" for t in store.turns(candidate.session) if t.kind == "answer"]
        mine = [m for a in answers if (m := TAG.search(a)) and m.group(2) == run_tag]
        owner = store.owner_of(candidate.session)
        kept += owner == f"cand{index:02d}" and [int(m.group(1)) for m in mine] == [index]
    lost = n - kept
    by_app = [sorted(v for i, v in firsts.items() if i % 2 == a) for a in (0, 1)]
    figures("/submit call -> first new interviewer words (both processes)", list(firsts.values()), "p95 <= 5 s")
    for number, values in enumerate(by_app, 1):
        figures(f"  on app {number}", values)
    print(f"  answers lost {lost}/{n}; reads across users {crossed}/{n}; refused or errored {len(errors)}")
    for line in errors[:10]:
        print(f"    {line}")
    print(f"  {cpu_line}")
    ok = len(firsts) == n and pct(list(firsts.values()), 0.95) <= 5.0
    return {"p95 <= 5 s": ok, "0 answers lost": lost == 0 and not errors, "0 reads across users": crossed == 0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--candidates", type=int, default=50)
    parser.add_argument("--model-delay", type=float, default=2.0, help="seconds the model takes for every request")
    args = parser.parse_args()
    print(f"\n== deploy: {args.candidates} signed-in candidates on two processes, PostgreSQL + Chroma server, the model "
          f"{args.model_delay} s a request", flush=True)  # fmt: skip
    with deployment(args.candidates, args.model_delay) as (_, apps, store):
        results = asyncio.run(run(args, apps, store))
    for name, ok in results.items():
        print(f"  {verdict(ok)} {name}")
    sys.exit(0 if all(results.values()) else 1)


if __name__ == "__main__":
    main()
