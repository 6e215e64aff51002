"""The Gradio app. Handlers are named methods of :class:`Handlers`, testable without a browser;
:func:`build` only lays out components and wires them to the handlers.

The page keeps no interview state of its own: each event rebuilds the view from the session's
stored turns, so a reload, a second tab or a server restart shows the same interview, and the
session id lives in the browser (``gr.BrowserState``) so a reload resumes it.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import gradio as gr

from interviewer.application.exports import REPORTS, delete_session, replay_file, report_files
from interviewer.application.grading import GradingWorker
from interviewer.application.history import History
from interviewer.application.labels import grader_line
from interviewer.application.plans import select_plan
from interviewer.application.speech import KeptAudio, Speaker, SpeechError, Transcriber, as_recorded, compact_recording
from interviewer.application.turns import Playback, Step, settle, speak
from interviewer.errors import InterviewerError
from interviewer.faces.page_text import (
    LANGUAGES,
    PLANS,
    STATUS,
    WORDS,
    PageLang,
    browser_lang,
    choices,
    flag_names,
    page_lang,
    plan_name,
)
from interviewer.grading.grade import Grade
from interviewer.grading.offline import limitation_note
from interviewer.interview import report as reports
from interviewer.interview.engine import Committed, Engine
from interviewer.interview.state import Exchange, Prompt, SessionState, format_clock
from interviewer.interview.store import LOCAL, SavedEndpoint, SessionRow, StaleMove, Store, Turn
from interviewer.interview.verbatim import fence, mark_identifiers
from interviewer.interview.verbatim import markdown as said_markdown
from interviewer.pools import start_all
from interviewer.services import Services
from interviewer.settings import EndpointSettings, Settings

# Threads for the page's handlers: a live turn mostly waits on the model (its stream, a practice
# card's grade), so a server holds many at once; Gradio's default of 40 would queue candidates.
MAX_THREADS = 256
OPENAI_URL = "https://api.openai.com/v1"
STREAM_INTERVAL_S = 0.1
PLAYBACK_KEPT_S = 60.0  # how long a spoken turn's steps stay for a page that follows it late
MODES = ["interview", "practice"]
KEEP_DRAFT = "(text) => { try { localStorage.setItem('interviewer-draft', text || ''); } catch (e) {} return []; }"
# The browser, not the server, opens the microphone: a refusal never reaches a handler, and Gradio's
# recorder then does nothing visible. The page watches its own requests for the microphone and puts
# one line under it saying why and what to do (in the page's language: the microphone's label says
# which); the answer box is not touched.
MICROPHONE_LINES = {
    "zh": {
        "NotAllowedError": "浏览器拒绝了麦克风：在地址栏左侧的网站设置里允许本页使用麦克风，再录一次。照常输入也可以。",
        "NotFoundError": "没有找到麦克风：接上一个再录，或直接输入回答。",
        "NotReadableError": "麦克风正被别的程序占用：关掉它再录，或直接输入回答。",
        "insecure": "这个页面不是 HTTPS（也不是本机地址），浏览器不提供麦克风：用 HTTPS 打开才能口述回答；输入不受影响。",
        "other": "麦克风打不开（{name}）：直接输入回答，或刷新页面再试。",
    },
    "en": {
        "NotAllowedError": "The browser refused the microphone: allow it for this page (the site settings at the left of the "
        "address bar), then Record again. Typing works as before.",
        "NotFoundError": "No microphone was found: connect one and Record again, or type the answer.",
        "NotReadableError": "Another program is using the microphone: close it and Record again, or type the answer.",
        "insecure": "This page is not served over HTTPS (or from this machine), so the browser offers no microphone: open it over "
        "HTTPS to answer aloud. Typing works as before.",
        "other": "The microphone could not be opened ({name}): type the answer, or reload the page and try again.",
    },
}
WATCH_MICROPHONE = (
    """() => {
  const lines = LINES;
  const say = (key, name) => {
    const mic = document.querySelector('#mic');
    const line = document.querySelector('#speech-line');
    if (!mic || !line) return;
    const said = lines[/[\u4e00-\u9fff]/.test(mic.textContent) ? 'zh' : 'en'];
    const text = key ? (said[key] || said.other).replace('{name}', name || '') : '';
    const target = line.querySelector('.prose') || line;
    target.textContent = text;
    line.setAttribute('role', 'alert');
  };
  const media = navigator.mediaDevices;
  if (!media) { say('insecure'); return []; }
  if (media.interviewerWatched) return [];
  media.interviewerWatched = true;
  const open = media.getUserMedia.bind(media);
  media.getUserMedia = async (wanted) => {
    try {
      const stream = await open(wanted);
      if (wanted && wanted.audio) say('');
      return stream;
    } catch (error) {
      if (wanted && wanted.audio) say(error && error.name in lines.en ? error.name : 'other', error && error.name);
      throw error;
    }
  };
  return [];
}"""
).replace("LINES", json.dumps(MICROPHONE_LINES, ensure_ascii=False))
RESTORE_DRAFT = "() => { try { return localStorage.getItem('interviewer-draft') || ''; } catch (e) { return ''; } }"
TEXT = {
    "zh": {
        "skip": "（跳过）",
        "dont-know": "（不会）",
        "score": "得分",
        "left": "本轮剩余",
        "question": "第 {n}/{total} 题",
        "start_first": "先在左侧开始一场面试。",
        "empty": "回答是空的：写点什么，或者点“跳过”。",
        "running": "这场面试还没结束（已答 {answered} 题）。再点一次“开始面试”就开始新的一场；这一场会留在“历史”里，随时可以继续。",
        "thinking": "……",
        "grading": "评分中：评分卡片稍后出现在这里，面试照常继续。",
        "still_grading": "（还有 {n} 个回答在评分，分数随后补上。）",
        "finishing": "报告生成中：还有 {n} 个回答在评分。稍后点“恢复”查看完整报告。",
        "followups": "追问 {n}",
        "good_answer": "好的回答包含什么",
        "read": "要读的",
        "transcribed": "已转写{audio}，用时 {seconds:.1f} 秒：先读一遍、改正，再点“提交”。",
        "no_recording": "没有收到录音：再录一次，或直接输入回答。",
        "pieces": "（分 {n} 段）",
        "recording": "录音",
        "not_kept": "（录音未能保存：{reason}；文字不受影响）",
        "kept_failed": "；录音已随这道题保存",
    },
    "en": {
        "skip": "(skipped)",
        "dont-know": "(I don't know)",
        "score": "Score",
        "left": "left in this round",
        "question": "question {n}/{total}",
        "start_first": "Start an interview on the left first.",
        "empty": "The answer is empty: write something, or press Skip.",
        "running": "This interview is not over ({answered} answered). Press Start again for a new one; this one stays in History.",
        "thinking": "…",
        "grading": "Grading: the feedback card appears here when it is ready; the interview goes on.",
        "still_grading": "({n} answers are still being graded; their scores fill in when they are.)",
        "finishing": "The report is being finished: {n} answers are still being graded. Resume in a moment to see it.",
        "followups": "{n} follow-up(s)",
        "good_answer": "What a good answer contains",
        "read": "Read",
        "transcribed": "Transcribed{audio} in {seconds:.1f} s: read it, correct it, then press Submit.",
        "no_recording": "No recording arrived: record again, or type the answer.",
        "pieces": " (in {n} pieces)",
        "recording": "Recording",
        "not_kept": " (the recording could not be kept: {reason}; the words are unaffected)",
        "kept_failed": "; the recording is kept with this answer",
    },
}


@dataclass
class View:
    """Everything the page shows after an event."""

    session_id: str
    position: int  # how far the session had gone when this view was made
    chat: list[dict[str, Any]]  # content: Markdown, or {"path": …} for a recording replayed
    progress: str
    feedback: str
    code_question: bool
    can_answer: bool
    can_continue: bool
    can_retry: bool
    report: str = ""  # the Markdown report once the interview is over
    report_file: str | None = None  # its self-contained HTML, for download
    report_pdf: str | None = None
    speaking: bool = False  # a moment of the interviewer's words streaming in: only the chat changed
    playing: int | None = None  # the turn a commit just stored, which the page's `follow` then plays
    notice: str = ""  # one line under the answer box: why a move was not taken
    keep_draft: bool = False  # the move was refused: what is typed in the answer box stays there
    lang: PageLang = "zh"  # the interview's language, which the page's controls follow
    retry_target: str = ""  # the prompt Retry answers again ("[q01]", "[q01 ↪]"), named on the button
    last_round: bool = False  # the summary on screen ends the plan: the button leads to the report
    mode: str = "interview"


def feedback_card(grade: Grade, lang: str) -> str:
    """The practice-mode feedback card: the score, any flags, then the criteria as in the report."""
    # the card may arrive after the next question is on screen: it names the answer it grades
    asked = grade.question_id or ""
    label = f"[{asked.split('/')[0]}{' ↪' if '/' in asked else ''}] " if asked else ""
    lines = [f"### {label}{TEXT[lang]['score']} {grade.score}/10", ""]
    if grade.flags:
        lines.append("`" + "` `".join(flag_names(page_lang(lang), list(grade.flags))) + "`\n")
    if grade.feedback:  # the verdict first, one point a line (a bare newline would run them together)
        lines += ["  \n".join(grade.feedback.splitlines()), ""]
    lines += reports.criteria_markdown(grade, lang, already_said=grade.feedback or "")
    if note := limitation_note(grade):
        lines += ["", f"<sub>{note}</sub>"]
    return "\n".join(lines)


def reference_card(state: SessionState, turn: Turn) -> str:
    """What a good answer to the prompt ``turn`` passed on contains, and what to read: shown in
    practice mode after "I don't know", so the candidate learns it before the next try."""
    lang = state.lang
    t = TEXT[lang]
    question = state.bank.get(turn.question_id or "")
    followup = state.followup(question, turn.followup_id)
    lines = [f"### [{question.id}{' ↪' if followup else ''}] {t['good_answer']}", ""]
    if followup is None:
        lines.append(mark_identifiers(getattr(question.reference_answer, lang)))
        references = question.references
    else:
        for criterion in followup.criteria:
            best = max(criterion.levels, key=lambda level: level.score)
            lines.append(f"- **{getattr(criterion.description, lang)}**: {mark_identifiers(getattr(best, lang))}")
        lines += [f"- {mark_identifiers(expected)}" for expected in followup.expects]
        references = followup.references
    lines += ["", f"{t['read']}: " + ", ".join(f"`{ref}`" for ref in references[:4])]
    return "\n".join(lines)


class Handlers:
    """The app's event handlers, each a plain method returning plain values."""

    def __init__(self, services: Services):
        self.services = services  # the server's: its settings and its endpoint, as the server configured them
        self._own: dict[str, Services] = {}  # a user's own endpoint, for that user's sessions only
        self._own_lock = threading.Lock()
        # grades are computed in the background, many at once (they wait on the model, not the CPU),
        # each by its session's engine (the server's model or the owner's own)
        self.worker = GradingWorker(self._turn_engine, services.settings.llm.grading_workers)
        # each answer's turn is spoken once, on these threads, from its commit (see Playback); a
        # reload or a second tab leaves a turn still being spoken to it, and one whose turn died
        # with a previous process is decided at once
        self._speakers = ThreadPoolExecutor(services.settings.llm.grading_workers, thread_name_prefix="turn")
        self._playbacks: dict[int, Playback] = {}
        self._playbacks_lock = threading.Lock()

    def start_threads(self) -> None:
        """A server starts its pools' threads before candidates arrive (see ``pools``), and makes
        what the first recording would wait for."""
        self.worker.start()
        bank = self.services.bank.questions
        threading.Thread(target=self.transcriber.warm, args=(bank,), name="speech-warm-up", daemon=True).start()
        start_all(self._speakers, self.settings.llm.grading_workers)

    def _live_turns(self) -> set[int]:
        with self._playbacks_lock:
            return {turn_id for turn_id, playback in self._playbacks.items() if not playback.done}

    def _speak(self, committed: Committed) -> Playback:
        """The turn's playback, started now unless it already runs; playbacks finished a minute ago
        are dropped (a page follows its turn within seconds; later, the store has the outcome)."""
        turn_id = committed.turn.id
        now = time.monotonic()
        with self._playbacks_lock:
            for old, playback in list(self._playbacks.items()):
                if playback.finished_at is not None and now - playback.finished_at > PLAYBACK_KEPT_S:
                    del self._playbacks[old]
            existing = self._playbacks.get(turn_id)
            if existing is not None:
                return existing
            playback = self._playbacks[turn_id] = Playback()
        services = self._session_services(committed.before.row)
        steps = speak(services.engine(), services.interviewer, committed, self.worker)
        self._speakers.submit(playback.run, steps)
        return playback

    @property
    def settings(self) -> Settings:
        return self.services.settings

    @property
    def store(self) -> Store:
        return self.services.store

    @property
    def engine(self) -> Engine:
        """The server's engine (the server's model, or offline)."""
        return self.services.engine()

    # -- whose model: the server's, or a user's own ------------------------------------------------
    def _user_services(self, user: str) -> Services | None:
        """The parts with the user's own endpoint, if the user set one (kept in the store, so it
        outlives a restart); None: the user has none."""
        with self._own_lock:
            if user in self._own:
                return self._own[user]
        saved = self.store.saved_endpoint(user)
        if saved is None:
            return None
        own = self.services.with_endpoint(_endpoint(saved.base_url, saved.model, saved.api_key))
        with self._own_lock:
            return self._own.setdefault(user, own)

    def _session_services(self, row: SessionRow) -> Services:
        """The parts a session is graded and spoken with: its owner's own endpoint if it was
        started on it, else the server's. A session started on the server's endpoint never moves
        to another one, and an own endpoint is never used for anyone else's session."""
        if row.endpoint == "own":
            own = self._user_services(row.owner)
            return own if own is not None else self.services.with_endpoint(_endpoint(None, None, None))  # offline, said on the badge
        return self.services

    def _session_engine(self, session_id: str) -> Engine:
        return self._session_services(self.store.session(session_id)).engine()

    def _turn_engine(self, turn_id: int) -> Engine:
        return self._session_engine(self.store.turn(turn_id).session_id)

    def badge(self, user: str = LOCAL, lang: PageLang | None = None) -> str:
        """Which grader the user's new interviews get."""
        services = self._user_services(user) or self.services
        return f"**{grader_line(services.settings, lang)}**"

    def check_model(
        self, base_url: str = "", model: str = "", api_key: str = "", lang: PageLang = "en", *, user: str = LOCAL
    ) -> tuple[str, str, str]:
        """Check an endpoint; when every check passes, the interviews this user starts from then on
        use it. With nothing typed, the server's own endpoint is checked (and nothing changes).

        A URL typed here is used only with the key typed beside it, never with the server's key, and
        the server's endpoint only as the server configured it: typing only a model name is refused.
        Returns the result (in the page's language), the badge, and an empty key box: the key is
        never shown back."""
        from interviewer.faces.doctor import ENVIRONMENT, FORM, run

        w = WORDS[lang]
        base_url, model, api_key = (base_url or "").strip(), (model or "").strip(), (api_key or "").strip()
        if not (base_url or model or api_key):  # the server's endpoint, as configured
            source = ENVIRONMENT if self.settings.endpoint.configured else FORM
            checks = run(self.settings, source, lang)
            result = "\n".join("- " + (w["check_ok"] if c.ok else w["check_fix"]) + c.message for c in checks)
            return result, self.badge(user, lang), ""
        if not (base_url or api_key):
            return "- " + w["check_fix"] + w["own_url_needed"], self.badge(user, lang), ""
        # no URL typed: OpenAI's own, written out (a client left without one reads the server's OPENAI_BASE_URL)
        base_url = base_url or OPENAI_URL
        endpoint = _endpoint(base_url, model or None, api_key or None)
        candidate = self.services.with_endpoint(endpoint)
        checks = run(candidate.settings, FORM, lang)
        result = "\n".join("- " + (w["check_ok"] if c.ok else w["check_fix"]) + c.message for c in checks)
        if all(c.ok for c in checks):
            self.store.save_endpoint(user, SavedEndpoint(base_url, model or None, api_key or None), time.time())
            with self._own_lock:
                self._own[user] = candidate
            result += "\n\n" + w["switched"]
        return result, self.badge(user, lang), ""

    def _owned(self, session_id: str, user: str) -> str:
        """The session id, once it is known to be the user's: another user's session is answered
        exactly as one that does not exist."""
        session_id = (session_id or "").strip()
        if not session_id:
            raise InterviewerError(TEXT["zh"]["start_first"] + " " + TEXT["en"]["start_first"])
        if self.store.owner_of(session_id) != user:
            raise InterviewerError(f"no session '{session_id}' · 没有这个会话")
        return session_id

    def _state(self, session_id: str, user: str) -> SessionState:
        session_id = self._owned(session_id, user)
        return self._session_engine(session_id).open(session_id, grade=False, leave=self._live_turns())

    # -- events ------------------------------------------------------------------------------------
    def start(self, plan: str, question: str | None, topic: str | None, mode: str, lang: str, *, user: str = LOCAL) -> View:
        """A new interview of the user's, on the user's own endpoint if one is set, else the server's."""
        kind, _, number = plan.partition(" ")
        value = {"full": number or None, "round": number, "question": question or "", "topic": topic or ""}.get(kind)
        chosen = select_plan(self.store, self.services.bank, kind, value, owner=user)
        own = self._user_services(user)
        state = (
            (own or self.services)
            .engine()
            .start(
                chosen,
                mode="practice" if mode == "practice" else "interview",
                lang="en" if lang == "en" else "zh",
                max_followups=self.settings.interview.max_followups,
                owner=user,
                endpoint="own" if own is not None else "server",
            )
        )
        return self.view(state)

    def left_behind(self, session_id: str, *, user: str = LOCAL) -> SessionState | None:
        """The interview a Start would leave behind: one on screen that has answers and is not over.
        One with no answers yet is deleted instead (it holds nothing of the candidate's, and each
        Start left another "active" row in the history)."""
        try:
            session_id = self._owned(session_id, user)
            state = self.engine.state(session_id)
        except InterviewerError:
            return None
        if state.prompt.kind == "end":
            return None
        if not state.turns:
            delete_session(self.store, self.settings.home, session_id)
            return None
        return state

    def resume(self, session_id: str, *, user: str = LOCAL) -> View:
        """Come back to a session: the time away does not count against the round."""
        session_id = self._owned(session_id, user)
        state = self._session_engine(session_id).resume(session_id, grade=False, leave=self._live_turns())
        for turn in state.grading:  # after a restart: what was left pending is graded again, once
            self.worker.submit(turn.id)
        return self.view(state, latest=self._last_card(state))  # in practice, the last card is back after a reload

    @staticmethod
    def _last_card(state: SessionState) -> Grade | None:
        """Practice mode's card for the last answer, to show again when the page is drawn anew."""
        last = state.last_answered()
        return last.grade if state.mode == "practice" and last is not None and last.kind == "answer" else None

    # A move carries ``at``, the position of the view it was made on (a tab's own, kept by the page),
    # so a second tab or a double click cannot answer a prompt it never showed (StaleMove).
    # Answering is two events: ``commit`` stores the answer straight away (outside the event queue),
    # and ``follow`` then plays the turn: the interviewer's words as they come, the grade alongside.
    def commit(self, session_id: str, answer: str, code: str = "", at: int | None = None, *, user: str = LOCAL) -> View:
        """Store the answer; the view shows it, with the interviewer about to speak."""
        state = self._state(session_id, user)
        text = _answer_text(answer, code)
        if not text:
            return self.refused(state, TEXT[state.lang]["empty"])
        committed = self._session_engine(state.id).commit(state.id, "answer", text, at=at)
        self._grade_soon(committed)
        self._speak(committed)
        return replace(self.view(committed.deciding, thinking=True), playing=committed.turn.id)

    def commit_retry(self, session_id: str, answer: str, code: str = "", at: int | None = None, *, user: str = LOCAL) -> View:
        state = self._state(session_id, user)
        text = _answer_text(answer, code)
        if not text:
            return self.refused(state, TEXT[state.lang]["empty"])
        committed = self._session_engine(state.id).commit_retry(state.id, text, at=at)
        self._grade_soon(committed)
        self._speak(committed)
        return replace(self.view(committed.deciding, thinking=True), playing=committed.turn.id)

    def refused(self, state: SessionState, notice: str) -> View:
        """The session as it stands, the reason on one line under the answer box, the draft kept."""
        return replace(self.view(state, latest=self._last_card(state)), notice=notice, keep_draft=True)

    def _grade_soon(self, committed: Committed) -> None:
        """A model grade starts with the commit, not when the turn's event gets its thread: under load
        that is seconds earlier (the turn decides on its own; offline the turn grades at once)."""
        if not self._session_services(committed.before.row).engine().grades_at_once:
            self.worker.submit(committed.turn.id, decide_first=False)

    def follow(self, session_id: str, turn_id: int | None, *, user: str = LOCAL) -> Iterator[View]:
        """Show the turn a commit began (``turn_id``; none when the commit was refused), as it is
        spoken: the follow-up as the interviewer words it, view by view, then the next prompt as
        stored; in practice mode the feedback card when it is ready."""
        if not session_id or turn_id is None:
            return
        session_id = self._owned(session_id, user)
        engine = self._session_engine(session_id)
        state = engine.state(session_id)
        turn = next((t for t in state.turns if t.id == turn_id), None)
        with self._playbacks_lock:
            playback = self._playbacks.get(turn.id) if turn is not None else None
        if playback is None and turn is not None and turn.decision is None:  # its commit was in another process
            playback = self._speak(Committed(state.before(turn), turn))
        if playback is None:  # nothing to play (decided long ago, or elsewhere): the view as it stands
            yield self.view(state)
            return
        shown_at = 0.0
        decided: Step | None = None
        for step in playback.follow():
            if step.state.prompt.kind != "deciding":
                decided = step
            elif step.speaking is None:
                continue  # the answer on screen: `commit` has shown that already
            elif time.monotonic() - shown_at < STREAM_INTERVAL_S:
                continue  # words come in faster than a page repaints: send them in ~10 batches a second
            shown_at = time.monotonic()
            yield self.step_view(step)
        if decided is not None:
            for step in settle(engine, decided, self.worker, grade_wait_s=self.settings.llm.grade_budget_s + 5):
                yield self.step_view(step)

    def answer(self, session_id: str, answer: str, code: str = "", at: int | None = None, *, user: str = LOCAL) -> Iterator[View]:
        """Both events in one (for callers without a page): commit, then follow."""
        committed = self.commit(session_id, answer, code, at, user=user)
        yield committed
        yield from self.follow(session_id, committed.playing, user=user)

    def retry(self, session_id: str, answer: str, code: str = "", at: int | None = None, *, user: str = LOCAL) -> Iterator[View]:
        committed = self.commit_retry(session_id, answer, code, at, user=user)
        yield committed
        yield from self.follow(session_id, committed.playing, user=user)

    def skip(self, session_id: str, at: int | None = None, *, user: str = LOCAL) -> View:
        state = self._state(session_id, user)
        return self.view(self._session_engine(state.id).skip(state.id, at=at).state)

    def dont_know(self, session_id: str, at: int | None = None, *, user: str = LOCAL) -> View:
        state = self._state(session_id, user)
        outcome = self._session_engine(state.id).dont_know(state.id, at=at)
        view = self.view(outcome.state)
        passed = next((x.turn for x in outcome.state.exchanges if x.turn.id == outcome.turn_id), None)
        if outcome.state.mode == "practice" and passed is not None and passed.question_id:
            view = replace(view, feedback=reference_card(outcome.state, passed))
        return view

    def proceed(self, session_id: str, at: int | None = None, *, user: str = LOCAL) -> View:
        state = self._state(session_id, user)
        return self.view(self._session_engine(state.id).proceed(state.id, at=at))

    def current(self, session_id: str, *, user: str = LOCAL) -> View:
        """The session as it stands, for a tab whose view fell behind."""
        return self.view(self._state(session_id, user))

    @functools.cached_property
    def transcriber(self) -> Transcriber:
        """Recordings to text through the server's transcription endpoint (see *speech* settings)."""
        return Transcriber(self.services.settings, self.services.glossary)

    def transcribe(
        self, session_id: str, recording: str | None, typed: str, *, user: str = LOCAL, progress: Callable[[int, int], None] | None = None
    ) -> tuple[str, str]:
        """The answer box with the recording's words after what was typed, and the line under it. The
        question on screen gives the transcription its vocabulary; nothing is submitted. The
        recording is kept (``speech.keep_recordings``) for the answer to this prompt, compacted
        while the endpoint listens; it is kept when the transcription fails too."""
        session_id = self._owned(session_id, user)
        state = self.current_state(session_id, user=user)
        said = TEXT[state.lang]
        if not recording:
            raise InterviewerError(said["no_recording"])
        path = Path(recording)
        kept = self._recordings.submit(self._keep, state, path) if self.settings.speech.keep_recordings else None
        question_id = state.prompt.question_id
        question = self.services.bank.get(question_id) if question_id else None
        try:
            heard = self.transcriber.transcribe(path, question, state.lang, progress)
        except SpeechError as exc:
            line = self._kept(state, kept, None)
            raise SpeechError(f"{exc}{said['kept_failed'] if line == '' else line or ''}") from None
        text = f"{typed.rstrip()}\n{heard.text}" if (typed or "").strip() else heard.text
        audio = f" {heard.audio_s:.0f} s" if heard.audio_s is not None else ""
        audio += said["pieces"].format(n=heard.pieces) if heard.pieces > 1 else ""
        return text, said["transcribed"].format(audio=audio, seconds=heard.total_s) + (self._kept(state, kept, heard.text) or "")

    @functools.cached_property
    def _recordings(self) -> ThreadPoolExecutor:
        """Recordings are stored while the endpoint listens, and compacted after."""
        return ThreadPoolExecutor(2, thread_name_prefix="recording")

    def _keep(self, state: SessionState, path: Path) -> int | None:
        """Store the recording as it came for the prompt on screen (its id; None: nothing to keep)."""
        try:
            recorded = as_recorded(path)
        except OSError:
            return None  # the file is gone: the transcription says so
        if not recorded.audio:
            return None
        kept = self.store.add_recording(state.id, state.position, recorded.mime, recorded.audio, recorded.seconds, None, time.time())
        return kept.id

    def _kept(self, state: SessionState, kept: Future[int | None] | None, transcript: str | None) -> str | None:
        """ "" when the recording is kept, the line to add when it could not be, None when there was
        nothing to keep; the transcript goes with the recording."""
        if kept is None:
            return None
        try:
            recording_id = kept.result()
        except InterviewerError as exc:  # a full or read-only disk, a database gone away
            return TEXT[state.lang]["not_kept"].format(reason=exc)
        if recording_id is None:
            return None
        self._recordings.submit(self._compact, recording_id, transcript)
        return ""

    def _compact(self, recording_id: int, transcript: str | None) -> None:
        """After the words are on their way: the transcript noted with the recording, which is then
        compacted (ffmpeg takes ~100 ms of a core for a short answer, at a lower priority than the
        page's handlers)."""
        with contextlib.suppress(InterviewerError):  # a full disk: the recording stays as it came
            if transcript is not None:
                self.store.set_transcript(recording_id, transcript)
            recording = self.store.recording(recording_id)
            recorded = KeptAudio(recording.mime, self.store.recording_audio(recording_id), recording.seconds)
            compact = compact_recording(recorded)
            if compact is not recorded:
                self.store.replace_audio(recording_id, compact.mime, compact.audio)

    @functools.cached_property
    def speaker(self) -> Speaker:
        """The interviewer's words to audio through the server's speech endpoint."""
        return Speaker(self.services.settings)

    @property
    def voiced(self) -> bool:
        """Whether the page offers the interviewer's voice: a speech endpoint, and ffmpeg, which
        Gradio's streaming audio needs to cut the spoken sentences into a stream."""
        return self.speaker.available and shutil.which("ffmpeg") is not None

    def words_of_turn(self, session_id: str, turn_id: int, *, user: str = LOCAL) -> Iterator[str]:
        """The interviewer's words after this turn as they grow: the follow-up while it is worded,
        then the next prompt as stored (the page's voice speaks them as they come)."""
        session_id = self._owned(session_id, user)
        with self._playbacks_lock:
            playback = self._playbacks.get(turn_id)
        if playback is None:  # decided already, or in another process: the prompt as it stands
            yield self.words_on_screen(session_id, user=user)
            return
        for step in playback.follow():
            if step.state.prompt.kind != "deciding":
                yield step.state.prompt.text or ""
                return
            if step.speaking:
                yield step.speaking

    def words_on_screen(self, session_id: str, *, user: str = LOCAL) -> str:
        return self.current_state(session_id, user=user).prompt.text or ""

    def current_state(self, session_id: str, *, user: str = LOCAL) -> SessionState:
        return self._state(session_id, user)

    def clock(self, session_id: str, *, user: str = LOCAL) -> Any:
        """The progress line again, so the round's time left keeps counting down on screen."""
        if not session_id:
            return gr.skip()
        try:
            return self._progress(self.engine.state(self._owned(session_id, user)))
        except InterviewerError:
            return gr.skip()

    def history(self, *, user: str = LOCAL) -> History:
        """The user's own history, its newest page."""
        return History(self.store, self.services.bank, owner=user)

    # -- the view ----------------------------------------------------------------------------------
    def step_view(self, step: Step) -> View:
        """A moment of a live turn: the words being spoken, any notice, the card once graded."""
        state = step.state
        practice = state.mode == "practice"
        view = self.view(state, latest=step.grade if practice else None, thinking=not step.speaking)
        if step.speaking:
            view = replace(
                view, chat=[*view.chat, {"role": "assistant", "content": "**↪** " + mark_identifiers(step.speaking)}], speaking=True
            )
        if step.notices and view.chat:
            last = view.chat[-1]
            notes = "\n\n".join(f"<sub>{n}</sub>" for n in step.notices)
            view = replace(view, chat=[*view.chat[:-1], {**last, "content": f"{last['content']}\n\n{notes}"}])
        if practice and step.grade is None and step.turn_id is not None and not view.feedback:
            view = replace(view, feedback=TEXT[state.lang]["grading"])
        return view

    def view(self, state: SessionState, latest: Grade | None = None, thinking: bool = False) -> View:
        t = TEXT[state.lang]
        prompt = state.prompt
        chat: list[dict[str, Any]] = []
        replays = self._replays(state)
        for exchange in state.exchanges:
            chat.extend(self._exchange_messages(state, exchange, replays.get(exchange.turn.id, [])))
        if prompt.kind == "deciding":
            if thinking:
                chat.append({"role": "assistant", "content": t["thinking"]})
        else:
            chat.append({"role": "assistant", "content": self._prompt_text(prompt, state)})
        report_md, report_file, report_pdf = "", None, None
        if prompt.kind == "end" and state.grading:
            report_md = t["finishing"].format(n=len(state.grading))
        elif prompt.kind == "end":
            built, html_path, pdf_path = report_files(self.settings.home / REPORTS, state, self.services.titles, self.settings.llm.prices)
            report_md, report_file, report_pdf = reports.markdown(built), str(html_path), str(pdf_path) if pdf_path else None
        return View(
            session_id=state.id,
            position=state.position,
            lang=state.lang,
            mode=state.mode,
            chat=chat,
            progress=self._progress(state),
            feedback=feedback_card(latest, state.lang) if latest is not None else "",
            code_question=prompt.answer_format == "code",
            can_answer=prompt.answerable,
            can_continue=prompt.kind == "round-summary",
            last_round=prompt.kind == "round-summary" and prompt.number == prompt.total,
            can_retry=state.mode == "practice" and prompt.answerable and any(e.turn.kind == "answer" for e in state.exchanges),
            retry_target=_retry_target(state),
            report=report_md,
            report_file=report_file,
            report_pdf=report_pdf,
        )

    def _progress(self, state: SessionState) -> str:
        t = TEXT[state.lang]
        prompt = state.prompt
        progress = f"**{grader_line(self._session_services(state.row).settings, state.lang)}**\n\n"
        if prompt.round_title:
            progress += f"**{prompt.round_title}** · {t['question'].format(n=prompt.number, total=prompt.total)}"
            if prompt.time_left_s is not None:
                progress += f" · {format_clock(prompt.time_left_s)} {t['left']}"
        return progress + f"\n\n`session {state.id}` · {WORDS[state.lang][state.mode + '_short']}"

    @staticmethod
    def _prompt_text(prompt: Prompt, state: SessionState) -> str:
        if prompt.kind == "round-summary" and prompt.summary is not None:
            rows = "\n".join(
                f"- {q.id}: {'—' if q.score is None else q.score}"
                + (f" ({TEXT[state.lang]['followups'].format(n=len(q.followups))})" if q.followups else "")
                for q in prompt.summary.questions
            )
            pending = [t for t in state.grading if t.round == prompt.round]
            still = "\n\n" + TEXT[state.lang]["still_grading"].format(n=len(pending)) if pending else ""
            return f"{prompt.text}\n\n{rows}{still}"
        label = {"question": f"**[{prompt.question_id}]** ", "followup": "**↪** "}.get(prompt.kind, "")
        return label + mark_identifiers(prompt.text)

    def _replays(self, state: SessionState) -> dict[int, list[str]]:
        """The files of the recordings kept with the session's turns, by turn."""
        if not state.exchanges:
            return {}
        replays: dict[int, list[str]] = {}
        for recording in self.store.recordings(state.id):
            if recording.turn_id is not None and (path := replay_file(self.store, recording)) is not None:
                replays.setdefault(recording.turn_id, []).append(str(path))
        return replays

    @staticmethod
    def _exchange_messages(state: SessionState, exchange: Exchange, replays: Sequence[str] = ()) -> list[dict[str, Any]]:
        t = TEXT[state.lang]
        turn = exchange.turn
        asked = ("**↪** " if exchange.is_followup else f"**[{turn.question_id}]** ") + mark_identifiers(exchange.asked)
        answer = said_markdown(turn.answer or "") if turn.kind == "answer" else t[turn.kind]
        messages: list[dict[str, Any]] = [{"role": "assistant", "content": asked}, {"role": "user", "content": answer or ""}]
        messages += [{"role": "user", "content": {"path": path, "alt_text": t["recording"]}} for path in replays]
        if state.mode == "practice" and turn.grade is not None and turn.kind == "answer" and turn.decision is not None:
            messages.append({"role": "assistant", "content": f"{t['score']} {turn.grade.score}/10"})
        return messages


