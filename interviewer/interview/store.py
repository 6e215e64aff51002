"""The session store: its schema, named migrations and every query, on SQLite or PostgreSQL.

Every answer is committed before anything else happens to it; its grade is written by a later
transaction. A damaged database file is reported and never overwritten. The SQL is the part of
SQLite's that PostgreSQL also speaks; :mod:`interviewer.interview.databases` adapts the rest
(placeholders, column types) and owns connections and transactions.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from interviewer.content.rubric import Lang
from interviewer.grading.grade import Grade
from interviewer.interview.databases import Connection, SqliteDatabase, StoreError, database_for
from interviewer.interview.followups import Decision
from interviewer.interview.plan import Plan
from interviewer.interview.schedule import Schedule, review

DATABASE_FILE = "sessions.db"


class StaleMove(StoreError):
    """A move made on a view of the session that is no longer current (another tab, a double click)."""

    def __init__(self) -> None:
        super().__init__("this prompt has already been answered (in another tab, or by a second click); here is where the interview is now")


def _run(db: Connection, script: str) -> None:
    """Statement by statement: ``executescript`` would commit the migration's transaction."""
    for statement in script.split(";"):
        if statement.strip():
            db.execute(statement)


def _initial(db: Connection) -> None:
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


def _reviews(db: Connection) -> None:
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


def _typed_turns(db: Connection) -> None:
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


def _owners(db: Connection) -> None:
    """Accounts: every session, review schedule and model setting belongs to one user (``owner``;
    '' is the local user of a machine with no accounts, whose data the first account takes over).
    Each turn keeps its score as a column, so the history reads scores without parsing grades."""
    db.execute("ALTER TABLE sessions ADD COLUMN owner TEXT NOT NULL DEFAULT ''")
    db.execute("CREATE INDEX sessions_by_owner ON sessions(owner, created_at)")
    db.execute("ALTER TABLE turns ADD COLUMN score REAL")  # a float8 on both engines (see databases._postgres_sql)
    score = "json_extract(grade, '$.score')" if isinstance(db, sqlite3.Connection) else "(grade::jsonb ->> 'score')::double precision"
    db.execute(f"UPDATE turns SET score = {score} WHERE grade IS NOT NULL")
    db.execute("CREATE INDEX turns_by_question ON turns(question_id, answered_at)")
    _run(
        db,
        """
        CREATE TABLE owned_reviews (
            owner TEXT NOT NULL DEFAULT '',
            key TEXT NOT NULL,
            question_id TEXT NOT NULL,
            easiness REAL NOT NULL,
            repetitions INTEGER NOT NULL,
            interval_days REAL NOT NULL,
            due_at REAL NOT NULL,
            last_quality INTEGER,
            updated_at REAL NOT NULL,
            PRIMARY KEY (owner, key)
        );
        INSERT INTO owned_reviews SELECT '', key, question_id, easiness, repetitions, interval_days, due_at, last_quality, updated_at
            FROM reviews;
        DROP TABLE reviews;
        ALTER TABLE owned_reviews RENAME TO reviews;
        CREATE INDEX reviews_due ON reviews(owner, due_at);
        CREATE TABLE users (
            name TEXT PRIMARY KEY,
            password_hash TEXT NOT NULL,   -- argon2id, with its parameters and salt
            created_at REAL NOT NULL
        );
        CREATE TABLE user_endpoints (      -- a user's own model endpoint, used for that user's sessions only
            owner TEXT PRIMARY KEY,
            base_url TEXT,
            model TEXT,
            api_key TEXT,
            updated_at REAL NOT NULL
        )
        """,
    )


def _server_secrets(db: Connection) -> None:
    """Secrets every process of one deployment must agree on (the key of the browser-held session
    id), kept where they all look: the database they share."""
    db.execute("CREATE TABLE server_secrets (name TEXT PRIMARY KEY, value TEXT NOT NULL, created_at REAL NOT NULL)")


