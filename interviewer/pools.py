"""Thread pools for work that waits on the network (model calls, grades).

A ``ThreadPoolExecutor`` starts its threads one per ``submit`` while none is idle, holding a lock
as it does. When fifty candidates answer at once, those starts queue behind each other while every
thread already running competes for the interpreter lock, and a submit that should take
microseconds took up to two seconds (measured in ``benchmarks/bench_live.py clients``).
:func:`start_all` starts the threads up front, before the first candidate arrives.
"""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import ThreadPoolExecutor


def start_all(pool: ThreadPoolExecutor, count: int, timeout_s: float = 5.0) -> None:
    """Start ``count`` threads (the pool's ``max_workers``) of an idle ``pool`` now. Each of the
    ``count`` placeholder tasks holds its thread until all have one, so each submit starts a new
    thread; on a pool already busy the placeholders give up after ``timeout_s``."""
    everyone = threading.Barrier(count, timeout=timeout_s)

    def hold() -> None:
        with contextlib.suppress(threading.BrokenBarrierError):
            everyone.wait()

    for _ in range(count):
        pool.submit(hold)