def _retry_target(state: SessionState) -> str:
    """The prompt a retry answers again: the last one answered, not necessarily the one on screen."""
    last = state.exchanges[-1] if state.exchanges else None
    return f"[{last.turn.question_id}{' ↪' if last.is_followup else ''}]" if last is not None else ""


def retry_label(view: View) -> str:
    label = WORDS[view.lang]["retry"]
    return f"{label} {view.retry_target}" if view.retry_target else label


def proceed_label(view: View) -> str:
    return WORDS[view.lang]["to_report" if view.last_round else "proceed"]


def _answer_text(answer: str, code: str) -> str:
    """The answer as stored: what was typed, then the editor's kernel as a fenced block (so it is
    shown, graded and reported as code)."""
    answer, code = answer or "", code or ""  # a box the page never filled sends null
    kernel = fence(code.strip("\n"), "cpp") if code.strip() else ""
    return "\n\n".join(part for part in (answer.strip(), kernel) if part)


def _endpoint(base_url: str | None, model: str | None, api_key: str | None) -> EndpointSettings:
    """An endpoint made of these values alone: nothing is read from the environment (the server's
    ``OPENAI_*``), so a user's endpoint never carries the server's key."""
    from pydantic import SecretStr

    return EndpointSettings.model_construct(base_url=base_url, model=model, api_key=SecretStr(api_key) if api_key else None)


