"""The Gradio app. Handlers are named methods of :class:`Handlers`, testable without a browser;
:func:`build` only lays out components and wires them to the handlers.

The page keeps no interview state of its own: each event rebuilds the view from the session's
stored turns, so a reload, a second tab or a server restart shows the same interview, and the
session id lives in the browser (``gr.BrowserState``) so a reload resumes it.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import gradio as gr

from interviewer.errors import InterviewerError
from interviewer.faces.batch import Graders
from interviewer.grading.grade import Grade
from interviewer.grading.offline import limitation_note
from interviewer.interview.session import Prompt, Session, format_clock, latest_scores, make_plan, weak_plan
from interviewer.interview.store import Store, Turn
from interviewer.settings import Settings

PLANS = ["full", "round 1", "round 2", "round 3", "question", "topic", "weak"]
TEXT = {
    "zh": {
        "offline": "离线评分（未配置模型）",
        "skip": "（跳过）",
        "dont-know": "（不会）",
        "score": "得分",
        "left": "本轮剩余",
        "question": "第 {n}/{total} 题",
        "start_first": "先在左侧开始一场面试。",
        "empty": "回答是空的：写点什么，或者点“跳过”。",
    },
    "en": {
        "offline": "Offline grading (no model configured)",
        "skip": "(skipped)",
        "dont-know": "(I don't know)",
        "score": "Score",
        "left": "left in this round",
        "question": "question {n}/{total}",
        "start_first": "Start an interview on the left first.",
        "empty": "The answer is empty: write something, or press Skip.",
    },
}


@dataclass
class View:
    """Everything the page shows after an event."""

    session_id: str
    chat: list[dict[str, str]]
    progress: str
    feedback: str
    code_question: bool
    can_answer: bool
    can_continue: bool
    can_retry: bool
    report: str = ""  # the Markdown report once the interview is over
    report_file: str | None = None  # its self-contained HTML, for download
    report_pdf: str | None = None


def feedback_card(grade: Grade, lang: str) -> str:
    """The practice-mode feedback card: the score, any flags, then the criteria as in the report."""
    from interviewer.interview.report import criteria_markdown

    lines = [f"### {TEXT[lang]['score']} {grade.score}/10", ""]
    if grade.flags:
        lines.append("`" + "` `".join(grade.flags) + "`\n")
    if grade.feedback:  # the verdict first, one point a line (a bare newline would run them together)
        lines += ["  \n".join(grade.feedback.splitlines()), ""]
    lines += criteria_markdown(grade, lang)
    if note := limitation_note(grade):
        lines += ["", f"<sub>{note}</sub>"]
    return "\n".join(lines)


class Handlers:
    """The app's event handlers, each a plain method returning plain values."""

    def __init__(self, settings: Settings, graders: Graders, store: Store):
        self.settings = settings
        self.graders = graders
        self.store = store
        self.grader = graders.choose("auto")  # the LLM when an endpoint is configured
        self.interviewer: Any = None
        if settings.endpoint.configured:
            from interviewer.interview.interviewer import LLMInterviewer

            self.interviewer = LLMInterviewer(settings)

    @property
    def badge(self) -> str:
        if self.settings.endpoint.configured:
            from interviewer.provider import describe_endpoint

            return f"**LLM: {describe_endpoint(self.settings)}** (offline grader as second opinion)"
        return "**" + TEXT["zh"]["offline"] + " · " + TEXT["en"]["offline"] + "**"

    def check_model(self, base_url: str = "", model: str = "", api_key: str = "") -> tuple[str, str, str]:
        """Check an endpoint; when every check passes, new interviews on this server use it.

        Returns the result, the badge, and an empty key box: the key is never shown back."""
        from pydantic import SecretStr

        from interviewer.faces.doctor import run
        from interviewer.settings import EndpointSettings

        candidate = self.settings
        if base_url.strip() or model.strip() or api_key.strip():
            endpoint = EndpointSettings(
                base_url=base_url.strip() or self.settings.endpoint.base_url,
                api_key=SecretStr(api_key.strip()) if api_key.strip() else self.settings.endpoint.api_key,
                model=model.strip() or self.settings.endpoint.model,
            )
            candidate = self.settings.model_copy(update={"endpoint": endpoint})
        checks = run(candidate)
        result = "\n".join(("- ok: " if c.ok else "- **fix**: ") + c.message for c in checks)
        if candidate is not self.settings and all(c.ok for c in checks):
            self.use(candidate)
            result += "\n\nNew interviews on this server now use this model."
        return result, self.badge, ""

    def use(self, settings: Settings) -> None:
        """Switch the grader and the interviewer for the interviews started from now on."""
        self.settings = settings
        self.graders = Graders(settings)
        self.grader = self.graders.choose("auto")
        self.interviewer = None
        if settings.endpoint.configured:
            from interviewer.interview.interviewer import LLMInterviewer

            self.interviewer = LLMInterviewer(settings)

    def _session(self, session_id: str) -> Session:
        if not session_id:
            raise InterviewerError(TEXT["zh"]["start_first"] + " " + TEXT["en"]["start_first"])
        return Session.open(self.store, self.graders.bank, self.grader, session_id)

    # -- events ------------------------------------------------------------------------------------
    def start(self, plan: str, question: str | None, topic: str | None, mode: str, lang: str) -> View:
        bank = self.graders.bank
        if plan == "weak":
            chosen = weak_plan(self.store, bank)
        elif plan.startswith("round"):
            chosen = make_plan(bank, "round", int(plan.split()[1]))
        elif plan == "question":
            chosen = make_plan(bank, "question", question or "")
        elif plan == "topic":
            chosen = make_plan(bank, "topic", topic or "")
        else:
            chosen = make_plan(bank, "full")
        session = Session.start(
            self.store,
            bank,
            self.grader,
            chosen,
            mode="practice" if mode == "practice" else "interview",
            lang="en" if lang == "en" else "zh",
            max_followups=self.settings.interview.max_followups,
        )
        return self.view(session)

    def resume(self, session_id: str) -> View:
        """Come back to a session: the time away does not count against the round."""
        if not session_id.strip():
            raise InterviewerError(TEXT["zh"]["start_first"] + " " + TEXT["en"]["start_first"])
        return self.view(Session.resume(self.store, self.graders.bank, self.grader, session_id.strip()))

    def answer(self, session_id: str, answer: str, code: str = "") -> Iterator[View]:
        """Submit an answer; with an LLM interviewer the follow-up then streams in, view by view."""
        session = self._session(session_id)
        text = "\n\n".join(part for part in (answer.strip(), code.strip()) if part)
        if not text:
            raise InterviewerError(TEXT[session.lang]["empty"])
        outcome = session.submit(text)
        latest = outcome.grade if outcome.show_feedback else None
        view = self.view(session, latest=latest)
        yield view
        prompt = outcome.next
        if self.interviewer is None or prompt.kind != "followup" or prompt.question_id is None:
            return
        question = self.graders.bank.get(prompt.question_id)
        followup = next(f for f in question.followups if f.id == prompt.followup_id)
        worded = ""
        for worded in self.interviewer.stream(question, followup, text, outcome.grade, session.lang):
            view = replace(view, chat=[*view.chat[:-1], {"role": "assistant", "content": "**↪** " + worded}])
            yield view
        session.word_followup(worded)

    def submit(self, session_id: str, answer: str, code: str = "") -> View:
        """The final view after an answer (the streamed steps consumed)."""
        views = list(self.answer(session_id, answer, code))
        return views[-1]

    def retry(self, session_id: str, answer: str, code: str = "") -> View:
        session = self._session(session_id)
        text = "\n\n".join(part for part in (answer.strip(), code.strip()) if part)
        if not text:
            raise InterviewerError(TEXT[session.lang]["empty"])
        outcome = session.submit(text, retry=True)
        return self.view(session, latest=outcome.grade)

    def skip(self, session_id: str) -> View:
        session = self._session(session_id)
        session.skip()
        return self.view(session)

    def dont_know(self, session_id: str) -> View:
        session = self._session(session_id)
        session.dont_know()
        return self.view(session)

    def proceed(self, session_id: str) -> View:
        session = self._session(session_id)
        session.continue_after_summary()
        return self.view(session)

    def clock(self, session_id: str) -> Any:
        """The progress line again, so the round's time left keeps counting down on screen."""
        if not session_id:
            return gr.skip()
        try:
            return self.view(self._session(session_id)).progress
        except InterviewerError:
            return gr.skip()

    def history(self) -> list[list[Any]]:
        rows = []
        for row in self.store.sessions():
            scores = Session(self.store, self.graders.bank, self.graders.offline, row).scores()
            answered = sum(1 for r in scores.rounds for q in r.questions if q.score is not None)
            rows.append(
                [row.id, row.status, row.mode, row.lang, row.plan["label"], f"{answered}/{len(row.plan['questions'])}", scores.overall]
            )
        return rows

    def progress_over_time(self) -> Any:
        """Overall score of every session with an answer, oldest first (for the chart)."""
        import datetime

        import pandas as pd

        rows = []
        for row in reversed(self.store.sessions()):
            overall = Session(self.store, self.graders.bank, self.graders.offline, row).scores().overall
            if overall is not None:
                when = datetime.datetime.fromtimestamp(row.created_at)
                rows.append({"started": when, "overall": overall, "plan": row.plan["label"]})
        return pd.DataFrame(rows, columns=["started", "overall", "plan"])

    def topics_over_time(self) -> Any:
        """The score of each topic per session, oldest first (for the per-topic chart)."""
        import pandas as pd

        from interviewer.application.progress import topic_history

        rows = topic_history(self.store, self.graders.bank, self.graders.offline)
        frame = pd.DataFrame(rows, columns=["session_id", "started", "topic", "score"])
        frame["started"] = pd.to_datetime(frame["started"])
        return frame

    def weakest_topics(self, limit: int = 8) -> list[list[Any]]:
        """Topics by the mean of their questions' latest scores, weakest first."""
        by_topic: dict[str, list[float]] = {}
        for question_id, score in latest_scores(self.store).items():
            for topic in self.graders.bank.get(question_id).topics:
                by_topic.setdefault(topic, []).append(score)
        ranked = sorted((sum(v) / len(v), topic, len(v)) for topic, v in by_topic.items())
        return [[topic, round(mean, 1), n] for mean, topic, n in ranked[:limit]]

    # -- the view ----------------------------------------------------------------------------------
    def view(self, session: Session, latest: Grade | None = None) -> View:
        lang = session.lang
        t = TEXT[lang]
        turns = session.turns()
        chat: list[dict[str, str]] = []
        for turn in turns:
            chat.extend(self._turn_messages(session, turn))
        prompt = session.prompt()
        if prompt.kind in {"question", "followup", "round-summary", "end"}:
            chat.append({"role": "assistant", "content": self._prompt_text(prompt, session)})
        progress = f"{self.badge}\n\n"
        if prompt.round_title:
            progress += f"**{prompt.round_title}** · {t['question'].format(n=prompt.number, total=prompt.total)}"
            if prompt.time_left_s is not None:
                progress += f" · {format_clock(prompt.time_left_s)} {t['left']}"
        progress += f"\n\n`session {session.id}` · {session.mode}"
        report_md, report_file, report_pdf = "", None, None
        if prompt.kind == "end":
            report_md, report_file, report_pdf = self._report(session)
        return View(
            session_id=session.id,
            chat=chat,
            progress=progress,
            feedback=feedback_card(latest, lang) if latest is not None else "",
            code_question=prompt.answer_format == "code",
            can_answer=prompt.kind in {"question", "followup"},
            can_continue=prompt.kind == "round-summary",
            can_retry=session.mode == "practice" and prompt.kind in {"question", "followup"} and any(t.kind == "answer" for t in turns),
            report=report_md,
            report_file=report_file,
            report_pdf=report_pdf,
        )

    def _report(self, session: Session) -> tuple[str, str, str | None]:
        from interviewer.interview import report as reports

        built = reports.build(session)
        folder = self.settings.home / "reports"
        folder.mkdir(parents=True, exist_ok=True)
        page = folder / f"report-{session.id}.html"
        page.write_text(reports.to_html(built), encoding="utf-8")
        pdf: str | None = str(folder / f"report-{session.id}.pdf")
        try:
            Path(str(pdf)).write_bytes(reports.to_pdf(built))
        except InterviewerError:
            pdf = None  # no PDF engine here: the HTML prints to PDF from the browser
        return reports.markdown(built), str(page), pdf

    def _prompt_text(self, prompt: Prompt, session: Session) -> str:
        if prompt.kind == "round-summary" and prompt.summary is not None:
            rows = "\n".join(
                f"- {q.id}: {'—' if q.score is None else q.score}" + (f" (追问 {len(q.followups)})" if q.followups else "")
                for q in prompt.summary.questions
            )
            return f"{prompt.text}\n\n{rows}"
        label = {"question": f"**[{prompt.question_id}]** ", "followup": "**↪** "}.get(prompt.kind, "")
        return label + prompt.text

    def _turn_messages(self, session: Session, turn: Turn) -> list[dict[str, str]]:
        t = TEXT[session.lang]
        if turn.kind == "summary" or turn.question_id is None:
            return []
        question = self.graders.bank.get(turn.question_id)
        if turn.followup_id:
            followup = next(f for f in question.followups if f.id == turn.followup_id)
            asked = "**↪** " + followup.question.get(session.lang)
        else:
            asked = f"**[{question.id}]** " + question.question.get(session.lang)
        answer = turn.answer if turn.kind == "answer" else t[turn.kind]
        messages = [{"role": "assistant", "content": asked}, {"role": "user", "content": answer or ""}]
        if session.mode == "practice" and turn.grade is not None and turn.kind == "answer":
            messages.append({"role": "assistant", "content": f"{t['score']} {turn.grade['score']}/10"})
        return messages


