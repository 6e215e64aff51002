"""The interview in a terminal, with rich. Reads answers line by line until a line with a single
``.`` (or end of input); ``:skip``, ``:idk``, ``:retry`` (practice) and ``:quit`` are commands."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from interviewer.application.followup import word_followup
from interviewer.grading.grade import Grade
from interviewer.grading.offline import limitation_note
from interviewer.interview.engine import Engine, Outcome
from interviewer.interview.interviewer import LLMInterviewer, ScriptedInterviewer
from interviewer.interview.state import Prompt, RoundScore, SessionState, format_clock

HELP = {
    "zh": "多行作答，单独一行 . 结束。命令：:skip 跳过，:idk 不会，:retry 重答（练习模式），:quit 保存并退出。",
    "en": "Answer over several lines; a line with a single . ends it. Commands: :skip, :idk, :retry (practice), :quit (saves).",
}


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
        table.add_column(column)
    for c in grade.criteria:
        table.add_row(escape(c.description), f"{c.score}/{c.max_score}", escape("\n".join(e[:80] for e in c.evidence[:2])))
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
    ask: Callable[[str], str] = input,
    interviewer: LLMInterviewer | ScriptedInterviewer | None = None,
) -> None:
    lang = state.lang
    console.print(f"[bold]session {state.id}[/bold] — {HELP[lang]}")
    while True:
        prompt = state.prompt
        if prompt.kind == "end":
            console.print(Panel(escape(prompt.text), style="bold green"))
            return
        if prompt.kind == "round-summary":
            show_summary(console, prompt.summary, prompt.text)
            state = engine.proceed(state.id)
            continue
        if prompt.kind == "grading":  # another process is grading this session's last answer
            state = engine.open(state.id)
            continue
        show_prompt(console, prompt, lang)
        answer = read_answer(ask)
        if answer is None or answer == ":quit":
            console.print(f"Saved. Resume with: interviewer interview --resume {state.id}")
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
        outcome = engine.retry(state.id, answer) if retry else engine.submit(state.id, answer)
        for notice in outcome.notices:
            console.print(f"[yellow]{notice}[/yellow]")
        if outcome.show_feedback:
            show_grade(console, outcome.grade)
        state = outcome.state
        if interviewer is not None and outcome.next.kind == "followup":
            stream_followup(engine, interviewer, console, answer, outcome)
            state = engine.state(state.id)


def stream_followup(
    engine: Engine, interviewer: LLMInterviewer | ScriptedInterviewer, console: Console, answer: str, outcome: Outcome
) -> None:
    """Print the follow-up as the interviewer words it; the next prompt panel then shows it whole."""
    shown = ""
    for wording in word_followup(engine, interviewer, outcome, answer):
        if wording.notice:
            console.print(f"\n[yellow]{escape(wording.notice)}[/yellow]")
            shown = ""
        elif wording.text.startswith(shown):
            console.print(escape(wording.text[len(shown) :]), end="", style="dim")
            shown = wording.text
    console.print()
