"""The session: its state replayed from the turns, the engine's moves, pacing, persistence, never
losing an answer, and databases written by earlier versions."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from interviewer.errors import InterviewerError
from interviewer.faces.simulate import result, run
from interviewer.interview.databases import PostgresDatabase
from interviewer.interview.engine import Engine, SessionError
from interviewer.interview.plan import make_plan
from interviewer.interview.state import SessionState
from interviewer.interview.store import MIGRATIONS, Store, StoreError
from interviewer.services import Services
from tests.conftest import Q16, FakeClock, dev_candidate

DATA = Path(__file__).parent / "data"
GOOD_Q01 = "数据并行每张卡一份完整模型，切分 batch，反向后梯度 all-reduce；张量并行层内切权重；流水线并行按层切 stage。"


def test_expert_mid_and_novice_candidates_are_ordered_and_repeatable(engine: Engine) -> None:
    overall = {}
    for kind, q16 in (("expert", Q16["expert"]), ("solid", Q16["mid"]), ("weak", Q16["novice"])):
        first = result(run(engine, dev_candidate(kind, q16), "zh", 2))
        again = result(run(engine, dev_candidate(kind, q16), "zh", 2))
        assert first["overall"] == again["overall"] and first["questions"] == again["questions"]
        assert first["session_id"] != again["session_id"]
        assert len(first["questions"]) == 16 and all(q["score"] is not None for q in first["questions"])
        overall[kind] = first["overall"]
    assert overall["expert"] - overall["solid"] >= 1.0, overall
    assert overall["solid"] - overall["weak"] >= 2.0, overall
    assert overall["expert"] >= 7.5 and overall["weak"] <= 3.5, overall


def test_a_round_runs_question_followups_summary_end(services: Services, engine: Engine, store: Store) -> None:
    state = engine.start(make_plan(services.bank, "round", 2), lang="en")
    seen = []
    for _ in range(40):
        prompt = state.prompt
        seen.append(prompt.kind)
        if prompt.kind == "end":
            break
        if prompt.kind == "round-summary":
            assert prompt.summary is not None and prompt.summary.round == 2
            state = engine.proceed(state.id)
            continue
        question = services.bank.get(prompt.question_id or "")
        scripted = (
            question.question.en
            if prompt.kind == "question"
            else next(f for f in question.followups if f.id == prompt.followup_id).question.en
        )
        assert prompt.text == scripted and prompt.asked_by == ("bank" if prompt.kind == "question" else "scripted")
        outcome = engine.submit(state.id, "Use shared memory tiles and coalesced loads so each warp reads contiguous memory.")
        assert not outcome.show_feedback  # interview mode keeps scores for the round's end
        state = outcome.state
    assert seen[0] == "question" and "followup" in seen and seen[-2:] == ["round-summary", "end"]
    assert seen.count("question") == 5
    assert store.session(state.id).status == "finished"
    # every answered turn keeps the words it was asked with
    assert all(t.asked and t.asked_by in {"bank", "scripted"} for t in store.turns(state.id) if t.kind == "answer")


def test_reading_the_state_writes_nothing(services: Services, engine: Engine, store: Store) -> None:
    state = engine.start(make_plan(services.bank, "question", "q02"))
    engine.submit(state.id, "ZeRO-3 切分参数，前向反向都要 all-gather。")
    while (state := engine.state(state.id)).prompt.kind != "end":
        state = engine.skip(state.id).state
    sqlite = not store.database.postgres
    before = store.db.total_changes if sqlite else None  # every row this connection ever inserted, updated or deleted
    contents = everything(store)
    for _ in range(3):
        replayed = engine.state(state.id)
        assert replayed.prompt.kind == "end" and replayed.scores.overall is not None and replayed.exchanges
    assert everything(store) == contents
    if sqlite:
        assert store.db.total_changes == before
        assert store.db.in_transaction is False


def everything(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    with store.database.connection() as db:
        return {table: [tuple(row) for row in db.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()] for table in TABLES}


TABLES = ("sessions", "turns", "reviews", "users", "user_endpoints", "migrations")


def test_practice_mode_shows_feedback_and_allows_a_retry(services: Services, engine: Engine, store: Store) -> None:
    state = engine.start(make_plan(services.bank, "question", "q02"), mode="practice")
    first = engine.submit(state.id, "ZeRO 是 DeepSpeed 里省显存的技术。")
    assert first.show_feedback and first.grade.feedback
    better = engine.retry(
        state.id,
        "ZeRO-1 切分优化器状态，每卡 4Ψ+12Ψ/N_d；ZeRO-2 再切梯度，反向用 reduce-scatter；ZeRO-3 再切参数，前向反向都要 "
        "all-gather，通信约 3Ψ，是数据并行的 1.5 倍，所以要预取下一层参数、让通信和计算重叠。",
    )
    assert better.grade.score > first.grade.score
    attempts = [t.attempt for t in store.turns(state.id) if t.followup_id is None and t.kind == "answer"]
    assert attempts == [1, 2]
    assert better.state.scores.question("q02").main == better.grade.score


def test_retry_is_refused_in_interview_mode(services: Services, engine: Engine) -> None:
    state = engine.start(make_plan(services.bank, "question", "q02"))
    engine.submit(state.id, "ZeRO 省显存。")
    with pytest.raises(SessionError, match="practice"):
        engine.retry(state.id, "again")


def test_skip_and_dont_know_are_scored_and_move_on(services: Services, engine: Engine) -> None:
    state = engine.start(make_plan(services.bank, "round", 1))
    skipped = engine.skip(state.id)
    assert skipped.grade.score == 0 and "skipped" in skipped.grade.flags
    assert skipped.next.question_id == "q02" and skipped.next.kind == "question"
    unknown = engine.dont_know(state.id)
    assert unknown.grade.score == 0 and unknown.next.question_id == "q03"
    scores = unknown.state.scores
    assert scores.question("q01").skipped and scores.question("q01").score == 0
    assert scores.question("q03").score is None
    assert scores.answered == 0  # a skip or an "I don't know" is not an answer


def test_the_rounds_clock_runs_and_ends_follow_ups(services: Services, engine: Engine, clock: FakeClock) -> None:
    state = engine.start(make_plan(services.bank, "round", 1))
    assert state.prompt.time_left_s == 120 * 60
    clock.now += 600
    assert engine.state(state.id).prompt.time_left_s == 120 * 60 - 600
    clock.now += 120 * 60  # far over time
    outcome = engine.submit(state.id, "数据并行每卡一份模型，梯度 all-reduce。")
    assert outcome.decision is not None and outcome.decision.action == "move-on" and "time" in outcome.decision.reason
    assert outcome.next.kind == "question" and outcome.next.question_id == "q02"
    assert outcome.notices


def test_two_sessions_in_one_process_never_mix(services: Services, engine: Engine, store: Store) -> None:
    a = engine.start(make_plan(services.bank, "round", 1))
    b = engine.start(make_plan(services.bank, "round", 3), lang="en")
    engine.submit(a.id, "answer from A about data parallel all-reduce")
    engine.submit(b.id, "answer from B about Kubernetes gang scheduling")
    engine.skip(a.id)
    assert {t.answer for t in store.turns(a.id) if t.answer} == {"answer from A about data parallel all-reduce"}
    assert {t.answer for t in store.turns(b.id) if t.answer} == {"answer from B about Kubernetes gang scheduling"}
    assert engine.state(a.id).prompt.round == 1 and engine.state(b.id).prompt.round == 3


def test_resume_in_a_new_store_continues_where_it_stopped(services: Services, open_store: Callable[[], Store]) -> None:
    first = open_store()
    engine = Engine(first, services.bank, services.offline_grader)
    state = engine.start(make_plan(services.bank, "round", 1))
    before = engine.skip(state.id).next
    first.close()
    after = Engine(open_store(), services.bank, services.offline_grader).resume(state.id).prompt
    assert (after.kind, after.question_id, after.followup_id) == (before.kind, before.question_id, before.followup_id)


class CountingStore(Store):
    """Counts the reads of a session's turns and the write transactions."""

    def __init__(self, path: Path, url: str | None = None):
        super().__init__(path, url)
        self.turn_reads = 0
        self.writes = 0

    def turns(self, session_id: str) -> Any:
        self.turn_reads += 1
        return super().turns(session_id)

    def transaction(self) -> Any:
        self.writes += 1
        return super().transaction()


