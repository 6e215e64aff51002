"""The app in a real browser: Debian's Chromium driven by Playwright (installed by `make test`).
Screenshots are kept in test-artifacts/."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from interviewer.faces.page_text import LANGUAGES, WORDS
from interviewer.settings import PROJECT_ROOT

pytestmark = pytest.mark.browser
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = PROJECT_ROOT / "test-artifacts"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]  # fmt: skip
ANSWER_ZH = (
    "数据并行每张卡一份完整模型，切分 batch，反向后梯度 all-reduce；张量并行层内切权重，每层前向两次 all-reduce，"
    "放在 NVLink 域内；流水线并行按层切 stage，用 micro-batch 降低 bubble。"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class App:
    """`python app.py` as a user starts it, on its own port and data folder."""

    def __init__(self, home: Path, port: int, env: dict[str, str] | None = None):
        self.home, self.port, self.env = home, port, env or {}
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def start(self) -> App:
        env = {**os.environ, "INTERVIEWER_HOME": str(self.home), "GRADIO_SERVER_PORT": str(self.port), **self.env}
        self.process = subprocess.Popen([sys.executable, str(PROJECT_ROOT / "app.py")], env=env, stdout=subprocess.DEVNULL)
        deadline = time.time() + 90
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(self.url, timeout=2) as response:
                    if response.status == 200:
                        return self
            except OSError:
                time.sleep(0.3)
        raise AssertionError("the app did not start within 90 s")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)
            self.process = None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.fail("Chromium is missing: `make test` installs it (apt-get install chromium fonts-wqy-microhei)")
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield launched
        launched.close()


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    running = App(tmp_path / "home", free_port()).start()
    yield running
    running.stop()


def start(page: Any, plan: str, mode: str, lang: str) -> None:
    """Pick the language first: every control then carries its name in that language."""
    page.get_by_label(dict((v, k) for k, v in LANGUAGES)[lang], exact=True).check()
    words = WORDS[lang]  # type: ignore[index]
    page.get_by_label(words[plan], exact=True).check()
    page.get_by_label(words[mode], exact=True).check()
    page.get_by_role("button", name=words["start"]).click()
    page.get_by_text("session ", exact=False).first.wait_for()


def answer(page: Any, text: str, lang: str = "en") -> None:
    page.get_by_label(WORDS[lang]["answer"]).fill(text)  # type: ignore[index]
    page.get_by_role("button", name=WORDS[lang]["submit"]).click()  # type: ignore[index]


def wait_for_sidebar(page: Any, closed: bool) -> None:
    """Gradio's sidebar carries the class ``open`` while it is open (closed, it slides off screen)."""
    page.wait_for_function("(closed) => document.querySelector('.sidebar').classList.contains('open') !== closed", arg=closed)


def chat_text(page: Any) -> str:
    return str(page.locator(".chatbot, [data-testid='chatbot'], .bubble-wrap").first.inner_text())


def skip_until_round_ends(page: Any, lang: str = "en") -> None:
    """Skip to the round's summary: its button goes on to the next round, or (the plan's last
    round) to the report."""
    words = WORDS[lang]  # type: ignore[index]
    for _ in range(20):
        if any(page.get_by_role("button", name=words[name]).is_visible() for name in ("proceed", "to_report")):
            return
        page.get_by_role("button", name=WORDS[lang]["skip"]).click()  # type: ignore[index]
        page.wait_for_timeout(400)
    raise AssertionError("the round did not end")


def test_a_round_in_chinese_practice_mode(browser: Any, app: App) -> None:
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    page.goto(app.url)
    start(page, "round 1", "practice", "zh")
    page.get_by_text("[q01]").first.wait_for()
    wait_for_sidebar(page, closed=True)  # out of the way once the interview runs
    answer(page, ANSWER_ZH, "zh")
    page.get_by_text("得分").first.wait_for()
    feedback = page.locator("h3", has_text="得分").first.inner_text()
    assert "/10" in feedback
    assert page.get_by_text("满分还需要").first.is_visible()  # the card says what full marks need
    page.get_by_text("↪").last.wait_for()  # a follow-up is asked
    answer(page, "TP 放在节点内的 NVLink 上，PP 跨节点，DP 在最外层。", "zh")
    page.wait_for_timeout(800)
    assert "TP 放在节点内" in chat_text(page)
    for english in ("Submit", "Skip", "I don't know", "Your answer", "Start", "Plan", "Mode"):  # the page speaks Chinese
        assert page.get_by_text(english, exact=True).count() == 0, english
    page.screenshot(path=str(ARTIFACTS / "round-zh-practice.png"), full_page=True)
    skip_until_round_ends(page, "zh")
    assert "本轮得分" in chat_text(page)
    page.get_by_role("button", name=WORDS["zh"]["to_report"]).click()  # one round planned: on to the report
    page.get_by_text("面试结束").first.wait_for()
    page.get_by_text("模拟面试反馈报告").first.wait_for()  # at the end, the report
    page.get_by_role("button", name=WORDS["zh"]["download"]).wait_for()  # drawn with the report, maybe a frame later
    page.get_by_role("button", name=WORDS["zh"]["download_pdf"]).wait_for()
    page.screenshot(path=str(ARTIFACTS / "report-zh.png"), full_page=True)
    page.close()


