"""The session engine: the whole loop, modes, pacing, persistence, and never losing an answer."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from interviewer.errors import InterviewerError
from interviewer.faces.batch import Graders
from interviewer.faces.simulate import result, run
from interviewer.interview.session import Session, SessionError, make_plan, weak_plan
from interviewer.interview.store import Store, StoreError
from interviewer.settings import Settings
from tests.conftest import DEV, Q16, dev_candidate


@pytest.fixture(scope="module")
def graders() -> Graders:
    return Graders(Settings())


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store(tmp_path / "sessions.db").open()


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.skipif(not DEV.exists(), reason="needs ../shared/eval/dev-answers.jsonl")
def test_expert_mid_and_novice_candidates_are_ordered_and_repeatable(graders: Graders, store: Store) -> None:
    overall = {}
    for kind, q16 in (("expert", Q16["expert"]), ("solid", Q16["mid"]), ("weak", Q16["novice"])):
        first = result(run(store, graders.bank, graders.offline, dev_candidate(kind, q16), "zh", 2))
        again = result(run(store, graders.bank, graders.offline, dev_candidate(kind, q16), "zh", 2))
        assert first["overall"] == again["overall"] and first["questions"] == again["questions"]
        assert first["session_id"] != again["session_id"]
        assert len(first["questions"]) == 16 and all(q["score"] is not None for q in first["questions"])
        overall[kind] = first["overall"]
    assert overall["expert"] - overall["solid"] >= 1.0, overall
    assert overall["solid"] - overall["weak"] >= 2.0, overall
    assert overall["expert"] >= 7.5 and overall["weak"] <= 3.5, overall


def test_a_round_runs_question_followups_summary_end(graders: Graders, store: Store) -> None:
    session = Session.start(store, graders.bank, graders.offline, make_plan(graders.bank, "round", 2), lang="en")
    seen = []
    for _ in range(40):
        prompt = session.prompt()
        seen.append(prompt.kind)
        if prompt.kind == "end":
            break
        if prompt.kind == "round-summary":
            assert prompt.summary is not None and prompt.summary.round == 2
            session.continue_after_summary()
            continue
        assert prompt.text == (
            graders.bank.get(prompt.question_id).question.en  # type: ignore[arg-type]
            if prompt.kind == "question"
            else next(f for f in graders.bank.get(prompt.question_id).followups if f.id == prompt.followup_id).question.en  # type: ignore[arg-type]
        )
        outcome = session.submit("Use shared memory tiles and coalesced loads so each warp reads contiguous memory.")
        assert not outcome.show_feedback  # interview mode keeps scores for the round's end
    assert seen[0] == "question" and "followup" in seen and seen[-2:] == ["round-summary", "end"]
    assert seen.count("question") == 5
    assert store.session(session.id).status == "finished"


def test_practice_mode_shows_feedback_and_allows_a_retry(graders: Graders, store: Store) -> None:
    session = Session.start(store, graders.bank, graders.offline, make_plan(graders.bank, "question", "q02"), mode="practice")
    first = session.submit("ZeRO 是 DeepSpeed 里省显存的技术。")
    assert first.show_feedback and first.grade.feedback
    better = session.submit(
        "ZeRO-1 切分优化器状态，每卡 4Ψ+12Ψ/N_d；ZeRO-2 再切梯度，反向用 reduce-scatter；ZeRO-3 再切参数，前向反向都要 "
        "all-gather，通信约 3Ψ，是数据并行的 1.5 倍，所以要预取下一层参数、让通信和计算重叠。",
        retry=True,
    )
    assert better.grade.score > first.grade.score
    attempts = [t.attempt for t in store.turns(session.id) if t.followup_id is None and t.kind == "answer"]
    assert attempts == [1, 2]
    assert session.scores().question("q02").main == better.grade.score


def test_retry_is_refused_in_interview_mode(graders: Graders, store: Store) -> None:
    session = Session.start(store, graders.bank, graders.offline, make_plan(graders.bank, "question", "q02"))
    session.submit("ZeRO 省显存。")
    with pytest.raises(SessionError, match="practice"):
        session.submit("again", retry=True)


def test_skip_and_dont_know_are_scored_and_move_on(graders: Graders, store: Store) -> None:
    session = Session.start(store, graders.bank, graders.offline, make_plan(graders.bank, "round", 1))
    skipped = session.skip()
    assert skipped.grade.score == 0 and "skipped" in skipped.grade.flags
    assert skipped.next.question_id == "q02" and skipped.next.kind == "question"
    unknown = session.dont_know()
    assert unknown.grade.score == 0 and unknown.next.question_id == "q03"
    scores = session.scores()
    assert scores.question("q01").skipped and scores.question("q01").score == 0
    assert scores.question("q03").score is None


def test_the_rounds_clock_runs_and_ends_follow_ups(graders: Graders, store: Store) -> None:
    clock = FakeClock()
    session = Session.start(store, graders.bank, graders.offline, make_plan(graders.bank, "round", 1), clock=clock)
    assert session.prompt().time_left_s == 120 * 60
    clock.now += 600
    assert session.prompt().time_left_s == 120 * 60 - 600
    clock.now += 120 * 60  # far over time
    outcome = session.submit("数据并行每卡一份模型，梯度 all-reduce。")
    assert outcome.decision is not None and outcome.decision.action == "move-on" and "time" in outcome.decision.reason
    assert outcome.next.kind == "question" and outcome.next.question_id == "q02"
    assert outcome.notices


def test_two_sessions_in_one_process_never_mix(graders: Graders, store: Store) -> None:
    a = Session.start(store, graders.bank, graders.offline, make_plan(graders.bank, "round", 1))
    b = Session.start(store, graders.bank, graders.offline, make_plan(graders.bank, "round", 3), lang="en")
    a.submit("answer from A about data parallel all-reduce")
    b.submit("answer from B about Kubernetes gang scheduling")
    a.skip()
    assert {t.answer for t in store.turns(a.id) if t.answer} == {"answer from A about data parallel all-reduce"}
    assert {t.answer for t in store.turns(b.id) if t.answer} == {"answer from B about Kubernetes gang scheduling"}
    assert a.prompt().round == 1 and b.prompt().round == 3


def test_resume_in_a_new_store_continues_where_it_stopped(graders: Graders, tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    first = Store(path).open()
    session = Session.start(first, graders.bank, graders.offline, make_plan(graders.bank, "round", 1))
    session.skip()
    before = session.prompt()
    first.close()
    resumed = Session.resume(Store(path).open(), graders.bank, graders.offline, session.id)
    after = resumed.prompt()
    assert (after.kind, after.question_id, after.followup_id) == (before.kind, before.question_id, before.followup_id)


CRASH = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from interviewer.faces.batch import Graders
    from interviewer.settings import Settings
    from interviewer.interview.session import Session, make_plan
    from interviewer.interview.store import Store

    class SlowGrader:
        name = "slow"
        def __init__(self, inner): self.inner = inner
        def grade(self, question, answer, lang=None):
            print("GRADING", flush=True)
            time.sleep(60)
            return self.inner.grade(question, answer, lang)
        def grade_followup(self, *args, **kwargs): return self.inner.grade_followup(*args, **kwargs)

    graders = Graders(Settings())
    store = Store(Path(sys.argv[1])).open()
    session = Session.start(store, graders.bank, SlowGrader(graders.offline), make_plan(graders.bank, "round", 1))
    print("SESSION", session.id, flush=True)
    session.submit(sys.argv[2])
    """
)