def test_one_submit_reads_the_turns_twice_and_writes_two_transactions(services: Services, tmp_path: Path) -> None:
    store = CountingStore(tmp_path / "counted.db").open()
    engine = Engine(store, services.bank, services.offline_grader)
    state = engine.start(make_plan(services.bank, "round", 1), mode="practice")
    store.turn_reads = store.writes = 0
    outcome = engine.submit(state.id, GOOD_Q01)
    assert (store.turn_reads, store.writes) == (2, 2)
    assert outcome.next.kind == "followup"
    # the grade, its decision and the schedule move arrived together
    (turn,) = store.turns(state.id)
    assert turn.grade is not None and turn.decision is not None and turn.decision.action == "ask"
    assert store.review(f"q01/{turn.grade.criteria[0].id}") is not None


def test_a_turn_graded_elsewhere_is_not_graded_or_scheduled_twice(services: Services, engine: Engine, store: Store) -> None:
    """A reload (or a second tab) that opens the session while its answer is graded finds it pending;
    whichever grading records first wins, the other changes nothing."""
    state = engine.start(make_plan(services.bank, "question", "q05"))
    prompt = state.prompt
    turn = store.add_turn(
        state.id, "answer", "q05", None, prompt.round, "先看是前向还是反向 OOM，再看 memory_summary。", prompt.text, "bank", 0.0, 1.0
    )
    assert engine.state(state.id).prompt.kind == "deciding"
    with pytest.raises(SessionError, match="still answering"):
        engine.submit(state.id, "a second answer while the first is decided")
    engine.open(state.id)  # decides and grades it
    schedules = {s.key: s for s in store.reviews()}
    assert engine.grade(turn.id) is None  # as a second worker would, late: nothing changes
    assert {s.key: s for s in store.reviews()} == schedules
    (graded,) = store.turns(state.id)
    assert graded.id == turn.id and graded.status == "graded"