def test_a_round_in_english_interview_mode_with_the_code_editor(browser: Any, app: App) -> None:
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    page.goto(app.url)
    start(page, "round 2", "interview", "en")
    page.get_by_text("[q06]").first.wait_for()
    answer(page, "Grid, block and thread; 32 threads form a warp, and divergent branches in a warp run one after another.")
    page.get_by_text("↪").last.wait_for()
    assert page.locator("h3", has_text="Score").count() == 0 and "Score " not in chat_text(page)  # kept for the round's end
    answer(page, "Make the condition uniform across each warp, or use a branch-free select.")
    for _ in range(10):
        if page.get_by_text("[q08]").count():
            break
        page.get_by_role("button", name="Skip").click()
        page.wait_for_timeout(400)
    page.get_by_text("Kernel (C++/CUDA)").first.wait_for()  # the code editor opens for the kernel question
    page.screenshot(path=str(ARTIFACTS / "round-en-code-editor.png"), full_page=True)
    # the room: the bundled face in all three weights (bold words drew small capitals with two), and
    # the round's line and its clock still in sight once the page is scrolled down to the buttons
    weights = page.evaluate("() => document.fonts.ready.then(() => [...document.fonts].filter(f => f.status === 'loaded'"
                            " && f.family.includes('IBM Plex Sans')).map(f => f.weight))")  # fmt: skip
    assert {"400", "600", "700"} <= set(weights), weights
    page.get_by_role("button", name="Skip").scroll_into_view_if_needed()
    page.mouse.wheel(0, 2000)
    page.wait_for_timeout(300)
    assert page.evaluate("() => window.scrollY") > 0
    head = page.locator("#progress").bounding_box()
    assert head is not None and 0 <= head["y"] <= 1 and "left in this round" in page.locator("#progress").inner_text()
    skip_until_round_ends(page)
    assert "Score for the round" in chat_text(page)
    page.close()


def test_an_empty_submit_is_one_line_and_what_was_written_shows_as_written(browser: Any, app: App) -> None:
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    fetched: list[str] = []
    page.on("request", lambda request: fetched.append(request.url))
    page.goto(app.url)
    start(page, "round 1", "interview", "en")
    page.get_by_text("[q01]").first.wait_for()
    page.get_by_role("button", name="Submit").click()
    page.get_by_text("The answer is empty: write something, or press Skip.").wait_for()
    page.wait_for_timeout(800)  # the follow that comes after the submit, with nothing to play
    assert page.get_by_text("Error", exact=True).count() == 0  # no error panels over the chat or the answer box
    assert "[q01]" in chat_text(page) and page.get_by_role("button", name="Submit").is_enabled()
    kernel = "__global__ void k(float* __restrict__ a) {\n    __shared__ float s[32];\n    s[threadIdx.x] = a[0];\n}"
    hostile = "<img src=x onerror=alert(1)> *not emphasis*"
    answer(page, f"{hostile}\n\n```cuda\n{kernel}\n```")
    page.get_by_text("↪").last.wait_for()
    assert page.get_by_text("The answer is empty").count() == 0  # the line goes with the next move
    chat = page.locator(".bubble-wrap").first
    assert hostile in chat.inner_text() and chat.locator("img").count() == 0 and chat.locator("em").count() == 0
    code = chat.locator("pre code").first
    assert code.inner_text().strip() == kernel  # indentation and double underscores kept
    assert "monospace" in code.evaluate("e => getComputedStyle(e).fontFamily")
    assert not any(url.rstrip("/").endswith("/x") for url in fetched)
    page.screenshot(path=str(ARTIFACTS / "empty-submit-and-code.png"), full_page=True)
    page.close()