def test_an_answer_survives_kill_9_during_grading(graders: Graders, tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    answer = "数据并行每张卡一份完整模型，切分 batch，反向后梯度 all-reduce；张量并行层内切权重；流水线并行按层切 stage。"
    process = subprocess.Popen([sys.executable, "-c", CRASH, str(path), answer], stdout=subprocess.PIPE, text=True, env=dict(os.environ))
    assert process.stdout is not None
    session_id = process.stdout.readline().split()[1]
    deadline = time.time() + 60
    while process.stdout.readline().strip() != "GRADING":
        assert time.time() < deadline
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)

    store = Store(path).open()
    (pending,) = store.turns(session_id)
    assert pending.status == "pending" and pending.answer == answer
    session = Session.resume(store, graders.bank, graders.offline, session_id)
    (graded,) = store.turns(session_id)
    assert graded.status == "graded" and graded.grade is not None and graded.grade["score"] > 0
    assert graded.grader == "offline" and graded.rubric_version == graders.bank.get("q01").version
    assert session.prompt().question_id == "q01" and session.prompt().kind in {"followup", "question"}


def test_migrations_are_named_and_applied_once(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db").open()
    assert store.applied_migrations() == ["0001_initial", "0002_review_schedule"]
    store.close()
    again = Store(tmp_path / "s.db").open()
    assert again.applied_migrations() == ["0001_initial", "0002_review_schedule"]
    mode = again.db.execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_a_damaged_database_is_reported_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 5000)
    before = path.read_bytes()
    with pytest.raises(StoreError, match="damaged") as caught:
        Store(path).open()
    assert "left as it is" in str(caught.value)
    assert path.read_bytes() == before


