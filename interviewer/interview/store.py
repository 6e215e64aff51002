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
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from interviewer.content.rubric import Lang
from interviewer.errors import InterviewerError, StorageError, disk_fault
from interviewer.grading.grade import Grade
from interviewer.interview.followups import Decision
from interviewer.interview.plan import Plan
from interviewer.interview.schedule import Schedule, review

DATABASE_FILE = "sessions.db"


class StoreError(InterviewerError):
    pass


class StaleMove(StoreError):
    """A move made on a view of the session that is no longer current (another tab, a double click)."""

    def __init__(self) -> None:
        super().__init__("this prompt has already been answered (in another tab, or by a second click); here is where the interview is now")


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


# What the web app and the terminal showed when a model's follow-up failed, before typed turns: the
# notice was saved in front of the scripted question as if the model had worded it (0003 drops it).
_OLD_FALLBACK_NOTICES = ("（模型追问失败，改用题库追问。）", "(The model could not phrase the follow-up; here is the scripted one.)")


def _typed_turns(db: sqlite3.Connection) -> None:
    """Each answered turn records the words it was asked with (``asked``, ``asked_by``); a decision
    keeps the model's wording of the follow-up it chose as ``wording``; reviews lose ``last_score``.

    Old follow-up turns asked in the model's words get those words from the decision of the turn
    before them; every other old turn was asked in the bank's words, which ``asked`` NULL means."""
    db.execute("ALTER TABLE turns ADD COLUMN asked TEXT")
    db.execute("ALTER TABLE turns ADD COLUMN asked_by TEXT CHECK (asked_by IN ('bank', 'scripted', 'model'))")
    db.execute("ALTER TABLE reviews DROP COLUMN last_score")
    previous: dict[tuple[str, str | None], dict[str, Any]] = {}
    rows = db.execute("SELECT id, session_id, kind, question_id, followup_id, attempt, decision FROM turns ORDER BY session_id, seq")
    for turn_id, session_id, kind, question_id, followup_id, attempt, decision_json in rows.fetchall():
        decision = json.loads(decision_json) if decision_json else None
        if decision is not None:
            text = decision.pop("text", None)
            if isinstance(text, str) and text.strip() and not text.startswith(_OLD_FALLBACK_NOTICES):
                decision["wording"] = text.strip()
            decision.setdefault("aims_at", [])
            db.execute("UPDATE turns SET decision = ? WHERE id = ?", (json.dumps(decision, ensure_ascii=False), turn_id))
        if kind != "summary" and question_id is not None:
            asked, asked_by = None, "bank" if followup_id is None else "scripted"
            before = previous.get((session_id, question_id))
            if followup_id is not None and attempt == 1 and before and before.get("followup") == followup_id and before.get("wording"):
                asked, asked_by = before["wording"], "model"
            db.execute("UPDATE turns SET asked = ?, asked_by = ? WHERE id = ?", (asked, asked_by, turn_id))
            previous[(session_id, question_id)] = decision or {}


MIGRATIONS: list[tuple[str, Callable[[sqlite3.Connection], None]]] = [
    ("0001_initial", _initial),
    ("0002_review_schedule", _reviews),
    ("0003_typed_turns", _typed_turns),
]

TurnKind = Literal["answer", "skip", "dont-know", "summary"]
AskedBy = Literal["bank", "scripted", "model"]


@dataclass(frozen=True)
class Turn:
    """One stored move of the candidate: an answer, a skip, an "I don't know" or a round's end."""

    id: int
    session_id: str
    seq: int
    kind: TurnKind
    question_id: str | None
    followup_id: str | None
    round: int | None
    attempt: int
    answer: str | None
    asked: str | None  # the words the candidate was asked with; None: the bank's, for turns stored before 0003
    asked_by: AskedBy | None
    asked_at: float | None
    answered_at: float
    status: Literal["pending", "graded", "none"]
    grade: Grade | None
    grader: str | None
    grader_version: str | None
    rubric_version: int | None
    graded_at: float | None
    grading_ms: float | None
    decision: Decision | None  # what the interviewer did next


@dataclass(frozen=True)
class SessionRow:
    id: str
    created_at: float
    updated_at: float
    status: Literal["active", "finished"]
    mode: Literal["interview", "practice"]
    lang: Lang
    plan: Plan
    max_followups: int
    grader: str
    prompt_shown_at: float | None


