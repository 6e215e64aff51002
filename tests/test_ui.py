"""The app's event handlers, called directly, and the running app through gradio_client."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from interviewer.errors import InterviewerError
from interviewer.faces.web import Handlers, View, build, history_frames
from interviewer.services import Services
from interviewer.settings import Settings
from tests.conftest import shown_text

GOOD = (
    "数据并行每张卡一份完整模型，切分 batch，反向后梯度 all-reduce，ring 下每卡约 2(N-1)/N 倍梯度量；"
    "张量并行层内切权重，每层前向两次 all-reduce，要放在 NVLink 域内；流水线并行按层切 stage，用 micro-batch 降低 bubble。"
)


@pytest.fixture
def handlers(tmp_path: Path) -> Handlers:
    return Handlers(Services(Settings(home=tmp_path)))


def submit(handlers: Handlers, session_id: str, answer: str, code: str = "", at: int | None = None) -> View:
    """What the page shows once the submit (and any streamed follow-up) is done."""
    return list(handlers.answer(session_id, answer, code, at=at))[-1]


def texts(chat: list[dict[str, Any]]) -> str:
    """The chat as a candidate reads it (through gradio_client a message is a list of parts)."""

    def words(content: Any) -> str:
        return content if isinstance(content, str) else "\n\n".join(part.get("text", "") for part in content)

    return "\n".join(shown_text(words(m["content"])) for m in chat)


def test_practice_mode_shows_a_feedback_card_with_evidence(handlers: Handlers) -> None:
    view = handlers.start("round 1", None, None, "practice", "zh")
    assert view.can_answer and "[q01]" in view.chat[-1]["content"]
    assert "离线评分" in view.progress and ("120:00" in view.progress or "119:" in view.progress)
    after = submit(handlers, view.session_id, GOOD)
    assert "得分" in after.feedback and "回答中的依据: “数据并行每张卡一份完整模型" in after.feedback
    assert "parallelism.md#" in after.feedback
    # the verdict comes first, a point a line; then the criteria with their evidence
    assert after.feedback.index("满分的回答") < after.feedback.index("回答中的依据")
    assert "  \n" in after.feedback.split("回答中的依据")[0]
    assert "离线评分只认得评分细则里列出的错误说法" in after.feedback  # honest about what it cannot see
    assert GOOD in texts(after.chat) and after.can_retry
    assert after.chat[-1]["content"].startswith("**↪**")  # the follow-up is asked


def test_interview_mode_keeps_scores_for_the_round_summary(handlers: Handlers) -> None:
    view = handlers.start("round 3", None, None, "interview", "en")
    after = submit(handlers, view.session_id, "Kubernetes with Volcano for gang scheduling and per-team quotas.")
    assert after.feedback == "" and not after.can_retry
    assert "Round 3" in after.progress
    for _ in range(20):
        if after.can_continue:
            break
        after = handlers.skip(after.session_id)
    assert after.can_continue and not after.can_answer and after.last_round  # one round planned: the button says so
    assert "Score for the round" in after.chat[-1]["content"] and "q11" in after.chat[-1]["content"]
    end = handlers.proceed(after.session_id)
    assert "The interview is over" in end.chat[-1]["content"]


def test_the_inference_serving_round_plays_on_its_own_and_after_the_three(handlers: Handlers) -> None:
    alone = handlers.start("round 4", None, None, "practice", "zh")
    assert "[q17]" in alone.chat[-1]["content"] and "推理服务" in alone.progress
    assert re.search(r"(60:00|59:[0-5]\d) 本轮剩余", alone.progress), alone.progress  # its own 60 minutes
    after = submit(handlers, alone.session_id, "KV cache 每个 token 要 2 × 层数 × KV 头数 × head_dim × 字节数。")
    assert "[q17]" in after.chat[0]["content"]
    loop = handlers.start("full all", None, None, "interview", "en")
    assert handlers.engine.state(loop.session_id).plan.questions[-3:] == ["q17", "q18", "q19"]
    assert handlers.engine.state(handlers.start("full", None, None, "interview", "en").session_id).plan.questions[-1] == "q16"


def test_the_kernel_question_opens_the_code_editor(handlers: Handlers) -> None:
    view = handlers.start("question", "q08", None, "practice", "en")
    assert view.code_question
    after = submit(handlers, view.session_id, "", "__global__ void matmul(const float* A, const float* B, float* C, int N) {}")
    assert "__global__" in texts(after.chat)


def test_empty_answers_and_missing_sessions_are_refused_clearly(handlers: Handlers) -> None:
    view = handlers.start("question", "q02", None, "interview", "en")
    refused = submit(handlers, view.session_id, "   ", "")  # one line under the answer box, nothing else moves
    assert refused.notice == "The answer is empty: write something, or press Skip." and refused.keep_draft
    assert (refused.position, refused.chat, refused.playing) == (view.position, view.chat, None) and refused.can_answer
    assert list(handlers.follow(view.session_id, refused.playing)) == []  # the page's follow plays nothing
    assert handlers.services.store.turns(view.session_id) == []  # nothing was recorded
    assert handlers.commit(view.session_id, None, None).notice == refused.notice  # type: ignore[arg-type]  # boxes never filled
    with pytest.raises(InterviewerError, match="Start an interview"):
        submit(handlers, "", "an answer")
    with pytest.raises(InterviewerError, match="no session"):
        handlers.resume("does-not-exist")


def test_resume_shows_the_same_interview(handlers: Handlers) -> None:
    view = handlers.start("round 1", None, None, "practice", "zh")
    submit(handlers, view.session_id, GOOD)
    again = handlers.resume(view.session_id)
    assert GOOD in texts(again.chat)
    assert [row.id for row in handlers.history().rows()] == [view.session_id]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def running_app(handlers: Handlers) -> Iterator[str]:
    demo = build(handlers)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        demo.close()


def test_the_running_app_through_gradio_client(running_app: str) -> None:
    from gradio_client import Client

    client = Client(running_app, verbose=False)
    session_id, chat, progress, _feedback, *_ = client.predict("question", "q02", "zero", "practice", "en", "", api_name="/start")
    assert session_id and "[q02]" in str(chat[-1]["content"]) and "Offline grading" in progress
    answer = "ZeRO-1 shards optimizer states, ZeRO-2 also gradients, ZeRO-3 also parameters."
    _sid, chat, *_ = client.predict(session_id, answer, "", None, api_name="/submit")  # stored at once, no queue
    assert answer in texts(chat)
    session_id, chat, _progress, feedback, *_ = client.predict(session_id, api_name="/follow")  # then the turn plays
    assert "Score" in feedback and "ZeRO-1 shards optimizer states" in texts(chat)


def test_history_charts_scores_and_ranks_weak_topics(handlers: Handlers) -> None:
    view = handlers.start("round 1", None, None, "practice", "zh")
    submit(handlers, view.session_id, GOOD)
    handlers.skip(view.session_id)  # the q01 follow-up
    _table, frame, topics, _weakest = history_frames(handlers.history())
    assert list(frame.columns) == ["started", "overall", "plan"] and len(frame) == 1
    assert {"started", "topic", "score"} <= set(topics.columns) and "data-parallel" in set(topics["topic"])
    skipped = handlers.start("question", "q05", None, "interview", "zh")
    handlers.skip(skipped.session_id)
    *_, topics, ranked = history_frames(handlers.history())
    weakest = ranked.values.tolist()
    assert weakest[0][1] == 0.0 and weakest[0][0] in handlers.services.bank.get("q05").topics
    assert [row[1] for row in weakest] == sorted(row[1] for row in weakest)
    assert set(topics["topic"]) == {row[0] for row in weakest[:5]}  # the chart draws the five weakest
    table, _frame, _topics, ranked_zh = history_frames(handlers.history(), "zh")
    assert list(ranked_zh.columns) == ["主题", "平均分", "题数"] and table.values.tolist()[0][1:4] == ["单题 q05", "面试", "中文"]
    assert table.values.tolist()[1][1] == "第 1 轮" and [row[6] for row in table.values.tolist()] == ["已完成", "进行中"]


def test_the_rounds_clock_keeps_running_between_events(handlers: Handlers) -> None:
    import time

    view = handlers.start("round 2", None, None, "interview", "en")
    handlers.services.store.mark_prompt_shown(view.session_id, time.time() - 600)  # ten minutes on the question
    assert "110:0" in handlers.clock(view.session_id) or "109:5" in handlers.clock(view.session_id)
    after = handlers.skip(view.session_id)
    assert "110:0" in after.progress or "109:5" in after.progress  # the time spent on q06 counts


def test_a_second_tab_cannot_answer_a_prompt_it_never_showed(handlers: Handlers) -> None:
    from interviewer.interview.store import StaleMove

    first_tab = handlers.start("round 1", None, None, "interview", "en")
    second_tab = handlers.resume(first_tab.session_id)
    after = submit(handlers, first_tab.session_id, GOOD, at=first_tab.position)
    with pytest.raises(StaleMove):
        submit(handlers, second_tab.session_id, "an answer typed against the old question", at=second_tab.position)
    current = handlers.current(second_tab.session_id)  # what the page shows, the typed answer kept (see build)
    assert current.chat == after.chat and current.position == after.position


def test_the_page_script_goes_first_in_the_head_of_the_page_only() -> None:
    """The middleware rewrites the page (``GET /``) and nothing else, and keeps the length right."""
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.responses import HTMLResponse, JSONResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient

    from interviewer.faces.page_script import SCRIPT, PageScript

    page = "<html><head><title>t</title></head><body>中文 <head> in text</body></html>"
    routes = [
        Route("/", lambda request: HTMLResponse(page)),
        Route("/other", lambda request: HTMLResponse(page)),
        Route("/config", lambda request: JSONResponse({"head": "<head>"})),
    ]
    client = TestClient(Starlette(routes=routes, middleware=[Middleware(PageScript)]))
    served = client.get("/")
    assert served.content == page.encode().replace(b"<head>", b"<head>" + SCRIPT, 1)
    assert int(served.headers["content-length"]) == len(served.content)
    assert client.get("/other").text == page
    assert client.get("/config").json() == {"head": "<head>"}
    assert client.post("/").status_code == 405


def test_the_page_has_every_word_in_both_languages_and_greets_in_the_browsers() -> None:
    from typing import get_args

    from interviewer.faces.page_text import FLAGS, PLANS, WORDS, browser_lang
    from interviewer.grading.grade import Flag

    assert WORDS["zh"].keys() == WORDS["en"].keys() and set(PLANS) <= WORDS["zh"].keys()
    assert FLAGS["zh"].keys() == FLAGS["en"].keys() == set(get_args(Flag))
    assert all(WORDS["zh"][k] != WORDS["en"][k] for k in ("plan", "start", "submit", "answer", "welcome"))
    assert [browser_lang(h) for h in ("zh-CN,zh;q=0.9,en;q=0.8", "en-US,en;q=0.9", "", None, "fr-FR")] == [
        "zh", "en", "en", "en", "en"]  # fmt: skip


def test_a_chinese_card_names_its_flags_in_chinese(handlers: Handlers) -> None:
    from interviewer.faces.web import feedback_card

    view = handlers.start("question", "q02", None, "practice", "zh")
    after = submit(handlers, view.session_id, "ZeRO ZeRO ZeRO 分片 分片 分片 通信 通信 通信 显存 显存 显存")
    grade = handlers.services.store.turns(view.session_id)[0].grade
    assert grade is not None and grade.flags, "this answer is expected to be flagged"
    from interviewer.faces.page_text import FLAGS

    card = feedback_card(grade, "zh")
    assert not any(f"`{flag}`" in card for flag in grade.flags) and f"`{FLAGS['zh'][grade.flags[0]]}`" in card
    assert after.progress.endswith("· 练习")  # the mode in Chinese too


def test_the_card_says_each_thing_once_and_comes_back_after_a_reload(handlers: Handlers) -> None:
    view = handlers.start("question", "q02", None, "practice", "en")
    after = submit(handlers, view.session_id, "ZeRO-1 shards optimizer states; ZeRO-2 also gradients; ZeRO-3 also parameters.")
    verdict, _, criteria = after.feedback.partition("\n- **")
    missing_lines = [line for line in criteria.splitlines() if "For full marks:" in line]
    assert "Full marks:" in verdict and missing_lines  # the verdict names the weakest criteria's gaps
    for line in missing_lines:  # and the criteria below do not say them again
        assert line.split("For full marks: ", 1)[1] not in verdict
    assert handlers.resume(view.session_id).feedback == after.feedback  # a reload brings the card back


def test_i_dont_know_in_practice_shows_what_a_good_answer_contains(handlers: Handlers) -> None:
    view = handlers.start("question", "q02", None, "practice", "zh")
    passed = handlers.dont_know(view.session_id, at=view.position)
    q02 = handlers.services.bank.get("q02")
    assert "好的回答包含什么" in passed.feedback and q02.reference_answer.zh[:20] in passed.feedback
    assert f"`{q02.references[0]}`" in passed.feedback
    interview = handlers.start("question", "q02", None, "interview", "zh")
    assert handlers.dont_know(interview.session_id, at=interview.position).feedback == ""  # interviews withhold it


def test_retry_names_the_prompt_it_answers_again(handlers: Handlers) -> None:
    from interviewer.faces.web import retry_label

    view = handlers.start("round 1", None, None, "practice", "en")
    after = submit(handlers, view.session_id, GOOD)
    assert after.can_retry and after.chat[-1]["content"].startswith("**↪**")  # a follow-up is on screen
    assert retry_label(after) == "Retry the last answer [q01]"  # yet Retry is for q01's answer, and says so


def test_a_full_plans_first_round_goes_on_to_the_next(handlers: Handlers) -> None:
    view = handlers.start("full", None, None, "interview", "en")
    for _ in range(30):
        if view.can_continue:
            break
        view = handlers.skip(view.session_id)
    assert view.can_continue and not view.last_round


def test_a_full_disk_is_one_clear_line_and_the_answer_can_be_sent_again(handlers: Handlers) -> None:
    """A full disk gave a blank error, the answer unsaved. SQLite's max_page_count holds the
    database to the pages it has, so the commit meets SQLITE_FULL as on a full disk; the page
    keeps the typed answer (the box is left as it is on an error) and a second Submit saves it."""
    store = handlers.services.store
    view = handlers.start("question", "q06", None, "practice", "en")
    answer = "A warp is 32 threads that issue one instruction together; divergent branches run one after the other. " * 300
    for db in store.database._all:  # type: ignore[attr-defined]
        db.execute(f"PRAGMA max_page_count = {db.execute('PRAGMA page_count').fetchone()[0]}")
    with pytest.raises(InterviewerError) as refused:
        submit(handlers, view.session_id, answer)
    message = str(refused.value)
    assert message.startswith("the disk is full (writing ") and "free some space" in message and "\n" not in message
    assert store.turns(view.session_id) == []  # rolled back whole: nothing half-saved
    for db in store.database._all:  # type: ignore[attr-defined]
        db.execute("PRAGMA max_page_count = 1073741823")
    again = submit(handlers, view.session_id, answer)
    assert [t.answer for t in store.turns(view.session_id)] == [answer.strip()] and again.position != view.position


def test_a_start_over_a_running_interview_keeps_it_and_drops_an_untouched_one(handlers: Handlers) -> None:
    """Start during an interview dropped it silently, and History filled with "active" orphans."""
    store = handlers.services.store
    untouched = handlers.start("question", "q02", None, "practice", "en")
    assert handlers.left_behind(untouched.session_id) is None  # nothing answered: nothing to keep
    assert untouched.session_id not in {s.id for s in store.sessions()}
    answered = handlers.start("round 1", None, None, "practice", "en")
    submit(handlers, answered.session_id, GOOD)
    running = handlers.left_behind(answered.session_id)
    assert running is not None and running.id == answered.session_id  # the page warns before leaving it
    assert handlers.left_behind("") is None and handlers.left_behind("no-such-session") is None
    finished = handlers.start("question", "q02", None, "practice", "en")
    submit(handlers, finished.session_id, GOOD)
    while handlers.current_state(finished.session_id).prompt.kind != "end":
        state = handlers.current_state(finished.session_id)
        if state.prompt.kind == "round-summary":
            handlers.proceed(finished.session_id)
        else:
            handlers.skip(finished.session_id)
    assert handlers.left_behind(finished.session_id) is None  # over: a new Start leaves nothing behind
