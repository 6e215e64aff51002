"""The session store: SQLite in WAL mode behind one small module, with named migrations.

Every answer is committed before anything else happens to it; its grade is written by a later
transaction. A damaged database file is reported and never overwritten. One connection is shared
by the threads of a process behind a lock (the web app handles events on worker threads).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from interviewer.errors import InterviewerError

DATABASE_FILE = "sessions.db"


class StoreError(InterviewerError):
    pass


def _run(db: sqlite3.Connection, script: str) -> None:
    """Statement by statement: ``executescript`` would commit the migration's transaction."""
    for statement in script.split(";"):
        if statement.strip():
            db.execute(statement)


def _initial(db: sqlite3.Connection) -> None:
    _run(
        db,
        """
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('active', 'finished')),
            mode TEXT NOT NULL,
            lang TEXT NOT NULL,
            plan TEXT NOT NULL,          -- JSON: kind, label, question ids
            settings TEXT NOT NULL,      -- JSON: what the session was graded with
            prompt_shown_at REAL         -- when the current prompt appeared (for the round's clock)
        );
        CREATE TABLE turns (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('answer', 'skip', 'dont-know', 'summary')),
            question_id TEXT,
            followup_id TEXT,
            round INTEGER,
            attempt INTEGER NOT NULL DEFAULT 1,
            answer TEXT,
            asked_at REAL,
            answered_at REAL NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('pending', 'graded', 'none')),
            grade TEXT,                  -- JSON Grade
            grader TEXT,
            grader_version TEXT,
            rubric_version INTEGER,
            graded_at REAL,
            grading_ms REAL,
            decision TEXT,               -- JSON: the follow-up decision taken after this turn
            UNIQUE (session_id, seq)
        );
        CREATE INDEX turns_by_session ON turns(session_id, seq);
        """,
    )


def _reviews(db: sqlite3.Connection) -> None:
    _run(
        db,
        """
        CREATE TABLE reviews (
            key TEXT PRIMARY KEY,          -- question/criterion or question/follow-up/criterion
            question_id TEXT NOT NULL,
            easiness REAL NOT NULL,
            repetitions INTEGER NOT NULL,
            interval_days REAL NOT NULL,
            due_at REAL NOT NULL,
            last_quality INTEGER,
            last_score REAL,
            updated_at REAL NOT NULL
        );
        CREATE INDEX reviews_due ON reviews(due_at)
        """,
    )


MIGRATIONS: list[tuple[str, Callable[[sqlite3.Connection], None]]] = [
    ("0001_initial", _initial),
    ("0002_review_schedule", _reviews),
]


@dataclass
class Turn:
    id: int
    session_id: str
    seq: int
    kind: str
    question_id: str | None
    followup_id: str | None
    round: int | None
    attempt: int
    answer: str | None
    asked_at: float | None
    answered_at: float
    status: str
    grade: dict[str, Any] | None
    grader: str | None
    grader_version: str | None
    rubric_version: int | None
    graded_at: float | None
    grading_ms: float | None
    decision: dict[str, Any] | None


@dataclass
class SessionRow:
    id: str
    created_at: float
    updated_at: float
    status: str
    mode: str
    lang: str
    plan: dict[str, Any]
    settings: dict[str, Any]
    prompt_shown_at: float | None


def _turn(row: sqlite3.Row) -> Turn:
    data = dict(row)
    for key in ("grade", "decision"):
        data[key] = json.loads(data[key]) if data[key] else None
    return Turn(**data)


def _session(row: sqlite3.Row) -> SessionRow:
    data = dict(row)
    data["plan"] = json.loads(data["plan"])
    data["settings"] = json.loads(data["settings"])
    return SessionRow(**data)