def test_a_first_visit_on_a_chinese_phone(browser: Any, app: App) -> None:
    """The page greets in the browser's language, shows a drill's picker only for a drill, keeps the
    buttons off until an interview exists, and closes the sidebar once one runs (it covers a phone)."""
    context = browser.new_context(locale="zh-CN", viewport={"width": 390, "height": 844})
    page = context.new_page()
    page.goto(app.url)
    page.get_by_text("你好，我是这场 AI-Infra 面试的面试官").wait_for()
    assert page.get_by_label("中文", exact=True).is_checked()
    assert not page.get_by_role("button", name="提交").is_enabled()
    assert not page.get_by_label("题目").is_visible()
    wait_for_sidebar(page, closed=False)  # open while there is no interview
    page.get_by_label("单题练习", exact=True).check()
    page.get_by_label("题目").wait_for()
    page.get_by_label("完整三轮", exact=True).check()
    page.get_by_role("button", name="开始面试").click()
    page.get_by_text("[q01]").first.wait_for()
    wait_for_sidebar(page, closed=True)
    assert page.get_by_text("[q01]").first.is_visible() and page.get_by_role("button", name="提交").is_enabled()
    page.wait_for_timeout(600)  # the sidebar's slide out is over: the screenshot shows the room, not the animation
    page.screenshot(path=str(ARTIFACTS / "phone-zh-started.png"), full_page=True)
    page.get_by_label("你的回答").fill("写到一半的回答：数据并行每张卡一份完整模型")
    page.wait_for_timeout(300)
    page.reload()  # back to the interview, the sidebar still out of the way, the unsent answer kept
    page.get_by_text("[q01]").first.wait_for()
    wait_for_sidebar(page, closed=True)
    page.wait_for_function("() => document.querySelector('textarea').value.startsWith('写到一半的回答')")
    page.get_by_role("button", name="提交").click()
    page.get_by_text("↪").last.wait_for()
    page.reload()  # what was sent is no draft any more
    page.get_by_text("↪").last.wait_for()
    page.wait_for_timeout(500)
    assert page.get_by_label("你的回答").input_value() == ""
    context.close()


def test_a_click_on_a_history_row_resumes_that_session(browser: Any, app: App) -> None:
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    page.goto(app.url)
    start(page, "round 1", "practice", "en")
    answer(page, "FIRST-SESSION answer: data parallel keeps a replica per GPU and all-reduces gradients.")
    page.get_by_text("↪").last.wait_for()
    page.get_by_role("button", name="Toggle Sidebar").click()
    wait_for_sidebar(page, closed=False)
    page.get_by_label(WORDS["en"]["interview"], exact=True).check()  # the next one in interview mode
    page.get_by_role("button", name=WORDS["en"]["start"]).click()  # a Start while one runs: first a warning
    page.get_by_text("This interview is not over (1 answered)").first.wait_for()
    page.wait_for_timeout(500)
    wait_for_sidebar(page, closed=False)  # open, for the second Start
    assert "FIRST-SESSION" in chat_text(page) and page.get_by_label(WORDS["en"]["interview"], exact=True).is_checked()
    page.screenshot(path=str(ARTIFACTS / "start-while-running.png"), full_page=True)
    page.get_by_role("button", name=WORDS["en"]["start"]).click()  # the second Start: a second interview
    page.wait_for_function("() => !document.body.innerText.includes('FIRST-SESSION')")
    wait_for_sidebar(page, closed=True)
    page.get_by_text(WORDS["en"]["history"], exact=True).click()  # below the conversation, the page's width
    cells = page.locator("span.text:visible", has_text="round 1")  # each row's plan cell, newest first
    cells.nth(1).wait_for()
    for column in ("started", "plan", "mode", "answered", "overall", "status", "session id"):  # every column in sight
        header = page.locator("th:visible", has_text=column).first.bounding_box()
        assert header is not None and header["x"] + header["width"] <= 1300, column
    page.screenshot(path=str(ARTIFACTS / "history-open.png"), full_page=True)
    cells.nth(1).click()  # the first interview
    page.get_by_text("FIRST-SESSION").first.wait_for()
    wait_for_sidebar(page, closed=True)
    page.close()


