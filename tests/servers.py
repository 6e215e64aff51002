"""The throwaway servers the tests start themselves, each on a free port of 127.0.0.1, removed at
the end of the run:

- PostgreSQL from Debian's packages (``make install-test`` installs them): initdb into a temporary
  folder. PostgreSQL refuses to run as root, so as root the server runs as the ``postgres`` account
  the package creates. Each test gets a database of its own.
- Chroma's server, the venv's own ``chroma run``."""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# A throwaway server: durability is not wanted, speed is. Enough connections for two app processes'
# pools and the load benchmark.
FAST = ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=300"]


def binaries() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if not found:
        raise RuntimeError("PostgreSQL's server is not installed (Debian package postgresql): run `make install-test`")
    return Path(found[-1]).parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def end(process: subprocess.Popen[bytes], how: signal.Signals, timeout_s: float = 20) -> None:
    """Ask a server to stop with ``how``; kill it if it has not within ``timeout_s``."""
    process.send_signal(how)
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class PostgresServer:
    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="interviewer-pg-"))
        self.data = self.folder / "data"
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self._names = itertools.count(1)
        self._as: dict[str, Any] = {}
        if os.geteuid() == 0:
            account = pwd.getpwnam("postgres")
            os.chown(self.folder, account.pw_uid, account.pw_gid)
            self._as = {"user": account.pw_uid, "group": account.pw_gid}

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def start(self, initialise: bool = True) -> PostgresServer:
        bin_dir = binaries()
        if initialise:
            subprocess.run(
                [bin_dir / "initdb", "-D", self.data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync"],
                check=True,
                capture_output=True,
                **self._as,
            )
        log = (self.folder / "server.log").open("ab")
        self.process = subprocess.Popen(
            [bin_dir / "postgres", "-D", self.data, "-p", str(self.port), "-h", "127.0.0.1", "-k", self.folder, *FAST],
            stdout=log,
            stderr=subprocess.STDOUT,
            **self._as,
        )
        self.wait_ready()
        return self

    def wait_ready(self, timeout: float = 30) -> None:
        import psycopg

        deadline = time.monotonic() + timeout
        while True:
            try:
                psycopg.connect(self.url, connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline or (self.process is not None and self.process.poll() is not None):
                    raise RuntimeError("the test PostgreSQL did not start:\n" + (self.folder / "server.log").read_text()) from None
                time.sleep(0.1)

    def new_database(self) -> str:
        """The URL of a fresh, empty database on this server."""
        import psycopg

        name = f"test_{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.url, autocommit=True) as db:
            db.execute(f"CREATE DATABASE {name}")
        return self.url.rsplit("/", 1)[0] + "/" + name

    def stop(self, keep: bool = False) -> None:
        """Stop the server; its data is removed unless ``keep`` (to start it again)."""
        if self.process is not None:
            end(self.process, signal.SIGINT)  # "fast" shutdown: clients still connected are let go
            self.process = None
        if not keep:
            shutil.rmtree(self.folder, ignore_errors=True)


CHROMA = Path(sys.executable).parent / "chroma"
CHROMA_STARTUP_S = 60.0


class ChromaServer:
    def __init__(self, folder: Path):
        self.folder = folder
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ChromaServer:
        import httpx

        if not CHROMA.exists():
            raise RuntimeError(f"the venv's Chroma command is missing: {CHROMA} (it comes with the chromadb package)")
        with (self.folder / "server.log").open("wb") as log:
            self.process = subprocess.Popen(
                [str(CHROMA), "run", "--path", str(self.folder / "data"), "--host", "127.0.0.1", "--port", str(self.port)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        deadline = time.monotonic() + CHROMA_STARTUP_S
        while True:
            if self.process.poll() is not None:
                log_text = (self.folder / "server.log").read_text(errors="replace")
                raise RuntimeError(f"`chroma run` exited with {self.process.returncode}:\n{log_text[-2000:]}")
            try:
                if httpx.get(f"{self.url}/api/v2/heartbeat", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"no Chroma heartbeat at {self.url} within {CHROMA_STARTUP_S:.0f} s")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process is not None:
            end(self.process, signal.SIGTERM)
            self.process = None