def test_export_and_delete(graders: Graders, store: Store) -> None:
    session = Session.start(store, graders.bank, graders.offline, make_plan(graders.bank, "question", "q05"))
    session.submit("先看是前向、反向还是优化器阶段 OOM，再用 memory_summary 看显存构成。")
    exported: dict[str, Any] = json.loads(json.dumps(store.export(session.id)))
    assert exported["session"]["id"] == session.id
    assert exported["turns"][0]["answer"].startswith("先看") and exported["turns"][0]["grade"]["score"] >= 0
    assert exported["session"]["settings"]["grader"] == "offline"
    store.delete_session(session.id)
    with pytest.raises(InterviewerError, match="no session"):
        store.session(session.id)
    assert store.turns(session.id) == []


def test_weak_points_drill_picks_the_lowest_scored_questions(graders: Graders, store: Store) -> None:
    with pytest.raises(SessionError, match="no weak points"):
        weak_plan(store, graders.bank)
    session = Session.start(store, graders.bank, graders.offline, make_plan(graders.bank, "round", 1))
    session.skip()  # q01: 0
    session.submit("ZeRO-1 切分优化器状态，ZeRO-2 再切梯度，ZeRO-3 再切参数，通信约 1.5 倍，靠预取和重叠。")
    plan = weak_plan(store, graders.bank)
    assert plan.kind == "weak" and plan.questions[0] == "q01"
    drill = Session.start(store, graders.bank, graders.offline, plan, mode="practice")
    assert drill.prompt().question_id == "q01" and drill.prompt().time_left_s is None


def test_an_old_database_is_migrated_in_place(tmp_path: Path) -> None:
    """A store made before the review schedule existed gains it, and keeps its sessions."""
    import sqlite3

    from interviewer.interview.store import MIGRATIONS

    path = tmp_path / "old.db"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("CREATE TABLE migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
    MIGRATIONS[0][1](db)
    db.execute("INSERT INTO migrations VALUES ('0001_initial', 0)")
    plan = json.dumps({"kind": "full", "label": "x", "questions": []})
    db.execute("INSERT INTO sessions VALUES ('old1', 0, 0, 'finished', 'interview', 'zh', ?, '{}', 0)", (plan,))
    db.close()
    store = Store(path).open()
    assert store.applied_migrations() == ["0001_initial", "0002_review_schedule"]
    assert store.session("old1").status == "finished" and store.reviews() == []