def user_of(request: gr.Request | None) -> str:
    """Whom a page's event acts for: the signed-in user, or the local user of a server without sign-in."""
    name = getattr(request, "username", None) if request is not None else None
    return str(name) if name else LOCAL


def browser_secret(store: Store, home: Path) -> str:
    """The key that encrypts the session id kept in the browser. It must outlive the server, or a
    restart would make every browser's saved session unreadable, and every process of a deployment
    must share it, or a reload served by another process would find nothing: so it lives in the
    store. A data folder from before keeps the key it had in its ``browser-secret`` file."""
    old = home / "browser-secret"
    kept = old.read_text(encoding="utf-8").strip() if old.is_file() else ""
    return store.server_secret("browser-session", kept or secrets.token_hex(32))


LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}


def on_loopback(host: str) -> bool:
    """True when ``host`` is reachable from this machine only."""
    import ipaddress

    if host.strip("[]").lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: whatever it resolves to, it is not known to be loopback


def serve(
    services: Services, host: str | None = None, share: bool = False, credentials: tuple[str, str] | None = None, progress: bool = True
) -> None:
    """Serve the app as ``python app.py`` and ``interviewer serve`` do, behind a sign-in whenever
    one is needed: when any account exists (each user then sees only their own), with ``--auth``,
    and always before listening beyond loopback or opening a public link (``--share``,
    ``GRADIO_SHARE``, ``--host`` or ``GRADIO_SERVER_NAME`` not on loopback), which is refused
    without one."""
    import hmac

    from interviewer.application.accounts import Accounts

    host = host or os.environ.get("GRADIO_SERVER_NAME") or "127.0.0.1"
    share = share or os.environ.get("GRADIO_SHARE", "").strip().lower() in {"1", "true", "yes", "on"}
    accounts = Accounts(services.store)
    signed_in = bool(accounts.names()) or credentials is not None
    if not signed_in and (share or not on_loopback(host)):
        reach = "a public link" if share else f"listening on {host} (beyond this machine)"
        raise InterviewerError(
            f"{reach} needs a sign-in: add an account with `interviewer users add NAME --password-stdin`, or pass --auth user:password"
        )

    from interviewer.application.startup import ready_index, warm

    if note := ready_index(services, progress=progress):  # after the refusal: a refused start builds nothing
        print(note, flush=True)
    warm(services)

    def check(user: str, password: str) -> bool:
        if credentials is not None and hmac.compare_digest(user.encode(), credentials[0].encode()):
            return hmac.compare_digest(password.encode(), credentials[1].encode())
        return accounts.verify(user, password)

    launch(create(services), server_name=host, share=share, auth=check if signed_in else None)


