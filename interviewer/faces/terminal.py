"""The interview in a terminal, with rich. Reads answers line by line until a line with a single
``.`` (or end of input); ``:skip``, ``:idk``, ``:retry`` (practice) and ``:quit`` are commands."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from interviewer.grading.grade import Grade
from interviewer.grading.offline import limitation_note
from interviewer.interview.session import Prompt, RoundScore, Session, format_clock

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


def run(session: Session, console: Console, ask: Callable[[str], str] = input, interviewer: Any = None) -> None:
    lang = session.lang
    console.print(f"[bold]session {session.id}[/bold] — {HELP[lang]}")
    while True:
        prompt = session.prompt()
        if prompt.kind == "end":
            console.print(Panel(escape(prompt.text), style="bold green"))
            return
        if prompt.kind == "round-summary":
            show_summary(console, prompt.summary, prompt.text)
            session.continue_after_summary()
            continue
        show_prompt(console, prompt, lang)
        answer = read_answer(ask)
        if answer is None or answer == ":quit":
            console.print(f"Saved. Resume with: interviewer interview --resume {session.id}")
            return
        if answer == ":skip":
            session.skip()
            continue
        if answer == ":idk":
            session.dont_know()
            continue
        retry = answer == ":retry"
        if retry:
            if session.mode != "practice":
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
        outcome = session.submit(answer, retry=retry)
        for notice in outcome.notices:
            console.print(f"[yellow]{notice}[/yellow]")
        if outcome.show_feedback:
            show_grade(console, outcome.grade)
        if interviewer is not None and outcome.next.kind == "followup" and outcome.next.question_id:
            stream_followup(session, interviewer, console, answer, outcome)


def stream_followup(session: Session, interviewer: Any, console: Console, answer: str, outcome: Any) -> None:
    """Let the model word the follow-up the session chose, printing it as it arrives."""
    question = session.bank.get(outcome.next.question_id)
    followup = next(f for f in question.followups if f.id == outcome.next.followup_id)
    shown = ""
    for text in interviewer.stream(question, followup, answer, outcome.grade, session.lang):
        if text.startswith(shown):
            console.print(escape(text[len(shown) :]), end="")
        else:  # the fallback replaced what was streamed
            console.print("\n" + escape(text), end="")
        shown = text
    console.print()
    session.word_followup(shown)