CRASH = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from interviewer.interview.engine import Engine
    from interviewer.interview.plan import make_plan
    from interviewer.interview.store import Store
    from interviewer.services import Services
    from interviewer.settings import Settings

    class SlowGrader:
        name = "slow"
        def __init__(self, inner): self.inner = inner
        def grade(self, question, answer, lang=None):
            print("GRADING", flush=True)
            time.sleep(60)
            return self.inner.grade(question, answer, lang)
        def grade_followup(self, *args, **kwargs): return self.inner.grade_followup(*args, **kwargs)

    services = Services(Settings())
    engine = Engine(Store(Path(sys.argv[1]), sys.argv[3] or None).open(), services.bank, SlowGrader(services.offline_grader))
    state = engine.start(make_plan(services.bank, "round", 1))
    print("SESSION", state.id, flush=True)
    engine.submit(state.id, sys.argv[2])
    """
)


def test_an_answer_survives_kill_9_during_grading(services: Services, open_store: Callable[[], Store]) -> None:
    where = open_store()
    url = where.database.url if isinstance(where.database, PostgresDatabase) else ""
    args = [str(where.path), GOOD_Q01, url]
    process = subprocess.Popen([sys.executable, "-c", CRASH, *args], stdout=subprocess.PIPE, text=True, env=dict(os.environ))
    assert process.stdout is not None
    session_id = process.stdout.readline().split()[1]
    deadline = time.time() + 60
    while process.stdout.readline().strip() != "GRADING":
        assert time.time() < deadline
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)

    store = open_store()
    (pending,) = store.turns(session_id)
    assert pending.status == "pending" and pending.answer == GOOD_Q01
    state = Engine(store, services.bank, services.offline_grader).resume(session_id)
    (graded,) = store.turns(session_id)
    assert graded.status == "graded" and graded.grade is not None and graded.grade.score > 0
    assert graded.grader == "offline" and graded.rubric_version == services.bank.get("q01").version
    assert state.prompt.question_id == "q01" and state.prompt.kind in {"followup", "question"}


def test_migrations_are_named_and_applied_once(open_store: Callable[[], Store]) -> None:
    names = ["0001_initial", "0002_review_schedule", "0003_typed_turns", "0004_owners", "0005_server_secrets", "0006_recordings"]
    store = open_store()
    assert store.applied_migrations() == names
    store.close()
    again = open_store()
    assert again.applied_migrations() == names
    if not again.database.postgres:
        assert again.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_the_processes_of_one_deployment_share_the_browser_key(open_store: Callable[[], Store], tmp_path: Path) -> None:
    """A reload served by another process must read the session id the first one saved in the browser."""
    from interviewer.faces.web import browser_secret

    first, second = open_store(), open_store()
    (tmp_path / "second-home").mkdir()
    (tmp_path / "first-home").mkdir()
    (tmp_path / "first-home" / "browser-secret").write_text("kept-from-before\n", encoding="utf-8")
    assert browser_secret(first, tmp_path / "first-home") == "kept-from-before"  # a data folder's old key stays
    assert browser_secret(second, tmp_path / "second-home") == "kept-from-before"  # and every process reads it
    assert second.server_secret("browser-session", "another") == "kept-from-before"


def test_a_damaged_database_is_reported_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 5000)
    before = path.read_bytes()
    with pytest.raises(StoreError, match="damaged") as caught:
        Store(path).open()
    assert "left as it is" in str(caught.value)
    assert path.read_bytes() == before


def test_export_and_delete(services: Services, engine: Engine, store: Store) -> None:
    state = engine.start(make_plan(services.bank, "question", "q05"))
    engine.submit(state.id, "先看是前向、反向还是优化器阶段 OOM，再用 memory_summary 看显存构成。")
    exported: dict[str, Any] = json.loads(json.dumps(store.export(state.id)))
    assert exported["session"]["id"] == state.id
    assert exported["turns"][0]["answer"].startswith("先看") and exported["turns"][0]["grade"]["score"] >= 0
    assert exported["turns"][0]["asked"] == services.bank.get("q05").question.zh
    assert exported["session"]["grader"] == "offline"
    store.delete_session(state.id)
    with pytest.raises(InterviewerError, match="no session"):
        store.session(state.id)
    assert store.turns(state.id) == []


def test_an_old_database_is_migrated_in_place(tmp_path: Path) -> None:
    """A store made before the review schedule existed gains it, and keeps its sessions."""
    path = tmp_path / "old.db"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
    MIGRATIONS[0][1](db)
    db.execute("INSERT INTO migrations VALUES ('0001_initial', 0)")
    plan = json.dumps({"kind": "full", "label": "x", "questions": []})
    db.execute("INSERT INTO sessions VALUES ('old1', 0, 0, 'finished', 'interview', 'zh', ?, '{}', 0)", (plan,))
    db.close()
    store = Store(path).open()
    assert store.applied_migrations() == [
        "0001_initial",
        "0002_review_schedule",
        "0003_typed_turns",
        "0004_owners",
        "0005_server_secrets",
        "0006_recordings",
    ]
    assert store.session("old1").status == "finished" and store.reviews() == []
    assert store.session("old1").owner == "" and store.sessions() == [store.session("old1")]  # the local user's


def test_a_database_written_before_typed_turns_keeps_every_answer_grade_and_wording(services: Services, tmp_path: Path) -> None:
    """``data/sessions-0002.sql`` was written by the version before typed turns (schema 0002): a
    practice round with a follow-up the model worded, one whose wording failed (its fallback
    notice was saved as the question), a retry, a skip, an "I don't know", and an interview whose
    last answer was cut off during grading. ``.expected.json`` holds what the candidate saw."""
    path = tmp_path / "legacy.db"
    db = sqlite3.connect(path)
    db.executescript((DATA / "sessions-0002.sql").read_text(encoding="utf-8"))
    db.close()
    expected = json.loads((DATA / "sessions-0002.expected.json").read_text(encoding="utf-8"))
    store = Store(path).open()
    assert store.applied_migrations()[-4:] == ["0003_typed_turns", "0004_owners", "0005_server_secrets", "0006_recordings"]
    # the score column is the grade's score, for every old turn (the history reads it alone)
    for row in store.sessions():
        light = store.scores_of([row.id])[row.id]
        assert [t.score for t in light] == [t.score for t in store.turns(row.id)]
    engine = Engine(store, services.bank, services.offline_grader)
    seen = 0
    for row in store.sessions():
        state = SessionState(row, store.turns(row.id), services.bank, time.time())  # read only: the cut-off answer stays pending
        for exchange in state.exchanges:
            want = next(t for t in expected["turns"] if (t["session"], t["seq"]) == (row.id, exchange.turn.seq))
            turn = exchange.turn
            assert (turn.kind, turn.question_id, turn.followup_id, turn.answer, turn.attempt) == (
                want["kind"], want["question_id"], want["followup_id"], want["answer"], want["attempt"],
            )  # fmt: skip
            assert (turn.grade.score if turn.grade else None) == want["score"] and turn.status == want["status"]
            assert exchange.asked == want["asked"] and turn.asked_by == want["asked_by"], (turn.seq, exchange.asked)
            assert "模型追问失败" not in exchange.asked and "could not phrase" not in exchange.asked
            seen += 1
    assert seen == len(expected["turns"]) and len(store.reviews()) == expected["reviews"]
    # the cut-off answer is graded when its session is opened, and the interview goes on
    pending = next(t for t in expected["turns"] if t["status"] == "pending")
    opened = engine.open(pending["session"])
    assert all(t.status == "graded" for t in opened.turns) and opened.prompt.answerable


def test_weak_points_drill_picks_the_lowest_scored_questions(services: Services, engine: Engine, store: Store) -> None:
    from interviewer.application.plans import weak_plan
    from interviewer.interview.plan import PlanError

    with pytest.raises(PlanError, match="no weak points"):
        weak_plan(store, services.bank)
    state = engine.start(make_plan(services.bank, "round", 1))
    engine.skip(state.id)  # q01: 0
    engine.submit(state.id, "ZeRO-1 切分优化器状态，ZeRO-2 再切梯度，ZeRO-3 再切参数，通信约 1.5 倍，靠预取和重叠。")
    plan = weak_plan(store, services.bank)
    assert plan.kind == "weak" and plan.questions[0] == "q01"
    drill = engine.start(plan, mode="practice")
    assert drill.prompt.question_id == "q01" and drill.prompt.time_left_s is None


def test_a_follow_up_the_model_worded_stays_in_its_words_once_answered(services: Services, engine: Engine, store: Store) -> None:
    """The transcript, the report and the stored turn show the follow-up as the candidate saw it."""
    from interviewer.faces.web import Handlers
    from interviewer.interview import report as reports

    state = engine.start(make_plan(services.bank, "question", "q01"), mode="practice")
    outcome = engine.submit(state.id, GOOD_Q01)
    assert outcome.next.kind == "followup" and outcome.next.asked_by == "scripted"
    worded = "你提到张量并行放在节点内：1024 卡训练 175B 时 t、p、d 各取多少？"
    engine.record_wording(outcome.state, worded)
    assert engine.state(state.id).prompt.text == worded and engine.state(state.id).prompt.asked_by == "model"
    after = engine.submit(state.id, "t=8 在节点内，p=8 跨节点，d=16。").state
    turn = next(t for t in store.turns(state.id) if t.followup_id)
    assert (turn.asked, turn.asked_by) == (worded, "model")
    assert [e.asked for e in after.exchanges if e.is_followup] == [worded]
    report = reports.markdown(reports.build(after))
    scripted = next(f for f in services.bank.get("q01").followups if f.id == turn.followup_id).question.zh
    assert worded in report and scripted not in report
    view = Handlers(Services(services.settings, store=store)).view(after)
    assert any(worded in m["content"] for m in view.chat) and not any(scripted in m["content"] for m in view.chat)


def test_one_move_per_prompt_whatever_the_tabs_do(services: Services, engine: Engine, store: Store) -> None:
    """Four tabs submit for the prompt they all show at once: one answer is recorded against it, the
    others are refused and record nothing; a move made on a view that fell behind is refused too."""
    from concurrent.futures import ThreadPoolExecutor

    from interviewer.interview.store import StaleMove

    state = engine.start(make_plan(services.bank, "round", 1))
    shown = state.position

    def tab(n: int) -> str:
        try:
            engine.submit(state.id, f"{GOOD_Q01} (tab {n})", at=shown)
            return "recorded"
        except (StaleMove, SessionError):
            return "refused"

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(tab, range(4)))
    assert sorted(results) == ["recorded", "refused", "refused", "refused"]
    turns = store.turns(state.id)
    assert len(turns) == 1 and turns[0].question_id == "q01" and turns[0].followup_id is None and turns[0].status == "graded"
    with pytest.raises(StaleMove, match="already been answered"):
        engine.skip(state.id, at=shown)  # a second click on a view from before the answer
    assert len(store.turns(state.id)) == 1
    assert engine.skip(state.id, at=engine.state(state.id).position).turn_id  # the current view may move


def test_a_postgresql_that_goes_away_is_one_line_and_loses_nothing(services: Services, tmp_path: Path) -> None:
    """A server of its own, stopped mid-interview: the submit is refused in one line, the answers
    already stored stay, and once the server is back the same store goes on."""
    from tests.servers import PostgresServer

    server = PostgresServer().start()
    try:
        store = Store(tmp_path / "unused.db", server.new_database()).open()
        engine = Engine(store, services.bank, services.offline_grader)
        state = engine.start(make_plan(services.bank, "round", 1), mode="practice")
        engine.submit(state.id, GOOD_Q01)
        server.stop(keep=True)
        with pytest.raises(StoreError) as refused:
            engine.submit(state.id, "an answer while the database is down")
        message = str(refused.value)
        assert message.startswith("the session database postgresql://***@127.0.0.1:") or message.startswith(
            "the session database postgresql://postgres@127.0.0.1:"
        )
        assert "cannot be reached" in message and "\n" not in message
        server.start(initialise=False)
        assert [t.answer for t in store.turns(state.id)] == [GOOD_Q01]
        engine.submit(state.id, "after the restart: the follow-up answered")
        assert len(store.turns(state.id)) == 2
        store.close()
    finally:
        server.stop()