class Store:
    """Opened explicitly with :meth:`open`; nothing touches the disk before that."""

    def __init__(self, path: Path):
        self.path = path
        self._db: sqlite3.Connection | None = None
        self._lock = threading.RLock()

    def open(self) -> Store:
        if self._db is not None:
            return self
        self.path.parent.mkdir(parents=True, exist_ok=True)
        existed = self.path.exists() and self.path.stat().st_size > 0
        try:
            db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=10)
            db.row_factory = sqlite3.Row
            if existed:
                result = db.execute("PRAGMA quick_check").fetchone()[0]
                if result != "ok":
                    raise sqlite3.DatabaseError(result)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA foreign_keys=ON")
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"the session database {self.path} is damaged ({exc}); it has been left as it is. "
                "Move it elsewhere (keep it: your answers are in it) and start again to create a new one."
            ) from exc
        self._db = db
        self._migrate()
        return self

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            self.open()
        assert self._db is not None
        return self._db

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            db = self.db
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def _migrate(self) -> None:
        with self.transaction() as db:
            db.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
            done = {row[0] for row in db.execute("SELECT name FROM migrations")}
            for name, apply in MIGRATIONS:
                if name not in done:
                    apply(db)
                    db.execute("INSERT INTO migrations VALUES (?, ?)", (name, time.time()))

    def applied_migrations(self) -> list[str]:
        return [row[0] for row in self.db.execute("SELECT name FROM migrations ORDER BY name")]

    # -- sessions ------------------------------------------------------------------------------
    def create_session(self, mode: str, lang: str, plan: dict[str, Any], settings: dict[str, Any]) -> str:
        session_id = uuid.uuid4().hex[:12]
        now = time.time()
        with self.transaction() as db:
            db.execute(
                "INSERT INTO sessions VALUES (?, ?, ?, 'active', ?, ?, ?, ?, ?)",
                (session_id, now, now, mode, lang, json.dumps(plan), json.dumps(settings), now),
            )
        return session_id

    def session(self, session_id: str) -> SessionRow:
        row = self.db.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
        if row is None:
            raise StoreError(f"no session '{session_id}' (see `interviewer sessions`)")
        return _session(row)

    def sessions(self) -> list[SessionRow]:
        return [_session(r) for r in self.db.execute("SELECT * FROM sessions ORDER BY created_at DESC")]

    def set_status(self, session_id: str, status: str) -> None:
        with self.transaction() as db:
            db.execute("UPDATE sessions SET status = ?, updated_at = ? WHERE id = ?", (status, time.time(), session_id))

    def mark_prompt_shown(self, session_id: str, when: float) -> None:
        with self.transaction() as db:
            db.execute("UPDATE sessions SET prompt_shown_at = ? WHERE id = ?", (when, session_id))

    def delete_session(self, session_id: str) -> None:
        self.session(session_id)
        with self.transaction() as db:
            db.execute("DELETE FROM turns WHERE session_id = ?", (session_id,))
            db.execute("DELETE FROM sessions WHERE id = ?", (session_id,))

    # -- turns ---------------------------------------------------------------------------------
    def add_turn(
        self,
        session_id: str,
        kind: str,
        question_id: str | None,
        followup_id: str | None,
        round_: int | None,
        answer: str | None,
        asked_at: float | None,
        attempt: int = 1,
        status: str = "pending",
        now: float | None = None,
    ) -> int:
        """Commit a turn (an answer is durable from here on) and return its id."""
        now = time.time() if now is None else now
        with self.transaction() as db:
            seq = db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM turns WHERE session_id = ?", (session_id,)).fetchone()[0]
            cursor = db.execute(
                "INSERT INTO turns (session_id, seq, kind, question_id, followup_id, round, attempt, answer, asked_at,"
                " answered_at, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (session_id, seq, kind, question_id, followup_id, round_, attempt, answer, asked_at, now, status),
            )
            db.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (now, session_id))
            assert cursor.lastrowid is not None
            return cursor.lastrowid

    def record_grade(self, turn_id: int, grade: dict[str, Any], grading_ms: float, decision: dict[str, Any] | None) -> None:
        with self.transaction() as db:
            db.execute(
                "UPDATE turns SET status = 'graded', grade = ?, grader = ?, grader_version = ?, rubric_version = ?,"
                " graded_at = ?, grading_ms = ?, decision = ? WHERE id = ?",
                (
                    json.dumps(grade, ensure_ascii=False),
                    grade.get("grader"),
                    grade.get("grader_version"),
                    grade.get("rubric_version"),
                    time.time(),
                    grading_ms,
                    json.dumps(decision, ensure_ascii=False) if decision is not None else None,
                    turn_id,
                ),
            )

    def update_decision(self, turn_id: int, decision: dict[str, Any]) -> None:
        with self.transaction() as db:
            db.execute("UPDATE turns SET decision = ? WHERE id = ?", (json.dumps(decision, ensure_ascii=False), turn_id))

    def turns(self, session_id: str) -> list[Turn]:
        return [_turn(r) for r in self.db.execute("SELECT * FROM turns WHERE session_id = ? ORDER BY seq", (session_id,))]

    def pending_turns(self, session_id: str) -> list[Turn]:
        return [t for t in self.turns(session_id) if t.status == "pending"]

    # -- the review schedule (spaced repetition) -------------------------------------------------
    @staticmethod
    def _schedule(row: sqlite3.Row) -> Any:
        from interviewer.interview.schedule import Schedule

        data = dict(row)
        data.pop("updated_at")
        return Schedule(**data)

    def review(self, key: str) -> Any:
        row = self.db.execute("SELECT * FROM reviews WHERE key = ?", (key,)).fetchone()
        return None if row is None else self._schedule(row)

    def save_reviews(self, schedules: list[Any]) -> None:
        with self.transaction() as db:
            for s in schedules:
                db.execute(
                    "INSERT OR REPLACE INTO reviews VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (s.key, s.question_id, s.easiness, s.repetitions, s.interval_days, s.due_at, s.last_quality, s.last_score, time.time()),
                )

    def reviews(self) -> list[Any]:
        """Every scheduled criterion, soonest due first (then hardest: lowest easiness)."""
        return [self._schedule(r) for r in self.db.execute("SELECT * FROM reviews ORDER BY due_at, easiness")]

    def export(self, session_id: str) -> dict[str, Any]:
        row = self.session(session_id)
        return {
            "session": row.__dict__,
            "turns": [t.__dict__ for t in self.turns(session_id)],
        }
