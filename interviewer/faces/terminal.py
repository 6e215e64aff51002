"""The interview in a terminal, with rich. Reads answers line by line until a line with a single
``.`` (or end of input); ``:skip``, ``:idk``, ``:retry`` (practice) and ``:quit`` are commands."""

from __future__ import annotations

import functools
import io
import re
import sys
from collections.abc import Callable

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from interviewer.application.grading import GradingWorker
from interviewer.application.turns import play
from interviewer.grading.grade import Grade
from interviewer.grading.offline import limitation_note
from interviewer.interview import verbatim
from interviewer.interview.engine import Committed, Engine
from interviewer.interview.interviewer import LLMInterviewer, ScriptedInterviewer
from interviewer.interview.state import Prompt, RoundScore, SessionState, format_clock

HELP = {
    "zh": "多行作答，单独一行 . 结束。命令：:skip 跳过，:idk 不会，:retry 重答（练习模式），:quit 保存并退出。",
    "en": "Answer over several lines; a line with a single . ends it. Commands: :skip, :idk, :retry (practice), :quit (saves).",
}
SAVED = {"zh": "已保存。继续作答：interviewer interview --resume {id}", "en": "Saved. Resume with: interviewer interview --resume {id}"}
REPORT = {"zh": "反馈报告：interviewer report {id}", "en": "Feedback report: interviewer report {id}"}
_SURROGATE = re.compile(r"[\ud800-\udfff]")


class Keyboard:
    """The candidate's lines, one per call, from the terminal or a pipe, whole and storable.

    At a terminal, readline edits the line: the kernel's own line editing (canonical mode) keeps
    4,095 bytes of a line and drops the rest, so a pasted answer of 1,611 Chinese characters
    arrived as 1,365. A paste in one piece (bracketed paste) comes back as several lines at once;
    they are handed out one by one. Bytes that are not valid in the terminal's encoding become
    U+FFFD: decoded as surrogates (a UTF-8 or C locale), they would be refused by the database."""

    def __init__(self) -> None:
        self._queued: list[str] = []

    def __call__(self, prompt: str) -> str:
        if not self._queued:
            stdin = sys.stdin
            if isinstance(stdin, io.TextIOWrapper) and stdin.errors != "replace":
                stdin.reconfigure(errors="replace")  # strict decoding would end the interview on one bad byte
            if stdin.isatty():
                _line_editing()
            self._queued = _SURROGATE.sub("\ufffd", input(prompt)).removesuffix("\n").split("\n")
        return self._queued.pop(0)


@functools.cache
def _line_editing() -> None:
    """readline, once: it takes the terminal out of canonical mode for as long as a line is read,
    and Tab inserts a tab (code is pasted and typed here) rather than completing a file name."""
    try:
        import readline
    except ImportError:  # a Python built without it
        return
    readline.parse_and_bind("bind ^I ed-insert" if "libedit" in (readline.__doc__ or "") else "tab: tab-insert")


def show_prompt(console: Console, prompt: Prompt, lang: str) -> None:
    left = format_clock(prompt.time_left_s)
    head = f"{prompt.round_title}  ·  {prompt.number}/{prompt.total}" + (f"  ·  ⏱ {left}" if left else "")
    label = {"question": "面试官" if lang == "zh" else "Interviewer", "followup": "追问" if lang == "zh" else "Follow-up"}[prompt.kind]
    console.print(Panel(escape(prompt.text), title=escape(f"{label} [{prompt.question_id}]"), subtitle=escape(head)))
    if prompt.answer_format == "code":
        console.print("[dim]" + ("可以直接粘贴 CUDA/C++ 代码。" if lang == "zh" else "You may paste CUDA/C++ code.") + "[/dim]")


def show_grade(console: Console, grade: Grade) -> None:
    table = Table(title=f"{grade.score}/10", show_lines=False)
    for column in ("criterion", "score", "evidence"):
        table.add_column(column, overflow="fold", no_wrap=column == "score")
    for c in grade.criteria:
        quotes = "\n".join(verbatim.clip(e, 160) for e in c.evidence[:2])
        table.add_row(escape(c.description), f"{c.score}/{c.max_score}", escape(quotes))
    if grade.criteria:
        console.print(table)
    console.print(escape(grade.feedback))
    if note := limitation_note(grade):
        console.print(f"[dim]{escape(note)}[/dim]")
    for passage in grade.passages[:3]:
        console.print(f"[dim]📖 {escape(passage.source)}  {escape(passage.title)}[/dim]")


def show_summary(console: Console, summary: RoundScore | None, text: str) -> None:
    console.print(Panel(escape(text), style="bold"))
    if summary is None:
        return
    table = Table()
    for column in ("question", "score", "follow-ups"):
        table.add_column(column)
    for q in summary.questions:
        table.add_row(q.id, "—" if q.score is None else str(q.score), ", ".join(f"{k} {v}" for k, v in q.followups.items()))
    console.print(table)