def launch(demo: gr.Blocks, **options: Any) -> None:
    """Start the page's server: the page's own script first in its head (see ``page_script``), and
    enough threads for candidates waiting on a model."""
    from starlette.middleware import Middleware

    from interviewer.faces import look
    from interviewer.faces.page_script import PageScript

    middleware = {"middleware": [Middleware(PageScript)]}
    demo.launch(
        max_threads=MAX_THREADS, app_kwargs=middleware, theme=look.theme(), css=look.CSS, quiet=True, prevent_thread_lock=True, **options
    )
    # Gradio's own start-up lines advise `share=True` in code, which would open a public link with no
    # login; the product's lines name the address and the commands that share behind a sign-in
    print(f"Open {demo.local_url} in a browser (Ctrl-C stops the server).", flush=True)
    if options.get("auth") is not None:
        print("Sign-in required: each user sees only their own interviews.", flush=True)
    if demo.share_url:
        print(f"Public link, behind the sign-in: {demo.share_url}", flush=True)
    else:
        print("To share it, behind a sign-in: interviewer users add NAME --password-stdin, then interviewer serve --share", flush=True)
    demo.block_thread()


def build(handlers: Handlers, secret: str | None = None) -> gr.Blocks:
    """Lay out the page and wire events to the handlers."""
    bank = handlers.services.bank
    topics = sorted({t for q in bank.questions for t in q.topics})

    with gr.Blocks(title="AI-Infra mock interview") as demo:
        w = WORDS["en"]  # the page is laid out in English; on load it turns to the browser's language
        session_id = gr.BrowserState("", storage_key="interviewer-session", secret=secret)
        position = gr.State(None)  # this tab's own: how far the session had gone when it last showed it
        with gr.Sidebar() as sidebar:
            title = gr.Markdown(w["title"])
            lang = gr.Radio(LANGUAGES, value="en", label=w["language"])
            plan = gr.Radio(choices("en", PLANS), value="full", label=w["plan"])
            question = gr.Dropdown(question_choices(bank, "en"), value=bank.questions[0].id, label=w["question_pick"], visible=False)
            topic = gr.Dropdown(topics, value=topics[0], label=w["topic_pick"], visible=False)
            mode = gr.Radio(choices("en", MODES), value="interview", label=w["mode"])
            start = gr.Button(w["start"], variant="primary")
            with gr.Accordion(w["model"], open=False) as model_panel:
                model_help = gr.Markdown(w["model_help"])
                model_url = gr.Textbox(label=w["base_url"], placeholder="http://127.0.0.1:8000/v1")
                model_name = gr.Textbox(label=w["model_name"], placeholder="Qwen2.5-32B-Instruct")
                model_key = gr.Textbox(label=w["api_key"], type="password")
                check = gr.Button(w["check"])
                check_result = gr.Markdown()
        progress = gr.Markdown(handlers.badge(), elem_id="progress")  # pinned to the top: the clock stays in sight
        with gr.Row(equal_height=False):
            with gr.Column(scale=3, min_width=360):  # the conversation
                chat = gr.Chatbot([welcome("en")], height="58vh", min_height=360, label=w["chat"], latex_delimiters=[], elem_id="chat")
                answer = gr.Textbox(lines=6, label=w["answer"], placeholder=w["placeholder"])
                speaking = handlers.transcriber.available  # a microphone only with a transcription endpoint
                mic = gr.Audio(sources=["microphone"], type="filepath", format="wav", label=w["mic"], visible=speaking, elem_id="mic")
                voiced = handlers.voiced  # the interviewer's voice, with a speech endpoint and ffmpeg
                with gr.Row(visible=voiced):
                    voice_on = gr.Checkbox(value=False, label=w["voice_on"], scale=1)
                    voice = gr.Audio(streaming=True, autoplay=True, interactive=False, label=w["voice"], elem_id="voice", scale=3)
                speech_off = gr.Markdown(
                    "" if speaking else f"<sub>{w['speech_off']} {handlers.transcriber.unavailable_reason_in('en')}</sub>",
                    elem_classes="notice",
                    elem_id="speech-line",  # also where the page says why the microphone did not open (WATCH_MICROPHONE)
                )
                code = gr.Code(language="cpp", label=w["code"], visible=False, lines=14)
                notice = gr.Markdown("", elem_classes="notice")
                playing = gr.State(None)  # the turn this tab's last Submit stored, for its `follow` to play
                with gr.Row():  # nothing to answer before an interview starts
                    submit = gr.Button(w["submit"], variant="primary", interactive=False)
                    dont_know = gr.Button(w["dont_know"], interactive=False)
                    skip = gr.Button(w["skip"], interactive=False)
                    retry = gr.Button(w["retry"], visible=False)
                    proceed = gr.Button(w["proceed"], visible=False)
            with gr.Column(scale=2, min_width=320):  # beside it (below it on a phone): the feedback card
                feedback = gr.Markdown(latex_delimiters=[], elem_id="card")
        report_box = gr.Markdown(latex_delimiters=[])  # the whole width, at the end
        with gr.Row():
            download = gr.DownloadButton(w["download"], visible=False)
            download_pdf = gr.DownloadButton(w["download_pdf"], visible=False)
        # past sessions and progress: the page's whole width (in the sidebar the table showed two of
        # its eight columns and the topic chart's legend was cut off)
        with gr.Accordion(w["history"], open=False, elem_id="history") as history_panel:
            history = gr.Dataframe(headers=HISTORY_COLUMNS["en"], interactive=False, wrap=True)
            with gr.Row(equal_height=True):
                resume_id = gr.Textbox(label=w["resume_id"], scale=3)
                resume = gr.Button(w["resume"], scale=1)
            axes: dict[str, Any] = {"x_title": w["axis_started"], "y_lim": [0, 10], "height": 260, "x_axis_format": TIME_AXIS}
            with gr.Row(equal_height=False):
                chart = gr.LinePlot(x="started", y="overall", title=w["overall_chart"], y_title=w["axis_overall"], **axes)
                weakest = gr.Dataframe(headers=WEAKEST_COLUMNS["en"], interactive=False, label=w["weakest"])
            # the weakest few only, across the width: a line and a legend entry for each of twenty
            # topics was unreadable, and the legend (one row, under the chart) was cut off
            topic_chart = gr.LinePlot(
                x="started", y="score", color="topic", title=w["topic_chart"], y_title=w["axis_score"], color_title=w["axis_topic"], **axes
            )

        outputs = [
            session_id,
            position,
            chat,
            progress,
            feedback,
            code,
            answer,
            submit,
            dont_know,
            skip,
            retry,
            proceed,
            download,
            download_pdf,
            playing,
            notice,
            lang,
            mode,
            report_box,
        ]

        def shown_values(view: View) -> tuple[Any, ...]:
            """The outputs that are plain values: the session, the tab's position, chat, progress, card."""
            return (view.session_id, view.position, view.chat, view.progress, view.feedback)

        def show(view: View) -> tuple[Any, ...]:
            draft: dict[str, Any] = {} if view.keep_draft else {"value": ""}
            w = WORDS[view.lang]
            return (
                *shown_values(view),
                gr.update(visible=view.code_question, **draft),
                gr.update(interactive=view.can_answer, **draft),
                gr.update(value=w["submit"], interactive=view.can_answer),
                gr.update(value=w["dont_know"], interactive=view.can_answer),
                gr.update(value=w["skip"], interactive=view.can_answer),
                gr.update(value=retry_label(view), visible=view.can_retry),
                gr.update(value=proceed_label(view), visible=view.can_continue),
                gr.update(label=w["download"], visible=view.report_file is not None, value=view.report_file),
                gr.update(label=w["download_pdf"], visible=view.report_pdf is not None, value=view.report_pdf),
                view.playing,
                view.notice,
                view.lang,  # the sidebar shows the language and mode of the interview on screen
                view.mode,
                view.report,
            )

        def show_words(view: View) -> tuple[Any, ...]:
            """While the interviewer's words stream in only the chat changes. Every other output
            gets the value it already shows, not an update: Gradio builds a new component for each
            update, ``gr.skip()`` included, and renders its config again (7.8 ms an event with
            skips, 2.6 ms with values, measured on these fourteen outputs). The answer box and the
            code editor were cleared by the commit and stay locked until the turn is decided."""
            return (
                *shown_values(view),
                "",
                "",
                *(WORDS[view.lang][name] for name in ("submit", "dont_know", "skip")),
                retry_label(view),
                proceed_label(view),
                view.report_file,
                view.report_pdf,
                view.playing,
                view.notice,
                view.lang,
                view.mode,
                view.report,
            )

        def guarded(handler: Any) -> Any:
            def run(request: gr.Request, *args: Any) -> Iterator[tuple[Any, ...]]:
                user = user_of(request)
                try:
                    result = handler(*args, user=user)
                    shown = False
                    for view in [result] if isinstance(result, View) else result:
                        shown = True
                        yield show_words(view) if view.speaking else show(view)
                    if not shown:  # nothing to show (a follow after a refused submit): leave the page as it is
                        yield (gr.skip(),) * len(outputs)
                except StaleMove as exc:  # another tab or a second click moved first: show where things are
                    yield show(handlers.refused(handlers.current_state(args[0], user=user), str(exc)))
                except InterviewerError as exc:
                    raise gr.Error(str(exc)) from None

            run.__name__ = handler.__name__
            return run

        def refresh_history(chosen: str, request: gr.Request) -> tuple[Any, Any, Any, Any]:
            return history_frames(handlers.history(user=user_of(request)), page_lang(chosen))

        def pick(event: gr.SelectData, request: gr.Request) -> Iterator[tuple[Any, ...]]:
            """A click on a history row resumes that session (its id is the row's last cell)."""
            row = event.row_value or []
            yield from guarded(handlers.resume)(request, str(row[-1]) if row else "")

        labelled = [title, lang, plan, question, topic, mode, start, model_panel, model_help, model_url, model_name]
        labelled += [model_key, check, history_panel, resume_id, resume, chart, topic_chart, weakest, chat, answer, code]
        labelled += [submit, dont_know, skip, retry, proceed, progress, mic, speech_off, voice_on, voice]

        def relabel(chosen: str, saved: str, request: gr.Request) -> tuple[Any, ...]:
            """Every control in the chosen language; before any interview, the welcome in it too."""
            lang_ = page_lang(chosen)
            w = WORDS[lang_]
            idle = not saved
            return (
                w["title"],
                gr.update(label=w["language"]),
                gr.update(label=w["plan"], choices=choices(lang_, PLANS)),
                gr.update(label=w["question_pick"], choices=question_choices(bank, lang_)),
                gr.update(label=w["topic_pick"]),
                gr.update(label=w["mode"], choices=choices(lang_, MODES)),
                w["start"],
                gr.update(label=w["model"]),
                w["model_help"],
                gr.update(label=w["base_url"]),
                gr.update(label=w["model_name"]),
                gr.update(label=w["api_key"]),
                w["check"],
                gr.update(label=w["history"]),
                gr.update(label=w["resume_id"]),
                w["resume"],
                gr.update(title=w["overall_chart"], x_title=w["axis_started"], y_title=w["axis_overall"]),
                gr.update(title=w["topic_chart"], x_title=w["axis_started"], y_title=w["axis_score"], color_title=w["axis_topic"]),
                gr.update(label=w["weakest"]),
                gr.update(label=w["chat"], value=[welcome(lang_)]) if idle else gr.update(label=w["chat"]),
                gr.update(label=w["answer"], placeholder=w["placeholder"]),
                gr.update(label=w["code"]),
                *(w[name] for name in ("submit", "dont_know", "skip", "retry", "proceed")),
                handlers.badge(user_of(request), lang_) if idle else gr.skip(),
                gr.update(label=w["mic"]),
                "" if speaking else f"<sub>{w['speech_off']} {handlers.transcriber.unavailable_reason_in(lang_)}</sub>",
                gr.update(label=w["voice_on"]),
                gr.update(label=w["voice"]),
            )

        def drill_pickers(chosen: str) -> tuple[Any, Any]:
            return gr.update(visible=chosen == "question"), gr.update(visible=chosen == "topic")

        quiet: dict[str, Any] = {"show_progress": "hidden"}
        lang.change(relabel, [lang, session_id], labelled, api_visibility="undocumented", queue=False, **quiet).then(
            refresh_history, [lang], [history, chart, topic_chart, weakest], api_visibility="undocumented", **quiet
        )
        plan.change(drill_pickers, [plan], [question, topic], api_visibility="undocumented", queue=False, **quiet)

        def out_of_the_way(saved: str, warned_about: str = "") -> Any:
            """Once an interview runs, the sidebar closes (on a phone it would cover the question);
            it stays open after a warning, for the second Start."""
            return gr.update(open=False) if saved and not warned_about else gr.skip()

        keep_choices = [outputs.index(lang), outputs.index(mode)]  # what the candidate just picked for the next one

        def start_or_warn(request: gr.Request, *args: Any) -> Iterator[tuple[Any, ...]]:
            """Start, unless an interview with answers is still running on this page: the first
            Start says so (it stays in History), the second one starts the new interview."""
            *choices_, saved, warned_about = args
            running = handlers.left_behind(saved, user=user_of(request))
            if running is not None and warned_about != saved:
                notice = TEXT[page_lang(choices_[-1])]["running"].format(answered=sum(t.kind == "answer" for t in running.turns))
                gr.Warning(notice)
                shown = list(show(handlers.refused(running, notice)))
                for index in keep_choices:
                    shown[index] = gr.skip()
                yield (*shown, saved)
                return
            for shown_ in guarded(handlers.start)(request, *choices_):
                yield (*shown_, "")

        warned = gr.State("")  # the session this page last warned a Start would leave
        started = start.click(start_or_warn, [plan, question, topic, mode, lang, session_id, warned], [*outputs, warned], api_name="start")
        started.success(out_of_the_way, [session_id, warned], [sidebar], api_visibility="undocumented", queue=False).then(
            refresh_history, [lang], [history, chart, topic_chart, weakest], api_visibility="undocumented"
        )
        # the answer is stored by a plain request (no queue to lose it in); the turn then streams in
        # an event with no concurrency limit: its work is waiting on the model, not on this machine.
        # Neither shows Gradio's progress overlay: the chat's own mark says the interviewer is about
        # to speak, and the overlay's timer, redrawn on fourteen outputs for the whole turn (in
        # practice until the card, ~19 s), cost a page more CPU than the turn itself.
        unlisted: dict[str, Any] = {"api_visibility": "undocumented", "show_progress": "hidden"}

        def speak_turn(request: gr.Request, sid: str, turn_id: int | None, on: bool) -> Iterator[bytes]:
            if on and turn_id is not None:
                yield from spoken(lambda user: handlers.words_of_turn(sid, turn_id, user=user), request)

        def speak_prompt(request: gr.Request, sid: str, on: bool) -> Iterator[bytes]:
            if on and sid:
                yield from spoken(lambda user: iter([handlers.words_on_screen(sid, user=user)]), request)

        def spoken(words: Callable[[str], Iterator[str]], request: gr.Request) -> Iterator[bytes]:
            """Sentence by sentence; a voice that fails is one warning, the words stay on screen."""
            try:
                yield from handlers.speaker.stream(words(user_of(request)))
            except InterviewerError as exc:
                gr.Warning(str(exc))

        committed = submit.click(
            guarded(handlers.commit), [session_id, answer, code, position], outputs, api_name="submit", queue=False, **quiet
        )
        committed.success(guarded(handlers.follow), [session_id, playing], outputs, api_name="follow", concurrency_limit=None, **quiet)
        retried = retry.click(
            guarded(handlers.commit_retry), [session_id, answer, code, position], outputs, api_name="retry", queue=False, **quiet
        )
        retried.success(guarded(handlers.follow), [session_id, playing], outputs, api_name="follow_retry", concurrency_limit=None, **quiet)
        moved = [
            skip.click(guarded(handlers.skip), [session_id, position], outputs, api_name="skip"),
            dont_know.click(guarded(handlers.dont_know), [session_id, position], outputs, api_name="dont_know"),
            proceed.click(guarded(handlers.proceed), [session_id, position], outputs, api_name="next_round"),
        ]
        # the interviewer's voice, beside the words: the turn's words as they are worded, or the prompt now on screen
        if voiced:
            for event in (committed, retried):
                event.success(speak_turn, [session_id, playing, voice_on], [voice], concurrency_limit=None, **unlisted)
            for event in [started, *moved]:
                event.success(speak_prompt, [session_id, voice_on], [voice], concurrency_limit=None, **unlisted)
        resume.click(guarded(handlers.resume), [resume_id], outputs, api_name="resume").success(
            out_of_the_way, [session_id], [sidebar], api_visibility="undocumented", queue=False
        )

        def clock(saved: str, request: gr.Request) -> Any:
            return handlers.clock(saved, user=user_of(request))

        gr.Timer(15).tick(clock, [session_id], progress, api_visibility="undocumented", queue=False)

        def check_model(base_url: str, model: str, api_key: str, chosen: str, request: gr.Request) -> tuple[str, str, str]:
            return handlers.check_model(base_url, model, api_key, page_lang(chosen), user=user_of(request))

        def transcribe_recording(
            request: gr.Request,
            sid: str,
            recording: str | None,
            typed: str,
            progress: Any = gr.Progress(),  # noqa: B008 (Gradio's way)
        ) -> tuple[Any, Any]:
            """The recording's words land in the answer box (after anything typed), to be read and
            corrected before Submit; a failure is one line and leaves the box as it is."""

            def advance(done: int, total: int) -> None:
                if total > 1:
                    progress((done, total), unit="pieces")

            try:
                return handlers.transcribe(sid, recording, typed or "", user=user_of(request), progress=advance)
            except InterviewerError as exc:
                raise gr.Error(str(exc)) from None

        mic.stop_recording(transcribe_recording, [session_id, mic, answer], [answer, notice], api_name="transcribe")
        check.click(check_model, [model_url, model_name, model_key, lang], [check_result, progress, model_key], api_name="check_model")

        def on_load(saved: str, request: gr.Request) -> tuple[Any, ...]:
            first_visit = [gr.skip()] * len(outputs)
            first_visit[outputs.index(lang)] = browser_lang(request.headers.get("accept-language"))
            if not saved:
                return tuple(first_visit)
            try:
                return show(replace(handlers.resume(saved, user=user_of(request)), keep_draft=True))  # the draft is the page's (below)
            except InterviewerError:
                return tuple(first_visit)

        # The unsent answer lives in the browser, written as it is typed (in the page, no request),
        # emptied when the answer box is (a Submit), and put back after a reload.
        answer.change(None, [answer], None, js=KEEP_DRAFT)
        if speaking:
            demo.load(None, None, None, js=WATCH_MICROPHONE)
        demo.load(on_load, [session_id], outputs, api_visibility="undocumented").then(None, None, [answer], js=RESTORE_DRAFT).then(
            out_of_the_way, [session_id], [sidebar], api_visibility="undocumented", queue=False
        ).then(refresh_history, [lang], [history, chart, topic_chart, weakest], api_visibility="undocumented")
        history.select(pick, None, outputs, api_visibility="undocumented").success(
            out_of_the_way, [session_id], [sidebar], api_visibility="undocumented", queue=False
        )
    demo.queue(default_concurrency_limit=8, max_size=512)
    return demo