def _recordings(db: Connection) -> None:
    """A spoken answer's recording, kept with the turn it answered (``turn_id``, set when the answer
    is committed: the recordings made at that ``position`` of the session); ``token`` names its
    file when the page replays it. Deleting the session or the turn deletes it."""
    _run(
        db,
        """
        CREATE TABLE recordings (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,          -- the session's last turn when it was recorded
            turn_id INTEGER REFERENCES turns(id) ON DELETE CASCADE,
            token TEXT NOT NULL UNIQUE,
            created_at REAL NOT NULL,
            mime TEXT NOT NULL,
            seconds REAL,
            transcript TEXT,
            audio BLOB NOT NULL
        );
        CREATE INDEX recordings_by_session ON recordings(session_id, position)
        """,
    )


MIGRATIONS: list[tuple[str, Callable[[Connection], None]]] = [
    ("0001_initial", _initial),
    ("0002_review_schedule", _reviews),
    ("0003_typed_turns", _typed_turns),
    ("0004_owners", _owners),
    ("0005_server_secrets", _server_secrets),
    ("0006_recordings", _recordings),
]

LOCAL = ""  # the owner of everything on a machine with no accounts

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

    @property
    def score(self) -> float | None:
        return self.grade.score if self.grade is not None else None


@dataclass(frozen=True)
class TurnScore:
    """What the history needs of a turn: which prompt it answered, how, and its score."""

    session_id: str
    seq: int
    kind: TurnKind
    question_id: str | None
    followup_id: str | None
    score: float | None
    answered_at: float


@dataclass(frozen=True)
class SavedEndpoint:
    """A user's own model endpoint; the key is never shown back (``repr`` hides it)."""

    base_url: str | None
    model: str | None
    api_key: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class Recording:
    """A kept recording, without its audio (:meth:`Store.recording_audio` reads that)."""

    id: int
    session_id: str
    position: int
    turn_id: int | None  # None until an answer to the prompt it was recorded on is committed
    token: str
    created_at: float
    mime: str
    seconds: float | None
    transcript: str | None
    size: int  # bytes of audio


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
    owner: str = LOCAL
    endpoint: Literal["server", "own"] = "server"  # whose model grades it: the server's, or the owner's own


# A session's state is read from the store several times a turn, every turn with its grade and
# decision: the same stored JSON is parsed once (about 50 µs a grade) and its object shared, as the
# offline grader shares its readings (nothing changes a Grade or a Decision once made).
_grade_of = lru_cache(maxsize=4096)(Grade.model_validate_json)
_decision_of = lru_cache(maxsize=4096)(Decision.model_validate_json)


def _turn(row: Any) -> Turn:
    data = dict(row)
    data.pop("score", None)  # the column copies the grade's, for the history's reads (see TurnScore)
    try:
        data["grade"] = _grade_of(data["grade"]) if data["grade"] else None
        data["decision"] = _decision_of(data["decision"]) if data["decision"] else None
    except ValidationError as exc:
        raise StoreError(f"turn {data['seq']} of session {data['session_id']} cannot be read ({exc.errors()[0]['msg']})") from None
    return Turn(**data)