def browser_secret(home: Path) -> str:
    """The key that encrypts the session id kept in the browser. It must outlive the server, or a
    restart would make every browser's saved session unreadable; so it lives in the data folder."""
    path = home / "browser-secret"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_hex(32), encoding="utf-8")
        path.chmod(0o600)
    return path.read_text(encoding="utf-8").strip()


def build(handlers: Handlers, secret: str | None = None) -> gr.Blocks:
    """Lay out the page and wire events to the handlers."""
    bank = handlers.graders.bank
    questions = [(f"{q.id} · {q.question.zh[:30]}", q.id) for q in bank.questions]
    topics = sorted({t for q in bank.questions for t in q.topics})

    with gr.Blocks(title="AI-Infra mock interview") as demo:
        session_id = gr.BrowserState("", storage_key="interviewer-session", secret=secret)
        with gr.Sidebar():
            gr.Markdown("## AI-Infra mock interview")
            plan = gr.Radio(PLANS, value="full", label="Plan")
            question = gr.Dropdown(questions, value=questions[0][1], label="Question (drill)")
            topic = gr.Dropdown(topics, value=topics[0], label="Topic (drill)")
            mode = gr.Radio(["interview", "practice"], value="interview", label="Mode")
            lang = gr.Radio(["zh", "en"], value="zh", label="Language")
            start = gr.Button("Start", variant="primary")
            with gr.Accordion("Model", open=False):
                gr.Markdown(
                    "An OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, DeepSeek, Qwen …) grades and asks the "
                    "follow-ups; without one, grading is offline. Applies to this server's new interviews; "
                    "`OPENAI_BASE_URL`, `OPENAI_API_KEY` and `INTERVIEWER_MODEL` set it at start-up."
                )
                model_url = gr.Textbox(label="Base URL", placeholder="http://127.0.0.1:8000/v1")
                model_name = gr.Textbox(label="Model", placeholder="Qwen2.5-32B-Instruct")
                model_key = gr.Textbox(label="API key", type="password", placeholder="never shown back")
                check = gr.Button("Check connection and use")
                check_result = gr.Markdown()
            with gr.Accordion("History", open=False):
                history = gr.Dataframe(
                    headers=["id", "status", "mode", "lang", "plan", "answered", "overall"], interactive=False, wrap=True
                )
                resume_id = gr.Textbox(label="Session id to resume")
                resume = gr.Button("Resume")
                chart = gr.LinePlot(x="started", y="overall", title="Overall score over time", y_lim=[0, 10], height=220)
                topic_chart = gr.LinePlot(
                    x="started", y="score", color="topic", title="Score per topic over time", y_lim=[0, 10], height=260
                )
                weakest = gr.Dataframe(headers=["topic", "mean score", "questions"], interactive=False, label="Weakest topics")
        progress = gr.Markdown(handlers.badge)
        chat = gr.Chatbot(height=480, label="Interview")
        answer = gr.Textbox(lines=6, label="Your answer", placeholder="中文或 English")
        code = gr.Code(language="cpp", label="Kernel (C++/CUDA)", visible=False, lines=14)
        with gr.Row():
            submit = gr.Button("Submit", variant="primary")
            dont_know = gr.Button("I don't know")
            skip = gr.Button("Skip")
            retry = gr.Button("Retry (practice)", visible=False)
            proceed = gr.Button("Next round", visible=False)
        feedback = gr.Markdown()
        with gr.Row():
            download = gr.DownloadButton("Download the report (HTML)", visible=False)
            download_pdf = gr.DownloadButton("Download the report (PDF)", visible=False)

        outputs = [session_id, chat, progress, feedback, code, answer, submit, dont_know, skip, retry, proceed, download, download_pdf]

        def show(view: View) -> tuple[Any, ...]:
            return (
                view.session_id,
                view.chat,
                view.progress,
                view.report or view.feedback,
                gr.update(visible=view.code_question, value=""),
                gr.update(value="", interactive=view.can_answer),
                gr.update(interactive=view.can_answer),
                gr.update(interactive=view.can_answer),
                gr.update(interactive=view.can_answer),
                gr.update(visible=view.can_retry),
                gr.update(visible=view.can_continue),
                gr.update(visible=view.report_file is not None, value=view.report_file),
                gr.update(visible=view.report_pdf is not None, value=view.report_pdf),
            )

        def guarded(handler: Any) -> Any:
            def run(*args: Any) -> Iterator[tuple[Any, ...]]:
                try:
                    result = handler(*args)
                    for view in [result] if isinstance(result, View) else result:
                        yield show(view)
                except InterviewerError as exc:
                    raise gr.Error(str(exc)) from None

            run.__name__ = handler.__name__
            return run

        def refresh_history() -> tuple[Any, Any, Any, Any]:
            return handlers.history(), handlers.progress_over_time(), handlers.topics_over_time(), handlers.weakest_topics()

        start.click(guarded(handlers.start), [plan, question, topic, mode, lang], outputs, api_name="start").then(
            refresh_history, None, [history, chart, topic_chart, weakest], api_visibility="undocumented"
        )
        submit.click(guarded(handlers.answer), [session_id, answer, code], outputs, api_name="submit")
        retry.click(guarded(handlers.retry), [session_id, answer, code], outputs, api_name="retry")
        skip.click(guarded(handlers.skip), [session_id], outputs, api_name="skip")
        dont_know.click(guarded(handlers.dont_know), [session_id], outputs, api_name="dont_know")
        proceed.click(guarded(handlers.proceed), [session_id], outputs, api_name="next_round")
        resume.click(guarded(handlers.resume), [resume_id], outputs, api_name="resume")
        gr.Timer(15).tick(handlers.clock, [session_id], progress, api_visibility="undocumented", queue=False)
        check.click(handlers.check_model, [model_url, model_name, model_key], [check_result, progress, model_key], api_name="check_model")

        def on_load(saved: str) -> tuple[Any, ...]:
            if not saved:
                return (gr.skip(),) * len(outputs)
            try:
                return show(handlers.resume(saved))
            except InterviewerError:
                return (gr.skip(),) * len(outputs)

        demo.load(on_load, [session_id], outputs, api_visibility="undocumented").then(
            refresh_history, None, [history, chart, topic_chart, weakest], api_visibility="undocumented"
        )
    demo.queue(default_concurrency_limit=4, max_size=64)
    return demo


def create(settings: Settings | None = None) -> gr.Blocks:
    """The app on its defaults: settings, graders and store, then the page."""
    from interviewer.interview.store import DATABASE_FILE

    settings = settings or Settings()
    graders = Graders(settings)
    store = Store(settings.home / DATABASE_FILE).open()
    return build(Handlers(settings, graders, store), secret=browser_secret(settings.home))