def question_choices(bank: Any, lang: PageLang) -> list[tuple[str, str]]:
    return [(f"{q.id} · {(q.question.en if lang == 'en' else q.question.zh)[:40]}", q.id) for q in bank.questions]


def welcome(lang: PageLang) -> Any:
    return {"role": "assistant", "content": WORDS[lang]["welcome"]}


CHARTED_TOPICS = 5
WEAKEST_COLUMNS = {"zh": ["主题", "平均分", "题数"], "en": ["topic", "mean score", "questions"]}
TIME_AXIS = "%m-%d %H:%M"  # a 24-hour clock, axes and table alike: Vega-Lite's default axis read "03 PM" as "03"
HISTORY_COLUMNS = {
    "zh": ["开始于", "计划", "模式", "语言", "已答", "总分", "状态", "会话 id"],
    "en": ["started", "plan", "mode", "language", "answered", "overall", "status", "session id"],
}


def history_frames(history: History, lang: PageLang = "en") -> tuple[Any, Any, Any, Any]:
    """The history as the page shows it, in its language: the table (the date first; the id, which
    a click on the row resumes, last; dates as the charts' axes show them), the overall chart's
    frame, the five weakest topics' scores over time, and the weakest topics ranked."""
    import pandas as pd

    language_names = {value: name for name, value in LANGUAGES}
    rows = [
        [r.started.strftime(TIME_AXIS), plan_name(r.plan, lang), WORDS[lang].get(f"{r.mode}_short", r.mode),
         language_names.get(r.lang, r.lang), f"{r.answered}/{r.questions}",
         "—" if r.overall is None else r.overall, STATUS[lang].get(r.status, r.status), r.id]
        for r in history.rows()
    ]  # fmt: skip
    table = pd.DataFrame(rows, columns=HISTORY_COLUMNS[lang])
    overall = pd.DataFrame(history.overall_over_time(), columns=["started", "overall", "plan"])
    topics = pd.DataFrame(history.topic_history(), columns=["session_id", "started", "topic", "score"])
    topics["started"] = pd.to_datetime(topics["started"])
    ranked = history.weakest_topics()
    topics = topics[topics["topic"].isin([topic for topic, _mean, _n in ranked[:CHARTED_TOPICS]])]
    weakest = pd.DataFrame([list(row) for row in ranked], columns=WEAKEST_COLUMNS[lang])
    return table, overall, topics, weakest


def create(services: Services | None = None) -> gr.Blocks:
    """The app on its defaults (or the given services): the page and its handlers."""
    services = services or Services(Settings())
    # Gradio builds a component for every gr.update it sends and asks for its upload folder each
    # time, resolving the path on disk: 14 outputs an event, a path walk each, were a fifth of the
    # app's time with fifty candidates answering at once. Resolved once, the same folder is read
    # from the environment (a folder set by the operator stays theirs).
    os.environ.setdefault("GRADIO_TEMP_DIR", str((Path(tempfile.gettempdir()) / "gradio").resolve()))
    handlers = Handlers(services)
    handlers.start_threads()
    handlers.worker.resume(services.store)  # what a restart left ungraded is graded now, once
    return build(handlers, secret=browser_secret(services.store, services.settings.home))
