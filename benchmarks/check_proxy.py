"""deploy/Caddyfile in front of two app processes, as deploy/ runs them, on this machine.

    python benchmarks/check_proxy.py        # needs Caddy (Debian: apt-get install caddy)

Starts PostgreSQL, a Chroma server, the paced model and two app processes (bench_deploy's
deployment), then Caddy with deploy/Caddyfile on https://localhost:8443 (Caddy's own CA) with the
two processes as upstreams. A candidate signs in through the proxy, starts, answers and hears the
follow-up; its requests all reach one process (the sticky cookie). That process is then stopped:
the candidate's next page load is served by the other one, which asks for a new sign-in and resumes
the same interview from PostgreSQL, and a second answer is stored beside the first.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_deploy import SignedIn, deployment, one_turn
from bench_live import App

from interviewer.interview.store import Store

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"
SITE = "https://localhost:8443"


async def serving(apps: list[App], cookies: httpx.Cookies) -> list[App]:
    """The processes that know this browser's sign-in (a sign-in lives in one process's memory)."""
    known = []
    header = {"Cookie": "; ".join(f"{cookie.name}={cookie.value}" for cookie in cookies.jar)}  # set for localhost, sent to 127.0.0.1
    for app in apps:
        if app.process is None:
            continue
        async with httpx.AsyncClient(timeout=5) as direct:
            if (await direct.get(app.url + "config", headers=header)).status_code == 200:
                known.append(app)
    return known


async def check(apps: list[App], store: Store) -> bool:
    async with httpx.AsyncClient(base_url=SITE + "/", verify=False, timeout=60) as http:
        candidate = SignedIn(http, {}, 0, "proxy")
        await candidate.sign_in()
        await candidate.start("practice")
        first, _ = await one_turn(candidate)
        print(f"  through Caddy: signed in, started {candidate.session}, first words after {first or float('nan'):.2f} s")
        owner, stored = store.owner_of(candidate.session), len(store.turns(candidate.session))
        print(f"  stored in PostgreSQL as {owner!r}, {stored} turn(s); the sticky cookie set: {'interviewer_upstream' in http.cookies}")
        served = await serving(apps, http.cookies)
        print(f"  processes that served the candidate: {[app.port for app in served]} of {[app.port for app in apps]}")
        ok = owner == "cand00" and first is not None and len(served) == 1
        if not served:
            return False
        served[0].stop()
        reload = await http.get("")  # the page reloaded: the proxy finds its process gone
        print(f"  page reload after the stop: {reload.status_code}")
        await candidate.sign_in()  # the other process: its own sign-in
        now = await serving(apps, http.cookies)
        out = None
        async for latest in candidate.queued("resume", [candidate.session] + [None] * (candidate.inputs["resume"] - 1)):
            out = latest
        resumed = out is not None and out[0] == candidate.session
        await candidate.submit()
        after = len(store.turns(candidate.session))
        print(
            f"  process {served[0].port} stopped; now served by {[app.port for app in now]}; resumed: {resumed}; turns {stored} -> {after}"
        )
        return ok and resumed and after > stored and bool(now) and now[0] is not served[0]


def main() -> None:
    caddy = shutil.which("caddy")
    if caddy is None:
        sys.exit("Caddy is not installed (apt-get install caddy)")
    with deployment(1, 0.5) as (_, apps, store), tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "SITE": SITE, "UPSTREAMS": " ".join(f"127.0.0.1:{app.port}" for app in apps), "XDG_DATA_HOME": tmp,
               "XDG_CONFIG_HOME": tmp}  # fmt: skip
        log = Path(tmp) / "caddy.log"
        with log.open("wb") as out:
            proxy = subprocess.Popen([caddy, "run", "--config", str(DEPLOY / "Caddyfile"), "--adapter", "caddyfile"], env=env,
                                     stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
        try:
            time.sleep(3)
            if proxy.poll() is not None:
                sys.exit("Caddy exited:\n" + log.read_text()[-2000:])
            ok = asyncio.run(check(apps, store))
        finally:
            proxy.terminate()
            proxy.wait(timeout=15)
            if os.environ.get("BENCH_DEBUG"):
                print(log.read_text()[-3000:])
    print(f"  {'PASS' if ok else 'FAIL'} the Caddyfile proxies, keeps a candidate on one process, and fails over")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