# A session's state is read from the store several times a turn, every turn with its grade and
# decision: the same stored JSON is parsed once (about 50 µs a grade) and its object shared, as the
# offline grader shares its readings (nothing changes a Grade or a Decision once made).
_grade_of = lru_cache(maxsize=4096)(Grade.model_validate_json)
_decision_of = lru_cache(maxsize=4096)(Decision.model_validate_json)


def _turn(row: sqlite3.Row) -> Turn:
    data = dict(row)
    try:
        data["grade"] = _grade_of(data["grade"]) if data["grade"] else None
        data["decision"] = _decision_of(data["decision"]) if data["decision"] else None
    except ValidationError as exc:
        raise StoreError(f"turn {data['seq']} of session {data['session_id']} cannot be read ({exc.errors()[0]['msg']})") from None
    return Turn(**data)


def _session(row: sqlite3.Row) -> SessionRow:
    plan = json.loads(row["plan"])
    settings = json.loads(row["settings"])
    return SessionRow(
        id=row["id"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        status=row["status"],
        mode=row["mode"],
        lang=row["lang"],
        plan=Plan(plan["kind"], plan["label"], list(plan["questions"])),
        max_followups=int(settings.get("max_followups", 2)),
        grader=str(settings.get("grader", "")),
        prompt_shown_at=row["prompt_shown_at"],
    )


@dataclass(frozen=True)
class GradeRecord:
    """Everything that follows from one graded turn, written in one transaction."""

    turn_id: int
    grade: Grade
    grading_ms: float
    decision: Decision | None  # None: the turn keeps the decision recorded before its grade
    reviews: list[tuple[str, str, int]]  # (criterion key, question id, SM-2 quality) to move
    now: float
    finished: bool = False  # the session is over once this turn is recorded (with a decision)


class Store:
    """Opened explicitly with :meth:`open`; nothing touches the disk before that.

    Each thread has its own connection: in WAL mode readers never wait for each other or for the
    writer, and writers queue on SQLite's own lock (busy timeout 10 s), so many candidates' turns
    and the background grading do not take turns on one connection."""

    def __init__(self, path: Path):
        self.path = path
        self._opened = False
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()  # guards the list of connections, not the database
        self._writing = threading.Lock()  # one writer of this process at a time (see transaction)

    def open(self) -> Store:
        if self._opened:
            return self
        self.path.parent.mkdir(parents=True, exist_ok=True)
        existed = self.path.exists() and self.path.stat().st_size > 0
        try:
            db = self._connect()
            if existed:
                result = db.execute("PRAGMA quick_check").fetchone()[0]
                if result != "ok":
                    raise sqlite3.DatabaseError(result)
            db.execute("PRAGMA journal_mode=WAL")
        except sqlite3.DatabaseError as exc:
            self.close()
            if fault := disk_fault(self.path, str(exc)):
                raise StorageError(fault) from exc
            raise StoreError(
                f"the session database {self.path} is damaged ({exc}); it has been left as it is. "
                "Move it elsewhere (keep it: your answers are in it) and start again to create a new one."
            ) from exc
        self._opened = True
        self._migrate()
        return self

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=10)
        db.row_factory = sqlite3.Row
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA foreign_keys=ON")
        self._local.db = db
        with self._lock:
            self._all.append(db)
        return db

    def close(self) -> None:
        with self._lock:
            for db in self._all:
                db.close()
            self._all.clear()
        self._local = threading.local()
        self._opened = False

    @property
    def db(self) -> sqlite3.Connection:
        """This thread's connection."""
        if not self._opened:
            self.open()
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        return db if db is not None else self._connect()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction. This process's writers take turns on a lock first: SQLite makes a
        writer that finds the database locked sleep and retry (1, 2, 5, 10 … 100 ms), and fifty
        answers committed at once waited up to two seconds that way; on the lock they wait only for
        the writes ahead of them. Another process's writer still meets SQLite's own busy wait. A write
        the disk refuses (full, read-only) is a :class:`StorageError`, the transaction rolled back."""
        db = self.db
        with self._writing:
            try:
                db.execute("BEGIN IMMEDIATE")
                try:
                    yield db
                except BaseException:
                    if db.in_transaction:  # SQLite has already rolled back after a full disk
                        db.execute("ROLLBACK")
                    raise
                db.execute("COMMIT")
            except sqlite3.OperationalError as exc:
                if fault := disk_fault(self.path, str(exc)):
                    raise StorageError(fault) from exc
                raise

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
    def create_session(self, mode: str, lang: str, plan: Plan, grader: str, max_followups: int, now: float) -> SessionRow:
        session_id = uuid.uuid4().hex[:12]
        settings = {"grader": grader, "max_followups": max_followups}
        with self.transaction() as db:
            db.execute(
                "INSERT INTO sessions VALUES (?, ?, ?, 'active', ?, ?, ?, ?, ?)",
                (session_id, now, now, mode, lang, json.dumps(plan.as_dict()), json.dumps(settings), now),
            )
        return self.session(session_id)

    def session(self, session_id: str) -> SessionRow:
        row = self.db.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
        if row is None:
            raise StoreError(f"no session '{session_id}' (see `interviewer sessions`)")
        return _session(row)

    def sessions(self) -> list[SessionRow]:
        """Every session, newest first."""
        return [_session(r) for r in self.db.execute("SELECT * FROM sessions ORDER BY created_at DESC")]

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
        kind: TurnKind,
        question_id: str | None,
        followup_id: str | None,
        round_: int | None,
        answer: str | None,
        asked: str | None,
        asked_by: AskedBy | None,
        asked_at: float | None,
        now: float,
        attempt: int = 1,
        status: Literal["pending", "none"] = "pending",
        finished: bool = False,
        after_seq: int | None = None,
    ) -> Turn:
        """Commit a turn (an answer is durable from here on). A turn with nothing to grade (a round's
        end) also restarts the clock, and ``finished`` ends the session, in the same transaction.

        With ``after_seq``, the turn is refused (:class:`StaleMove`) unless the session's last turn
        is still that one: a move answers the prompt it was made on, or none."""
        with self.transaction() as db:
            last = db.execute("SELECT COALESCE(MAX(seq), 0) FROM turns WHERE session_id = ?", (session_id,)).fetchone()[0]
            if after_seq is not None and last != after_seq:
                raise StaleMove()
            seq = last + 1
            cursor = db.execute(
                "INSERT INTO turns (session_id, seq, kind, question_id, followup_id, round, attempt, answer, asked, asked_by,"
                " asked_at, answered_at, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (session_id, seq, kind, question_id, followup_id, round_, attempt, answer, asked, asked_by, asked_at, now, status),
            )
            shown = ", prompt_shown_at = ?" if status == "none" else ""
            ended = ", status = 'finished'" if finished else ""
            values: tuple[Any, ...] = (now, now) if status == "none" else (now,)
            db.execute(f"UPDATE sessions SET updated_at = ?{shown}{ended} WHERE id = ?", (*values, session_id))
            row = db.execute("SELECT * FROM turns WHERE id = ?", (cursor.lastrowid,)).fetchone()
        return _turn(row)

    def record_decision(self, turn_id: int, decision: Decision, now: float, finished: bool) -> bool:
        """What follows an answer, before its grade: the next prompt appears (its clock starts) and
        ``finished`` ends the session, in one transaction. Only an undecided turn is recorded (a
        second tab, a resume after a crash): False when another decision came first. The grade
        may already be in: it is computed alongside, from the moment the answer is committed."""
        with self.transaction() as db:
            cursor = db.execute(
                "UPDATE turns SET decision = ? WHERE id = ? AND decision IS NULL",
                (decision.model_dump_json(), turn_id),
            )
            if cursor.rowcount == 0:
                return False
            self._next_prompt_shown(db, turn_id, now, finished)
        return True

    def record_grade(self, record: GradeRecord) -> bool:
        """The grade and the review schedule (and, given one, the decision with the session's clock),
        in one transaction.

        Only a turn still pending is recorded: a turn graded meanwhile (another tab, a resume, a
        second worker) is left as it is and False is returned, so no grade and no schedule move is
        applied twice. Without a decision in the record the turn keeps the one it has."""
        grade = record.grade
        with self.transaction() as db:
            cursor = db.execute(
                "UPDATE turns SET status = 'graded', grade = ?, grader = ?, grader_version = ?, rubric_version = ?,"
                " graded_at = ?, grading_ms = ?, decision = COALESCE(?, decision) WHERE id = ? AND status = 'pending'",
                (
                    grade.model_dump_json(),
                    grade.grader,
                    grade.grader_version,
                    grade.rubric_version,
                    record.now,
                    record.grading_ms,
                    record.decision.model_dump_json() if record.decision is not None else None,
                    record.turn_id,
                ),
            )
            if cursor.rowcount == 0:
                return False
            for key, question_id, quality in record.reviews:
                row = db.execute("SELECT * FROM reviews WHERE key = ?", (key,)).fetchone()
                previous = _schedule(row) if row is not None else Schedule(key=key, question_id=question_id)
                _save_schedule(db, review(previous, quality, record.now), record.now)
            if record.decision is not None:
                self._next_prompt_shown(db, record.turn_id, record.now, record.finished)
            else:
                db.execute(
                    "UPDATE sessions SET updated_at = ? WHERE id = (SELECT session_id FROM turns WHERE id = ?)",
                    (record.now, record.turn_id),
                )
        return True

    @staticmethod
    def _next_prompt_shown(db: sqlite3.Connection, turn_id: int, now: float, finished: bool) -> None:
        status = "'finished'" if finished else "status"
        db.execute(
            f"UPDATE sessions SET updated_at = ?, prompt_shown_at = ?, status = {status}"
            " WHERE id = (SELECT session_id FROM turns WHERE id = ?)",
            (now, now, turn_id),
        )

    def pending(self) -> list[tuple[str, int]]:
        """(session id, turn id) of every answer still waiting for its grade, oldest first: the
        grading work a restart resumes."""
        rows = self.db.execute("SELECT session_id, id FROM turns WHERE status = 'pending' ORDER BY answered_at, id")
        return [(r[0], r[1]) for r in rows]

    def turn(self, turn_id: int) -> Turn:
        row = self.db.execute("SELECT * FROM turns WHERE id = ?", (turn_id,)).fetchone()
        if row is None:
            raise StoreError(f"no turn {turn_id}")
        return _turn(row)

    def record_wording(self, turn_id: int, wording: str) -> None:
        """The model's wording of the follow-up chosen after this turn (the choice stays the engine's)."""
        with self.transaction() as db:
            row = db.execute("SELECT decision FROM turns WHERE id = ?", (turn_id,)).fetchone()
            if row is None or not row[0]:
                return
            decision = Decision.model_validate_json(row[0]).model_copy(update={"wording": wording})
            db.execute("UPDATE turns SET decision = ? WHERE id = ?", (decision.model_dump_json(), turn_id))

    def turns(self, session_id: str) -> list[Turn]:
        return [_turn(r) for r in self.db.execute("SELECT * FROM turns WHERE session_id = ? ORDER BY seq", (session_id,))]

    def session_with_turns(self, session_id: str) -> tuple[SessionRow, list[Turn]]:
        """A session and its turns as of one moment (one read transaction)."""
        db = self.db
        db.execute("BEGIN")
        try:
            return self.session(session_id), self.turns(session_id)
        finally:
            db.execute("COMMIT")

    def all_turns(self) -> dict[str, list[Turn]]:
        """Every session's turns in one query, for the history across sessions."""
        by_session: dict[str, list[Turn]] = {}
        for row in self.db.execute("SELECT * FROM turns ORDER BY session_id, seq"):
            by_session.setdefault(row["session_id"], []).append(_turn(row))
        return by_session

    # -- the review schedule (spaced repetition) -------------------------------------------------
    def review(self, key: str) -> Schedule | None:
        row = self.db.execute("SELECT * FROM reviews WHERE key = ?", (key,)).fetchone()
        return None if row is None else _schedule(row)

    def reviews(self) -> list[Schedule]:
        """Every scheduled criterion, soonest due first (then hardest: lowest easiness)."""
        return [_schedule(r) for r in self.db.execute("SELECT * FROM reviews ORDER BY due_at, easiness")]

    def export(self, session_id: str) -> dict[str, Any]:
        """A session and all its turns as plain JSON-ready data."""
        row, turns = self.session_with_turns(session_id)
        session = {**row.__dict__, "plan": row.plan.as_dict()}
        return {
            "session": session,
            "turns": [
                {
                    **t.__dict__,
                    "grade": t.grade.model_dump(mode="json") if t.grade else None,
                    "decision": t.decision.model_dump(mode="json") if t.decision else None,
                }
                for t in turns
            ],
        }


def _schedule(row: sqlite3.Row) -> Schedule:
    data = dict(row)
    data.pop("updated_at")
    return Schedule(**data)


def _save_schedule(db: sqlite3.Connection, s: Schedule, now: float) -> None:
    db.execute(
        "INSERT OR REPLACE INTO reviews (key, question_id, easiness, repetitions, interval_days, due_at, last_quality, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (s.key, s.question_id, s.easiness, s.repetitions, s.interval_days, s.due_at, s.last_quality, now),
    )
