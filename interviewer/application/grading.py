"""Grading in the background: the interview goes on while its answers are graded.

Every answer is pending in the store from the moment it is committed; :class:`GradingWorker` grades
pending answers on a pool of threads sized for model calls (they wait on the network, not on the
CPU), each answer once per process, and once in the store whatever happens (the store records a
grade only for a turn still pending). :meth:`GradingWorker.resume` picks up what a restart left
pending, so a kill loses no grade: it is only done later.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from interviewer.grading.grade import Grade
from interviewer.interview.engine import Engine
from interviewer.interview.store import Store
from interviewer.pools import start_all

log = logging.getLogger(__name__)


class GradingWorker:
    def __init__(self, engine: Callable[[int], Engine], workers: int):
        self._engine = engine  # the engine that grades a turn: its session's (whose model: the server's or the owner's own)
        self._workers = workers
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="grading")
        self._lock = threading.Lock()
        self._claimed: dict[int, threading.Event] = {}

    def start(self) -> None:
        """Start the pool's threads now (a server, before candidates arrive: see ``pools``)."""
        start_all(self._pool, self._workers)

    def submit(self, turn_id: int, decide_first: bool = True) -> None:
        """Grade this answer soon (nothing happens if it is already being graded here)."""
        with self._lock:
            if turn_id in self._claimed:
                return
            done = self._claimed[turn_id] = threading.Event()
        self._pool.submit(self._grade, turn_id, decide_first, done)

    def resume(self, store: Store) -> int:
        """Queue every answer still pending in the store (after a restart); returns how many."""
        pending = store.pending()
        for _, turn_id in pending:
            self.submit(turn_id)
        return len(pending)

    def wait(self, turn_id: int, timeout: float) -> Grade | None:
        """The answer's grade once it is recorded, waiting up to ``timeout`` seconds (None if not yet)."""
        deadline = time.monotonic() + timeout
        store = self._engine(turn_id).store
        with self._lock:
            done = self._claimed.get(turn_id)
        if done is not None:
            done.wait(timeout)
        while True:  # graded here, or by another process: the store has the word
            turn = store.turn(turn_id)
            if turn.status != "pending" or time.monotonic() >= deadline:
                return turn.grade
            time.sleep(0.1)

    def _grade(self, turn_id: int, decide_first: bool, done: threading.Event) -> None:
        try:
            self._engine(turn_id).grade(turn_id, decide_first=decide_first)
        except Exception:  # one answer's failure must not stop the others; it stays pending
            log.exception("grading turn %s failed; it stays pending and is graded again on the next resume", turn_id)
        finally:
            done.set()
            with self._lock:
                self._claimed.pop(turn_id, None)
