"""The live interviewer (issue 13): the conversation never waits for a grade, follow-ups never ask
what the answer already covered, grades are background work done exactly once, and a hung model
costs a bounded wait. The model is a real HTTP server on 127.0.0.1 (tests/fake_openai.py)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from interviewer.application.grading import GradingWorker
from interviewer.content.rubric import FollowUp, Lang, Question
from interviewer.faces.web import Handlers
from interviewer.grading.grade import Grade
from interviewer.interview.engine import Engine
from interviewer.interview.followups import already_answered, covers
from interviewer.interview.plan import make_plan
from interviewer.interview.store import StaleMove, Store
from interviewer.services import Services
from interviewer.settings import EndpointSettings, InterviewSettings, LLMSettings, Settings
from tests.fake_openai import Recorded


def model_settings(base_url: str, home: Path, **llm: Any) -> Settings:
    return Settings(
        home=home,
        endpoint=EndpointSettings(base_url=base_url, api_key="sk-test", model="test-model"),
        llm=LLMSettings(structured_output="json_schema", max_retries=0, timeout_s=10, **llm),
        interview=InterviewSettings(live_budget_s=3, live_total_s=6),
    )


def grade_reply(question: Question | FollowUp, score: int = 2) -> str:
    """A model grade for every criterion of ``question`` (no quotes: the grader caps those at 1)."""
    criteria = [{"id": c.id, "score": score, "evidence": [], "missing": ["more"], "misconceptions": []} for c in question.criteria]
    return json.dumps({"criteria": criteria, "feedback": "model feedback"})


def covered_followups(services: Services, question: Question, answer: str) -> set[str]:
    """The follow-ups ``answer`` has already covered: its targets evidenced, or its own rubric met."""
    grade = services.offline_grader.grade(question, answer)
    return {
        f.id
        for f in question.followups
        if covers(f.targets, grade) or already_answered(services.offline_grader.grade_followup(question, f, answer))
    }


# -- follow-ups that listen ------------------------------------------------------------------------
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_no_follow_up_asks_what_the_answer_already_covered(services: Services, tmp_path: Path, lang: Lang) -> None:
    """Every question, answered with its reference answer (which covers much of what its follow-ups
    ask): no follow-up chosen, first or second, is one that answer had covered."""
    engine = Engine(Store(tmp_path / "s.db").open(), services.bank, services.offline_grader)
    excluded = 0
    for question in services.bank.questions:
        answer = question.reference_answer.get(lang)
        covered = covered_followups(services, question, answer)
        excluded += len(covered)
        state = engine.start(make_plan(services.bank, "question", question.id), lang=lang, max_followups=4)
        outcome = engine.submit(state.id, answer)
        for _ in range(2):
            assert outcome.decision.followup not in covered, (question.id, lang, outcome.decision)
            if outcome.next.kind != "followup":
                break
            outcome = engine.submit(state.id, "这个我只知道大概。" if lang == "zh" else "I only know this roughly.")
    assert excluded >= 20, "the reference answers cover a good number of follow-ups, so the test has teeth"


@pytest.mark.parametrize(
    "lang, answer",
    [
        ("zh", "175B 在 1024 张卡上：TP=8 放在节点内的 NVLink 上，PP=8 跨节点切 stage，DP=16 在最外层，"
               "8×8×16=1024。TP 通信最频繁所以不出节点；PP 只传激活，跨节点也可以；DP 梯度 all-reduce 可以和反向重叠。"),
        ("en", "For 175B on 1024 GPUs: TP=8 inside each node on NVLink, PP=8 across nodes, DP=16 outermost, "
               "8x8x16=1024. TP communicates every layer so it stays in the node; PP only sends activations across nodes; "
               "DP's gradient all-reduce overlaps the backward pass."),
    ],
)  # fmt: skip
def test_an_answer_that_gave_the_layout_is_not_asked_for_the_layout(services: Services, tmp_path: Path, lang: Lang, answer: str) -> None:
    """The issue's case: the answer gave t=8, p=8, d=16 for 1,024 GPUs; the follow-up asking how to set
    TP, PP and DP for 1,024 GPUs (q01-f1) is not asked."""
    engine = Engine(Store(tmp_path / "s.db").open(), services.bank, services.offline_grader)
    state = engine.start(make_plan(services.bank, "question", "q01"), lang=lang, max_followups=3)
    assert "q01-f1" in covered_followups(services, services.bank.get("q01"), answer)
    outcome = engine.submit(state.id, answer)
    assert outcome.decision.followup != "q01-f1"


def test_the_model_cannot_ask_a_follow_up_the_answer_covered(services: Services, server: tuple[str, Recorded], tmp_path: Path) -> None:
    from interviewer.interview.interviewer import LLMInterviewer

    base_url, recorded = server
    settings = model_settings(base_url, tmp_path)
    engine = Engine(Store(tmp_path / "s.db").open(), services.bank, services.offline_grader)
    question = services.bank.get("q01")
    answer = question.reference_answer.zh
    covered = covered_followups(services, question, answer)
    assert covered
    state = engine.start(make_plan(services.bank, "question", "q01"), max_followups=3)
    committed = engine.commit(state.id, "answer", answer)
    options = engine.options(committed)
    assert not covered & {f.id for f in options.allowed}  # not even offered
    recorded.streams = [{"stream": [f"ASK {sorted(covered)[0]}\n", "再讲讲你已经讲过的？"]}]
    spoken = list(LLMInterviewer(settings).live(options, question.question.zh, [], answer, "zh"))
    assert spoken[-1].move is None  # refused before a word was shown
    assert "Already covered or probed" in recorded.chat_requests()[0]["body"]["messages"][1]["content"]
    outcome = engine.decide(committed, spoken[-1].move, options)
    assert outcome.decision.followup not in covered


# -- grading in the background, exactly once -------------------------------------------------------
class GateGrader:
    """The offline grader behind a gate: grading waits until the test opens it; counts its calls."""

    name = "gated"

    def __init__(self, inner: Any):
        self.inner, self.offline = inner, inner
        self.gate = threading.Event()
        self.calls = 0
        self.lock = threading.Lock()

    def _wait(self) -> None:
        with self.lock:
            self.calls += 1
        assert self.gate.wait(30)

    def grade(self, question: Question, answer: str, lang: Lang | None = None) -> Grade:
        self._wait()
        return self.inner.grade(question, answer, lang)

    def grade_followup(self, question: Question, followup: FollowUp, answer: str, lang: Lang | None = None) -> Grade:
        self._wait()
        return self.inner.grade_followup(question, followup, answer, lang)


def test_the_interview_goes_on_while_the_grade_is_computed(services: Services, tmp_path: Path) -> None:
    from interviewer.application.turns import play
    from interviewer.interview.interviewer import ScriptedInterviewer

    grader = GateGrader(services.offline_grader)
    engine = Engine(Store(tmp_path / "s.db").open(), services.bank, grader)
    worker = GradingWorker(lambda _turn: engine, 4)
    state = engine.start(make_plan(services.bank, "round", 1), mode="interview")
    committed = engine.commit(state.id, "answer", services.bank.get("q01").reference_answer.zh)
    steps = list(play(engine, ScriptedInterviewer(), committed, worker))  # returns though no grade can finish yet
    after = steps[-1].state
    assert after.prompt.kind in {"followup", "question"} and after.prompt.question_id in {"q01", "q02"}
    assert [t.status for t in after.turns] == ["pending"]  # asked on, ungraded yet
    grader.gate.set()
    assert worker.wait(after.turns[0].id, 10) is not None
    assert grader.calls == 1 and engine.state(state.id).turns[0].status == "graded"


def test_a_restart_grades_what_was_pending_exactly_once(services: Services, tmp_path: Path) -> None:
    """Answers left pending by a dead process are graded by the next one, once each, even when two
    workers (two processes) resume them at the same moment; each review schedule moves once."""
    path = tmp_path / "s.db"
    first = Engine(Store(path).open(), services.bank, GateGrader(services.offline_grader))
    sessions = []
    for _ in range(5):  # five candidates answered; the process died before any grade
        state = first.start(make_plan(services.bank, "question", "q05"))
        first.decide(first.commit(state.id, "answer", "先看是前向、反向还是优化器阶段 OOM，再用 memory_summary 看显存构成。"))
        sessions.append(state.id)
    assert len(first.store.pending()) == 5
    grader = GateGrader(services.offline_grader)
    restarted = [Engine(Store(path).open(), services.bank, grader) for _ in range(2)]
    workers = [GradingWorker(lambda _turn, engine=engine: engine, 4) for engine in restarted]
    assert [w.resume(e.store) for w, e in zip(workers, restarted, strict=True)] == [5, 5]
    grader.gate.set()
    for worker in workers:
        for _, turn_id in Store(path).open().pending() or []:
            worker.wait(turn_id, 10)
    deadline = time.monotonic() + 10
    while Store(path).open().pending() and time.monotonic() < deadline:
        time.sleep(0.05)
    store = Store(path).open()
    assert store.pending() == []
    turns = [t for s in sessions for t in store.turns(s)]
    assert len(turns) == 5 and all(t.status == "graded" and t.grade is not None for t in turns)
    reviews = [r for r in store.reviews() if r.question_id == "q05"]
    assert reviews and all(r.repetitions <= 1 for r in reviews)  # five answers, one move per criterion and answer
    recorded_grades = store.db.execute("SELECT COUNT(*) FROM turns WHERE graded_at IS NOT NULL").fetchone()[0]
    assert recorded_grades == 5


def test_a_hung_model_grade_falls_back_within_its_budget(services: Services, server: tuple[str, Recorded], tmp_path: Path) -> None:
    base_url, recorded = server
    grading = Services(model_settings(base_url, tmp_path, grade_budget_s=1.0), store=Store(tmp_path / "s.db").open())
    question = services.bank.get("q02")
    recorded.script = [{"delay": 8, "content": grade_reply(question)}]
    grading.model_grader.offline.grade(question, "预热")  # the offline reading's first use builds its parts
    started = time.monotonic()
    grade = grading.model_grader.grade(question, "ZeRO-1 切分优化器状态，ZeRO-2 再切梯度，ZeRO-3 再切参数。")
    assert time.monotonic() - started < 6  # the budget (1 s), not the model's 8 s
    assert "llm-fallback" in grade.flags and grade.grader == "offline" and "budget" in grade.feedback


# -- the web app with a model ----------------------------------------------------------------------
def test_the_next_words_come_before_the_grade_and_the_card_after(server: tuple[str, Recorded], tmp_path: Path) -> None:
    base_url, recorded = server
    handlers = Handlers(Services(model_settings(base_url, tmp_path)))
    q01 = handlers.services.bank.get("q01")
    recorded.script = [{"delay": 2.0, "content": grade_reply(q01)}]  # the grade takes 2 s
    recorded.streams = [{"stream": ["NEXT"]}]  # the interviewer moves on at once
    view = handlers.start("round 1", None, None, "practice", "en")
    committed = handlers.commit(view.session_id, "Data parallel copies the model and all-reduces gradients.", at=view.position)
    assert committed.chat[-1]["content"] == "…" and handlers.services.store.turns(view.session_id)[0].answer
    seen: list[tuple[str, Any]] = []  # each step, with the answer's grading status as the step was shown
    for step in handlers.follow(view.session_id, committed.playing):
        seen.append((handlers.services.store.turns(view.session_id)[0].status, step))
    status, asked = next((st, v) for st, v in seen if "[q02]" in v.chat[-1]["content"])
    assert status == "pending" and "Grading" in asked.feedback  # the next question, while the grade is computed
    status, card = seen[-1]
    assert status == "graded" and "Score" in card.feedback and "[q01]" in card.feedback  # the card, once it is in
    (grade_request,) = [r for r in recorded.chat_requests() if not r["body"].get("stream")]
    assert "Data parallel copies the model" in grade_request["body"]["messages"][1]["content"]


def test_concurrent_submits_to_one_session_are_refused_but_the_first(tmp_path: Path) -> None:
    handlers = Handlers(Services(Settings(home=tmp_path)))
    view = handlers.start("round 1", None, None, "interview", "en")
    results: list[str] = []
    barrier = threading.Barrier(6)

    def tab(number: int) -> None:
        barrier.wait()
        try:
            handlers.commit(view.session_id, f"answer from tab {number}", at=view.position)
            results.append("recorded")
        except StaleMove:
            results.append("refused")

    threads = [threading.Thread(target=tab, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == ["recorded"] + ["refused"] * 5
    (turn,) = handlers.services.store.turns(view.session_id)
    assert turn.question_id == "q01" and turn.answer and turn.answer.startswith("answer from tab")


def test_the_report_waits_for_grades_still_being_computed(services: Services, tmp_path: Path) -> None:
    """Interview mode goes on without grades; the report says grades are still coming, and is
    written only once every answer is graded."""
    from interviewer.faces.web import Handlers

    grader = GateGrader(services.offline_grader)
    handlers = Handlers(Services(Settings(home=tmp_path)))
    engine = Engine(handlers.services.store, services.bank, grader)
    handlers.services.engine = lambda grader=None: engine  # type: ignore[method-assign]  # the gate stands for a slow model
    view = handlers.start("question", "q05", None, "interview", "en")
    steps = list(handlers.answer(view.session_id, "I don't remember the tools, but I would look at the memory first."))
    state = engine.state(view.session_id)
    while state.prompt.kind == "followup":
        handlers.skip(view.session_id)
        state = engine.state(view.session_id)
    shown = handlers.current(view.session_id)
    assert state.prompt.kind == "end" and state.grading, "the answer is still being graded"
    assert "still being graded" in shown.report and shown.report_file is None
    grader.gate.set()
    handlers.worker.wait(state.grading[0].id, 10)
    done = handlers.current(view.session_id)
    assert done.report_file is not None and "still being graded" not in done.report
    assert steps[0].chat[-1]["content"] == "…"


class GatedInterviewer:
    """The scripted interviewer, speaking only once the test opens its gate."""

    def __init__(self, inner: Any):
        self.inner = inner
        self.gate = threading.Event()

    def live(self, *args: Any, **kwargs: Any) -> Any:
        assert self.gate.wait(30)
        yield from self.inner.live(*args, **kwargs)


def test_a_turn_being_played_is_left_alone_and_one_that_died_is_decided_on_reload(tmp_path: Path) -> None:
    handlers = Handlers(Services(Settings(home=tmp_path)))
    speaking = GatedInterviewer(handlers.services.interviewer)
    handlers.services.interviewer = speaking  # type: ignore[assignment]  # the interviewer still thinking
    view = handlers.start("round 1", None, None, "interview", "en")
    committed = handlers.commit(view.session_id, "Data parallel copies the model and all-reduces gradients.", at=view.position)
    second_tab = handlers.current(view.session_id)  # while this process is speaking the turn
    assert handlers.services.store.turns(view.session_id)[0].decision is None
    assert second_tab.chat[-1]["role"] == "user" and not second_tab.can_answer
    restarted = Handlers(Services(Settings(home=tmp_path)))  # as if this process had died mid-turn
    resumed = restarted.resume(view.session_id)
    assert resumed.can_answer and resumed.chat[-1]["role"] == "assistant"
    decided = handlers.services.store.turns(view.session_id)[0].decision
    assert decided is not None and committed.chat[-1]["content"] == "…"
    assert "Round 1" in committed.progress and "question 1/" in committed.progress  # the line stays while it thinks
    speaking.gate.set()  # the first process's turn ends: the decision made on reload stands
    shown = list(handlers.follow(view.session_id, committed.playing))
    assert handlers.services.store.turns(view.session_id)[0].decision == decided and shown[-1].can_answer


def test_the_turn_is_spoken_from_the_commit_even_if_no_page_follows_it(tmp_path: Path) -> None:
    """The interviewer is asked as soon as the answer is stored; a page that follows late (or
    twice: a reload) gets the same words, and the turn is decided without any page."""
    handlers = Handlers(Services(Settings(home=tmp_path)))
    view = handlers.start("round 1", None, None, "interview", "en")
    committed = handlers.commit(view.session_id, "Data parallel copies the model and all-reduces gradients.", at=view.position)
    deadline = time.monotonic() + 10
    while handlers.services.store.turns(view.session_id)[0].decision is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert handlers.services.store.turns(view.session_id)[0].decision is not None  # no `follow` ran
    first, again = (list(handlers.follow(view.session_id, committed.playing)) for _ in range(2))
    assert first[-1].chat == again[-1].chat and first[-1].chat[-1]["role"] == "assistant" and first[-1].can_answer


def test_a_follow_up_answer_in_a_neighbouring_questions_words_is_not_off_topic(services: Services) -> None:
    """A follow-up on q01's tensor parallelism is answered in the words q03 owns; that is on topic
    for the follow-up (an answer that is about nothing of q01's still is not)."""
    from interviewer.interview.followups import OwnFollowUp, own_followup

    question = services.bank.get("q01")
    followup = own_followup(question, OwnFollowUp(id="own-1", targets=["tp-mechanism"]), "TP 每层前向要几次通信？")
    on_topic = services.offline_grader.grade_followup(
        question, followup, "前向两次 all-reduce，一次在 attention 后，一次在 MLP 后，每次是 b×s×h 的激活。"
    )
    assert "off-topic" not in on_topic.flags
    unrelated = services.offline_grader.grade_followup(question, followup, "我周末喜欢去爬山，山上的空气很好，风景也漂亮。")
    assert "off-topic" in unrelated.flags or "gibberish" in unrelated.flags or unrelated.score <= 1


def test_a_pool_started_up_front_has_all_its_threads() -> None:
    from concurrent.futures import ThreadPoolExecutor

    from interviewer.pools import start_all

    pool = ThreadPoolExecutor(12)
    start_all(pool, 12)
    assert len(pool._threads) == 12  # what the pool has, not what it promises
    assert pool.submit(lambda: 41 + 1).result(timeout=5) == 42  # the placeholders let go of their threads
    pool.shutdown()


def test_a_late_follower_skips_to_the_latest_words_but_never_past_the_decision(tmp_path: Path) -> None:
    from interviewer.application.turns import Playback, Step

    services = Services(Settings(home=tmp_path))
    state = services.engine().start(make_plan(services.bank, "full"))
    steps = [Step(state, turn_id=1), *(Step(state, speaking="word " * n, turn_id=1) for n in range(1, 6)), Step(state, turn_id=1)]
    playback = Playback()
    playback.run(iter(steps))
    assert playback.done
    seen = list(playback.follow())
    assert [s.speaking for s in seen] == [None, "word " * 5, None]  # the answer, the latest words, the decision

    def broken() -> Any:
        yield steps[0]
        raise ConnectionError("the model went away")

    failing = Playback()
    failing.run(broken())
    followed = failing.follow()
    assert next(followed) is steps[0]
    with pytest.raises(ConnectionError):
        next(followed)