def _session(row: Any) -> SessionRow:
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
        owner=row["owner"],
        endpoint="own" if settings.get("endpoint") == "own" else "server",
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
    """Opened explicitly with :meth:`open`; nothing touches the disk or the network before that.

    On SQLite (the default, ``path``) each thread has its own connection: in WAL mode readers never
    wait for each other or for the writer, and writers queue on SQLite's own lock (busy timeout
    10 s), so many candidates' turns and the background grading do not take turns on one
    connection. With ``url`` (``postgresql://…``) the store is a PostgreSQL database several app
    processes share (see :mod:`interviewer.interview.databases`)."""

    def __init__(self, path: Path, url: str | None = None):
        self.path = path
        self.database = database_for(path, url)
        self._opened = False
        self._local = threading.local()  # the connection of a transaction or snapshot under way

    def __str__(self) -> str:
        return str(self.database)

    def open(self) -> Store:
        if self._opened:
            return self
        self.database.open()
        self._opened = True
        self._migrate()
        return self

    def close(self) -> None:
        self.database.close()
        self._local = threading.local()
        self._opened = False

    @property
    def db(self) -> sqlite3.Connection:
        """This thread's SQLite connection (the SQLite store only: its tests read it directly)."""
        if not isinstance(self.database, SqliteDatabase):
            raise StoreError("the PostgreSQL store has no single connection")
        if not self._opened:
            self.open()
        return self.database.db

    @contextmanager
    def _held(self, opening: Callable[[], Any]) -> Iterator[Connection]:
        """Run ``opening``'s connection for this thread's reads until it closes."""
        if not self._opened:
            self.open()
        with opening() as db:
            self._local.db = db
            try:
                yield db
            finally:
                self._local.db = None

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """One write transaction (see the engines' ``transaction``); reads made inside it see it."""
        with self._held(self.database.transaction) as db:
            yield db

    @contextmanager
    def _reading(self) -> Iterator[Connection]:
        current: Connection | None = getattr(self._local, "db", None)
        if current is not None:
            yield current
            return
        if not self._opened:
            self.open()
        with self.database.connection() as db:
            yield db

    def _all(self, sql: str, parameters: Any = ()) -> list[Any]:
        with self._reading() as db:
            return db.execute(sql, parameters).fetchall()

    def _one(self, sql: str, parameters: Any = ()) -> Any:
        with self._reading() as db:
            return db.execute(sql, parameters).fetchone()

    def _migrate(self) -> None:
        with self.transaction() as db:
            db.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
            done = {row[0] for row in db.execute("SELECT name FROM migrations")}
            for name, apply in MIGRATIONS:
                if name not in done:
                    apply(db)
                    db.execute("INSERT INTO migrations VALUES (?, ?)", (name, time.time()))

    def applied_migrations(self) -> list[str]:
        return [row[0] for row in self._all("SELECT name FROM migrations ORDER BY name")]

    # -- sessions ------------------------------------------------------------------------------
    def create_session(
        self,
        mode: str,
        lang: str,
        plan: Plan,
        grader: str,
        max_followups: int,
        now: float,
        owner: str = LOCAL,
        endpoint: Literal["server", "own"] = "server",
    ) -> SessionRow:
        session_id = uuid.uuid4().hex[:12]
        settings = {"grader": grader, "max_followups": max_followups, "endpoint": endpoint}
        with self.transaction() as db:
            db.execute(
                "INSERT INTO sessions (id, created_at, updated_at, status, mode, lang, plan, settings, prompt_shown_at, owner)"
                " VALUES (?, ?, ?, 'active', ?, ?, ?, ?, ?, ?)",
                (session_id, now, now, mode, lang, json.dumps(plan.as_dict()), json.dumps(settings), now, owner),
            )
        return self.session(session_id)

    def session(self, session_id: str) -> SessionRow:
        row = self._one("SELECT * FROM sessions WHERE id = ?", (session_id,))
        if row is None:
            raise StoreError(f"no session '{session_id}' (see `interviewer sessions`)")
        return _session(row)

    def sessions(self, owner: str = LOCAL, limit: int | None = None, offset: int = 0) -> list[SessionRow]:
        """The owner's sessions, newest first: all of them, or one page of ``limit``."""
        rows = self._all(
            "SELECT * FROM sessions WHERE owner = ? ORDER BY created_at DESC, id LIMIT ? OFFSET ?",
            (owner, 2**62 if limit is None else limit, offset),
        )
        return [_session(r) for r in rows]

    def count_sessions(self, owner: str = LOCAL) -> int:
        return int(self._one("SELECT COUNT(*) FROM sessions WHERE owner = ?", (owner,))[0])

    def owner_of(self, session_id: str) -> str | None:
        """Whose session this is (None: there is no such session)."""
        row = self._one("SELECT owner FROM sessions WHERE id = ?", (session_id,))
        return None if row is None else str(row[0])

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
            row = db.execute(
                "INSERT INTO turns (session_id, seq, kind, question_id, followup_id, round, attempt, answer, asked, asked_by,"
                " asked_at, answered_at, status) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING *",
                (session_id, seq, kind, question_id, followup_id, round_, attempt, answer, asked, asked_by, asked_at, now, status),
            ).fetchone()
            if kind != "summary":  # what was said aloud for this prompt belongs to its answer
                db.execute(
                    "UPDATE recordings SET turn_id = ? WHERE session_id = ? AND position = ? AND turn_id IS NULL",
                    (row["id"], session_id, last),
                )
            shown = ", prompt_shown_at = ?" if status == "none" else ""
            ended = ", status = 'finished'" if finished else ""
            values: tuple[Any, ...] = (now, now) if status == "none" else (now,)
            db.execute(f"UPDATE sessions SET updated_at = ?{shown}{ended} WHERE id = ?", (*values, session_id))
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
                "UPDATE turns SET status = 'graded', grade = ?, score = ?, grader = ?, grader_version = ?, rubric_version = ?,"
                " graded_at = ?, grading_ms = ?, decision = COALESCE(?, decision) WHERE id = ? AND status = 'pending'",
                (
                    grade.model_dump_json(),
                    grade.score,
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
            owner = db.execute(
                "SELECT s.owner FROM sessions s JOIN turns t ON t.session_id = s.id WHERE t.id = ?", (record.turn_id,)
            ).fetchone()[0]
            for key, question_id, quality in record.reviews:
                row = db.execute("SELECT * FROM reviews WHERE owner = ? AND key = ?", (owner, key)).fetchone()
                previous = _schedule(row) if row is not None else Schedule(key=key, question_id=question_id)
                _save_schedule(db, owner, review(previous, quality, record.now), record.now)
            if record.decision is not None:
                self._next_prompt_shown(db, record.turn_id, record.now, record.finished)
            else:
                db.execute(
                    "UPDATE sessions SET updated_at = ? WHERE id = (SELECT session_id FROM turns WHERE id = ?)",
                    (record.now, record.turn_id),
                )
        return True

    @staticmethod
    def _next_prompt_shown(db: Connection, turn_id: int, now: float, finished: bool) -> None:
        status = "'finished'" if finished else "status"
        db.execute(
            f"UPDATE sessions SET updated_at = ?, prompt_shown_at = ?, status = {status}"
            " WHERE id = (SELECT session_id FROM turns WHERE id = ?)",
            (now, now, turn_id),
        )

    def pending(self) -> list[tuple[str, int]]:
        """(session id, turn id) of every answer still waiting for its grade, oldest first: the
        grading work a restart resumes."""
        rows = self._all("SELECT session_id, id FROM turns WHERE status = 'pending' ORDER BY answered_at, id")
        return [(r[0], r[1]) for r in rows]

    def turn(self, turn_id: int) -> Turn:
        row = self._one("SELECT * FROM turns WHERE id = ?", (turn_id,))
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
        return [_turn(r) for r in self._all("SELECT * FROM turns WHERE session_id = ? ORDER BY seq", (session_id,))]

    def session_with_turns(self, session_id: str) -> tuple[SessionRow, list[Turn]]:
        """A session and its turns as of one moment (one read transaction)."""
        with self._held(self.database.snapshot):
            return self.session(session_id), self.turns(session_id)

    def turns_of(self, session_ids: list[str]) -> dict[str, list[Turn]]:
        """These sessions' turns, whole, in one query (the progress of one page of sessions)."""
        by_session: dict[str, list[Turn]] = {session_id: [] for session_id in session_ids}
        if not session_ids:
            return by_session
        marks = ", ".join("?" * len(session_ids))
        for row in self._all(f"SELECT * FROM turns WHERE session_id IN ({marks}) ORDER BY session_id, seq", session_ids):
            by_session[row["session_id"]].append(_turn(row))
        return by_session

    def scores_of(self, session_ids: list[str]) -> dict[str, list[TurnScore]]:
        """These sessions' turns as the history needs them (no grade is parsed), in one query."""
        by_session: dict[str, list[TurnScore]] = {session_id: [] for session_id in session_ids}
        if not session_ids:
            return by_session
        marks = ", ".join("?" * len(session_ids))
        rows = self._all(
            f"SELECT session_id, seq, kind, question_id, followup_id, score, answered_at FROM turns WHERE session_id IN ({marks})"
            " ORDER BY session_id, seq",
            session_ids,
        )
        for row in rows:
            by_session[row[0]].append(TurnScore(*row))
        return by_session

    def latest_scores(self, question_ids: list[str], owner: str = LOCAL) -> dict[str, float]:
        """Each question's latest graded main-answer score across the owner's sessions: one lookup a
        question, walking its answers newest first on ``turns_by_question`` until one is the owner's
        (a window over every answer took 160 ms at 2,000 sessions)."""
        latest: dict[str, float] = {}
        for question_id in question_ids:
            row = self._one(
                "SELECT t.score FROM turns t JOIN sessions s ON s.id = t.session_id WHERE t.question_id = ? AND s.owner = ?"
                " AND t.followup_id IS NULL AND t.score IS NOT NULL ORDER BY t.answered_at DESC, t.id DESC LIMIT 1",
                (question_id, owner),
            )
            if row is not None:
                latest[question_id] = float(row[0])
        return latest

    # -- recordings --------------------------------------------------------------------------------
    def add_recording(
        self, session_id: str, position: int, mime: str, audio: bytes, seconds: float | None, transcript: str | None, now: float
    ) -> Recording:
        """Keep a recording made on the prompt after turn ``position``; the answer committed to that
        prompt takes it (see :meth:`add_turn`)."""
        with self.transaction() as db:
            row = db.execute(
                "INSERT INTO recordings (session_id, position, token, created_at, mime, seconds, transcript, audio)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (session_id, position, uuid.uuid4().hex, now, mime, seconds, transcript, audio),
            ).fetchone()
        return self.recording(int(row[0]))

    def replace_audio(self, recording_id: int, mime: str, audio: bytes) -> None:
        """The recording compacted (see ``speech.compact_recording``)."""
        with self.transaction() as db:
            db.execute("UPDATE recordings SET mime = ?, audio = ? WHERE id = ?", (mime, audio, recording_id))

    def set_transcript(self, recording_id: int, transcript: str) -> None:
        with self.transaction() as db:
            db.execute("UPDATE recordings SET transcript = ? WHERE id = ?", (transcript, recording_id))

    _RECORDING = "SELECT id, session_id, position, turn_id, token, created_at, mime, seconds, transcript, LENGTH(audio) FROM recordings"

    def recording(self, recording_id: int) -> Recording:
        row = self._one(f"{self._RECORDING} WHERE id = ?", (recording_id,))
        if row is None:
            raise StoreError(f"no recording {recording_id}")
        return Recording(*row)

    def recordings(self, session_id: str) -> list[Recording]:
        """The session's recordings, oldest first (their audio left in the database)."""
        return [Recording(*row) for row in self._all(f"{self._RECORDING} WHERE session_id = ? ORDER BY id", (session_id,))]

    def recording_audio(self, recording_id: int) -> bytes:
        row = self._one("SELECT audio FROM recordings WHERE id = ?", (recording_id,))
        if row is None:
            raise StoreError(f"no recording {recording_id}")
        return bytes(row[0])

    # -- the review schedule (spaced repetition) -------------------------------------------------
    def review(self, key: str, owner: str = LOCAL) -> Schedule | None:
        row = self._one("SELECT * FROM reviews WHERE owner = ? AND key = ?", (owner, key))
        return None if row is None else _schedule(row)

    def reviews(self, owner: str = LOCAL) -> list[Schedule]:
        """The owner's scheduled criteria, soonest due first, then hardest (lowest easiness, then lowest last
        quality), then by key: the same order on both engines, ties included."""
        rows = self._all("SELECT * FROM reviews WHERE owner = ? ORDER BY due_at, easiness, last_quality, key", (owner,))
        return [_schedule(r) for r in rows]

    # -- accounts --------------------------------------------------------------------------------
    def users(self) -> list[str]:
        return [row[0] for row in self._all("SELECT name FROM users ORDER BY created_at, name")]

    def password_hash(self, name: str) -> str | None:
        row = self._one("SELECT password_hash FROM users WHERE name = ?", (name,))
        return None if row is None else str(row[0])

    def add_user(self, name: str, password_hash: str, now: float) -> bool:
        """A new account; the first one takes over what the local user had (sessions, reviews, model).
        False when the name is taken."""
        with self.transaction() as db:
            if db.execute("SELECT 1 FROM users WHERE name = ?", (name,)).fetchone() is not None:
                return False
            first = db.execute("SELECT COUNT(*) FROM users").fetchone()[0] == 0
            db.execute("INSERT INTO users VALUES (?, ?, ?)", (name, password_hash, now))
            if first:
                for table in ("sessions", "reviews", "user_endpoints"):
                    db.execute(f"UPDATE {table} SET owner = ? WHERE owner = ?", (name, LOCAL))
        return True

    def set_password(self, name: str, password_hash: str) -> bool:
        with self.transaction() as db:
            return db.execute("UPDATE users SET password_hash = ? WHERE name = ?", (password_hash, name)).rowcount == 1

    def remove_user(self, name: str) -> list[str] | None:
        """Delete the account and everything it owns; the ids of its sessions (None: no such user)."""
        with self.transaction() as db:
            if db.execute("DELETE FROM users WHERE name = ?", (name,)).rowcount == 0:
                return None
            ids = [row[0] for row in db.execute("SELECT id FROM sessions WHERE owner = ?", (name,))]
            db.execute("DELETE FROM turns WHERE session_id IN (SELECT id FROM sessions WHERE owner = ?)", (name,))
            for table in ("sessions", "reviews", "user_endpoints"):
                db.execute(f"DELETE FROM {table} WHERE owner = ?", (name,))
        return ids

    def save_endpoint(self, owner: str, endpoint: SavedEndpoint, now: float) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT INTO user_endpoints VALUES (?, ?, ?, ?, ?) ON CONFLICT (owner) DO UPDATE SET"
                " base_url = excluded.base_url, model = excluded.model, api_key = excluded.api_key, updated_at = excluded.updated_at",
                (owner, endpoint.base_url, endpoint.model, endpoint.api_key, now),
            )

    def saved_endpoint(self, owner: str) -> SavedEndpoint | None:
        row = self._one("SELECT base_url, model, api_key FROM user_endpoints WHERE owner = ?", (owner,))
        return None if row is None else SavedEndpoint(row[0], row[1], row[2])

    def server_secret(self, name: str, proposed: str) -> str:
        """The deployment's secret called ``name``: the one stored, or else ``proposed``, stored now.
        Processes that start at once agree: the first to commit wins, the others read its value."""
        with self.transaction() as db:
            db.execute("INSERT INTO server_secrets VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING", (name, proposed, time.time()))
            return str(db.execute("SELECT value FROM server_secrets WHERE name = ?", (name,)).fetchone()[0])

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
            "recordings": [{k: v for k, v in r.__dict__.items() if k != "token"} for r in self.recordings(session_id)],
        }


def _schedule(row: Any) -> Schedule:
    data = dict(row)
    data.pop("updated_at")
    data.pop("owner")
    return Schedule(**data)


def _save_schedule(db: Connection, owner: str, s: Schedule, now: float) -> None:
    db.execute(
        "INSERT INTO reviews (owner, key, question_id, easiness, repetitions, interval_days, due_at, last_quality, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (owner, key) DO UPDATE SET easiness = excluded.easiness,"
        " repetitions = excluded.repetitions, interval_days = excluded.interval_days, due_at = excluded.due_at,"
        " last_quality = excluded.last_quality, updated_at = excluded.updated_at",
        (owner, s.key, s.question_id, s.easiness, s.repetitions, s.interval_days, s.due_at, s.last_quality, now),
    )