def test_a_server_restart_resumes_the_session(browser: Any, app: App) -> None:
    context = browser.new_context()
    page = context.new_page()
    page.goto(app.url)
    start(page, "round 1", "practice", "zh")
    answer(page, ANSWER_ZH, "zh")
    page.get_by_text("得分").first.wait_for()
    app.stop()
    app.start()
    page.reload()
    page.get_by_text("[q01]").first.wait_for()
    page.wait_for_timeout(1500)
    assert "切分 batch" in chat_text(page)
    page.screenshot(path=str(ARTIFACTS / "resumed-after-restart.png"), full_page=True)
    context.close()


def test_two_users_never_see_each_others_answers(browser: Any, app: App) -> None:
    first, second = browser.new_context(), browser.new_context()
    pages = [first.new_page(), second.new_page()]
    for page, text in zip(pages, ("ALPHA-unique answer about data parallel", "BRAVO-unique answer about data parallel"), strict=True):
        page.goto(app.url)
        start(page, "round 1", "practice", "en")
        answer(page, text)
    for page in pages:
        page.get_by_text("Score").first.wait_for()
    assert "ALPHA" in chat_text(pages[0]) and "BRAVO" not in chat_text(pages[0])
    assert "BRAVO" in chat_text(pages[1]) and "ALPHA" not in chat_text(pages[1])
    first.close()
    second.close()


COUNT_FRAMES = """(() => {
  const frame = window.requestAnimationFrame.bind(window);
  window.__frames = {status: 0, other: 0};
  window.requestAnimationFrame = (callback) => {
    window.__frames[(new Error().stack || "").includes("statustracker") ? "status" : "other"] += 1;
    return frame(callback);
  };
})()"""


def test_an_idle_page_stops_drawing_frames(browser: Any, app: App) -> None:
    """Gradio's status tracker asks for a frame sixty times a second after the page has loaded; the
    page's own script (``faces/page_script.py``) runs first and gives those requests a timer of a
    quarter second. Counted here by a script that runs before both: without the page's script it
    sees Gradio's requests (about 120 in 2 s); with it, none reach the browser's frames."""
    context = browser.new_context()
    context.add_init_script(COUNT_FRAMES)
    page = context.new_page()
    page.goto(app.url)
    start(page, "round 1", "interview", "en")
    page.wait_for_timeout(1000)
    page.evaluate("() => { window.__frames.status = 0; window.__frames.other = 0; }")
    page.wait_for_timeout(2000)
    frames = page.evaluate("() => window.__frames")
    assert frames["status"] < 10, frames
    answer(page, "Data parallel keeps a full replica per GPU and all-reduces the gradients.")
    # the page still works: the interviewer's next words (a follow-up or the next question) came
    page.wait_for_function("() => document.body.innerText.includes('↪') || document.body.innerText.includes('[q02]')")
    context.close()


def test_with_a_model_the_next_question_comes_first_and_the_card_after(browser: Any, tmp_path: Path) -> None:
    """The interviewer moves on at once while the model still grades (3 s); the practice feedback
    card shows "grading" meanwhile, then the grade."""
    import json

    from interviewer.content.bank import load_bank
    from tests.fake_openai import serve

    q01 = load_bank(PROJECT_ROOT / "rubrics").get("q01")
    criteria = [{"id": c.id, "score": 2, "evidence": [], "missing": ["more"], "misconceptions": []} for c in q01.criteria]
    with serve() as (base_url, recorded):
        recorded.script = [{"delay": 3.0, "content": json.dumps({"criteria": criteria, "feedback": "MODEL-FEEDBACK"})}]
        recorded.streams = [{"stream": ["NEXT"]}]
        env = {"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "sk-test", "INTERVIEWER_MODEL": "test-model",
               "INTERVIEWER_LLM__STRUCTURED_OUTPUT": "json_schema"}  # fmt: skip
        app = App(tmp_path / "home", free_port(), env).start()
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 1000})
            page.goto(app.url)
            start(page, "round 1", "practice", "en")
            page.get_by_text("[q01]").first.wait_for()
            answer(page, "Data parallel keeps a full copy per GPU and all-reduces the gradients after backward.")
            page.get_by_text("[q02]").first.wait_for(timeout=10_000)
            assert page.get_by_text("the feedback card appears here when it is ready").first.is_visible()
            assert "MODEL-FEEDBACK" not in page.content()
            page.screenshot(path=str(ARTIFACTS / "model-next-question-before-grade.png"), full_page=True)
            page.get_by_text("MODEL-FEEDBACK").first.wait_for(timeout=20_000)
            page.screenshot(path=str(ARTIFACTS / "model-card-after-grade.png"), full_page=True)
            page.close()
        finally:
            app.stop()