def read_answer(ask: Callable[[str], str]) -> str | None:
    lines: list[str] = []
    while True:
        try:
            line = ask("> ")
        except EOFError:
            return "\n".join(lines) if lines else None
        if line.strip() == "." and lines:
            return "\n".join(lines)
        if line.strip() == ".":
            continue
        if not lines and line.strip().startswith(":"):
            return line.strip()
        lines.append(line)


def run(
    engine: Engine,
    state: SessionState,
    console: Console,
    ask: Callable[[str], str] | None = None,
    interviewer: LLMInterviewer | ScriptedInterviewer | None = None,
    worker: GradingWorker | None = None,
    grade_wait_s: float = 0.0,
) -> None:
    """The interview, prompt by prompt. With a ``worker`` the grades are computed in the background
    while the interview goes on (a model grader); without one each is computed after the
    interviewer has spoken. Ctrl-C leaves as ``:quit`` does, saying how to resume, and is raised
    again for the caller to exit on."""
    try:
        _interview(engine, state, console, ask or Keyboard(), interviewer or ScriptedInterviewer(), worker, grade_wait_s)
    except KeyboardInterrupt:
        console.print()
        leave(engine, state.id, state.lang, console, worker, grade_wait_s)
        raise


def _interview(
    engine: Engine,
    state: SessionState,
    console: Console,
    ask: Callable[[str], str],
    speaker: LLMInterviewer | ScriptedInterviewer,
    worker: GradingWorker | None,
    grade_wait_s: float,
) -> None:
    lang = state.lang
    console.print(f"[bold]session {state.id}[/bold] — {HELP[lang]}")
    while True:
        prompt = state.prompt
        if prompt.kind == "end":
            console.print(Panel(escape(prompt.text), style="bold green"))
            console.print(REPORT[lang].format(id=state.id))
            return
        if prompt.kind == "round-summary":
            show_summary(console, prompt.summary, prompt.text)
            state = engine.proceed(state.id)
            if state.prompt.kind != "end":  # the last round's summary is followed by the end, which says it
                console.print(REPORT[lang].format(id=state.id))
            continue
        if prompt.kind == "deciding":  # another process is deciding this session's last answer
            state = engine.open(state.id, grade=worker is None)
            continue
        show_prompt(console, prompt, lang)
        answer = read_answer(ask)
        if answer is None or answer == ":quit":
            leave(engine, state.id, lang, console, worker, grade_wait_s)
            return
        if answer == ":skip":
            state = engine.skip(state.id).state
            continue
        if answer == ":idk":
            state = engine.dont_know(state.id).state
            continue
        retry = answer == ":retry"
        if retry:
            if state.mode != "practice":
                console.print("[yellow]" + ("面试模式不能重答。" if lang == "zh" else "No retries in interview mode.") + "[/yellow]")
                continue
            console.print("重答上一题：" if lang == "zh" else "Answer the last question again:")
            answer = read_answer(ask)
            if not answer or answer.startswith(":"):
                continue
        if not answer.strip():
            console.print(
                "[yellow]" + ("回答是空的；用 :skip 跳过。" if lang == "zh" else "Empty answer; use :skip to skip.") + "[/yellow]"
            )
            continue
        committed = engine.commit_retry(state.id, answer) if retry else engine.commit(state.id, "answer", answer)
        state = play_turn(engine, speaker, committed, console, worker, grade_wait_s)


def play_turn(
    engine: Engine,
    interviewer: LLMInterviewer | ScriptedInterviewer,
    committed: Committed,
    console: Console,
    worker: GradingWorker | None,
    grade_wait_s: float = 0.0,
) -> SessionState:
    """Print the interviewer's words as they come; in practice mode the grade when it is in. The
    next prompt's panel then shows the question whole."""
    shown, printed = "", set()
    state = committed.before
    for step in play(engine, interviewer, committed, worker, grade_wait_s=grade_wait_s):
        state = step.state
        if step.speaking and step.speaking.startswith(shown):
            console.print(escape(step.speaking[len(shown) :]), end="", style="dim")
            shown = step.speaking
        fresh = [n for n in step.notices if n not in printed]
        if fresh or step.grade is not None:
            if shown:
                console.print()
                shown = ""
            for notice in fresh:
                console.print(f"[yellow]{escape(notice)}[/yellow]")
                printed.add(notice)
            if step.grade is not None and state.mode == "practice":
                show_grade(console, step.grade)
    if shown:
        console.print()
    return state


def leave(engine: Engine, session_id: str, lang: str, console: Console, worker: GradingWorker | None, wait_s: float) -> None:
    """The pending grades finished, then how to come back; said even when a second Ctrl-C cuts the
    wait short (every answer is already saved)."""
    try:
        finish_grading(engine, session_id, console, worker, wait_s)
    finally:
        console.print(SAVED[lang].format(id=session_id))


def finish_grading(engine: Engine, session_id: str, console: Console, worker: GradingWorker | None, wait_s: float) -> None:
    """Before leaving: the answers still being graded are graded (so the report is whole)."""
    pending = engine.state(session_id).grading
    if worker is None or not pending:
        return
    console.print(f"[dim]grading {len(pending)} answer(s)…[/dim]")
    for turn in pending:
        worker.wait(turn.id, wait_s)
