"""The feedback report of a session: scores, a chart of the topics, per question what was covered,
missed and wrong, the follow-ups, the passages to read, and a study plan ranked by weakness.

Markdown for the terminal and the app; self-contained HTML (inline CSS and SVG, no network) for
keeping and printing. Everything the candidate wrote is escaped in HTML.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Any

from interviewer.grading.grade import Grade
from interviewer.interview import verbatim
from interviewer.interview.state import SessionState, topic_means
from interviewer.interview.verbatim import mark_identifiers

TEXT = {
    "zh": {
        "title": "模拟面试反馈报告",
        "overall": "总分",
        "round": "轮次",
        "topics": "各主题得分",
        "question": "题目",
        "answer": "你的回答",
        "score": "得分",
        "evidence": "回答中的依据",
        "missed": "满分还需要",
        "wrong": "错误与更正",
        "followups": "追问",
        "read": "参考资料",
        "plan": "学习计划（按薄弱程度排序）",
        "not_answered": "未作答",
        "skip": "跳过",
        "dont-know": "答不上来（“我不会”）",
        "usage": "模型评分 {grades} 次：输入 {input:,} tokens，输出 {output:,} tokens（每次平均输入 {per:,}）",
        "cost": "，按每百万 tokens 输入 {pin}、输出 {pout} 计约 {cost:.2f}",
    },
    "en": {
        "title": "Mock interview feedback report",
        "overall": "Overall",
        "round": "Round",
        "topics": "Score by topic",
        "question": "Question",
        "answer": "Your answer",
        "score": "Score",
        "evidence": "Evidence from your answer",
        "missed": "For full marks",
        "wrong": "Wrong, and the correction",
        "followups": "Follow-ups",
        "read": "Read",
        "plan": "Study plan (weakest first)",
        "not_answered": "not answered",
        "skip": "skipped",
        "dont-know": "did not know (\u201cI don't know\u201d)",
        "usage": "Model grades: {grades}, {input:,} input tokens and {output:,} output tokens ({per:,} input a grade)",
        "cost": "; about {cost:.2f} at {pin} and {pout} per million input and output tokens",
    },
}


@dataclass
class Asked:
    """A follow-up as the report shows it."""

    text: str
    answer: str | None
    grade: Grade | None
    passed: str | None = None


@dataclass
class QuestionReport:
    id: str
    round: int
    text: str
    answer: str | None
    score: float | None
    grade: Grade | None
    passed: str | None = None  # "skip" or "dont-know" when the candidate passed on the question
    followups: list[Asked] = field(default_factory=list)


@dataclass
class Report:
    session_id: str
    lang: str
    overall: float | None
    rounds: list[tuple[str, float | None]]
    topics: list[tuple[str, float]]  # (topic, mean score), weakest first
    questions: list[QuestionReport]
    plan: list[tuple[str, float, list[str]]]  # (question id, score, passages to read)
    titles: dict[str, str] = field(default_factory=dict)  # passage → its title, for the study plan
    usage: ModelUsage | None = None  # what the model grades took; None when no answer was graded by a model
    prices: tuple[float, float] | None = None  # per million input and output tokens, for the cost


@dataclass(frozen=True)
class ModelUsage:
    grades: int
    input_tokens: int
    output_tokens: int

    def cost(self, prices: tuple[float, float]) -> float:
        return (self.input_tokens * prices[0] + self.output_tokens * prices[1]) / 1_000_000


def model_usage(grades: list[Grade | None]) -> ModelUsage | None:
    """The tokens of the grades a model computed (the offline ones cost nothing)."""
    used = [g.usage for g in grades if g is not None and g.usage]
    if not used:
        return None
    return ModelUsage(len(used), sum(u.get("input_tokens", 0) for u in used), sum(u.get("output_tokens", 0) for u in used))


def usage_line(report: Report) -> str | None:
    if report.usage is None:
        return None
    t, u = TEXT[report.lang], report.usage
    line = t["usage"].format(grades=u.grades, input=u.input_tokens, output=u.output_tokens, per=u.input_tokens // u.grades)
    if report.prices is not None:
        line += t["cost"].format(pin=report.prices[0], pout=report.prices[1], cost=u.cost(report.prices))
    return line


def build(state: SessionState, titles: dict[str, str] | None = None, prices: tuple[float, float] | None = None) -> Report:
    """The report of ``state``; ``titles`` (``file#anchor`` → "Document › Section") lets the study
    plan name what to read rather than cite it; ``prices`` (per million input and output tokens)
    give the model grades' cost beside their tokens."""
    bank = state.bank
    lang = state.lang
    scores = state.scores
    questions: list[QuestionReport] = []
    for round_score in scores.rounds:
        for q in round_score.questions:
            question = bank.get(q.id)
            mine = [e for e in state.exchanges if e.turn.question_id == q.id]
            main = [e for e in mine if not e.is_followup]
            last = main[-1] if main else None
            entry = QuestionReport(
                id=q.id,
                round=question.round,
                text=last.asked if last else question.question.get(lang),
                answer=last.turn.answer if last else None,
                score=q.score,
                grade=last.turn.grade if last else None,
                passed=last.turn.kind if last and last.turn.kind != "answer" else None,
            )
            for followup in state.followups_of(question):  # the bank's, then the model's own
                asked = [e for e in mine if e.turn.followup_id == followup.id]
                if asked:
                    e = asked[-1]
                    entry.followups.append(Asked(e.asked, e.turn.answer, e.turn.grade, e.turn.kind if e.turn.kind != "answer" else None))
            questions.append(entry)
    weak = sorted((r for r in questions if r.score is not None and r.score < 8), key=lambda r: (r.score or 0.0, r.id))
    plan = [(r.id, r.score or 0.0, bank.get(r.id).references[:3]) for r in weak]
    rounds = [(state.round_title(rs.round), rs.score) for rs in scores.rounds]
    usage = model_usage([e.turn.grade for e in state.exchanges])  # every graded turn, retried ones included
    return Report(state.id, lang, scores.overall, rounds, topic_means(scores, bank), questions, plan, dict(titles or {}), usage, prices)


def _passed(t: dict[str, str], passed: str | None) -> str:
    return t.get(passed or "", t["not_answered"])


def _reading(report: Report, ref: str) -> str:
    """A passage to read by its title, with its citation; the citation alone when no title is known."""
    title = report.titles.get(ref)
    return f"{title} ({ref})" if title else ref


def _score(value: float | None) -> str:
    return "—" if value is None else f"{value}/10"


def markdown(report: Report) -> str:
    t = TEXT[report.lang]
    out = [f"# {t['title']}", "", f"**{t['overall']}: {_score(report.overall)}** · `session {report.session_id}`", ""]
    for title, score in report.rounds:
        out.append(f"- {title}: {_score(score)}")
    if line := usage_line(report):
        out += ["", f"*{line}*"]
    out += ["", f"## {t['topics']}", ""]
    out += [f"- {topic}: {'█' * round(score)}{'░' * (10 - round(score))} {score}" for topic, score in report.topics]
    for q in report.questions:
        out += ["", f"## [{q.id}] {mark_identifiers(q.text)}", "", f"**{t['score']}: {_score(q.score)}**", ""]
        if q.answer is None:
            out.append(f"*{_passed(t, q.passed)}*")
            continue
        out += _quoted(q.answer)
        if q.grade is not None:
            out += ["", *criteria_markdown(q.grade, report.lang)]
        for f in q.followups:
            out += [
                "",
                f"**{t['followups']}**: {mark_identifiers(f.text)}",
                *(_quoted(f.answer) if f.answer else [f"> *{_passed(t, f.passed)}*"]),
            ]
            if f.grade is not None:
                out.append(f"{t['score']}: {f.grade.score}/10")
    if report.plan:
        out += ["", f"## {t['plan']}", ""]
        for question_id, score, refs in report.plan:
            out.append(f"1. [{question_id}] {score}/10 — {t['read']}: " + "; ".join(_reading(report, r) for r in refs))
    return "\n".join(out) + "\n"


def _quoted(answer: str) -> list[str]:
    """An answer as a Markdown quote, shown as written (see ``verbatim``)."""
    return [f"> {line}" if line else ">" for line in verbatim.markdown(answer).split("\n")]


def criteria_markdown(grade: Grade, lang: str, already_said: str = "") -> list[str]:
    """A grade's criteria as Markdown lines: score, quoted evidence, misconceptions with their
    corrections, what full marks need (unless ``already_said``, the card's verdict, says it); then
    the passages to read. Shared by the report and the app's feedback card."""
    t = TEXT[lang]
    lines = []
    for c in grade.criteria:
        lines.append(f"- **{c.description}** {c.score}/{c.max_score}")
        for quote in c.evidence[:2]:
            lines.append(f"  - {t['evidence']}: “{verbatim.quote_markdown(quote)}”")
        for m in c.misconceptions:
            lines.append(f"  - {t['wrong']}: {m.claim} → {m.correction}")
        if c.score < c.max_score and c.missing and c.missing[-1] not in already_said:
            lines.append(f"  - {t['missed']}: {c.missing[-1]}")
    if grade.passages:
        # by title (what a reader looks for), the passage's address after it for `interviewer search`
        lines.append(f"- {t['read']}: " + "; ".join(_cited(p.title, p.source) for p in grade.passages[:4]))
    return lines


def _cited(title: str, source: str) -> str:
    return f"{verbatim.escape_markdown(title)} (`{source}`)" if title and title != source else f"`{source}`"


def radar_svg(topics: list[tuple[str, float]], size: int = 360, margin: int = 190) -> str:
    """A radar chart of the topic scores (0-10), as inline SVG; topic names escaped. Labels on the
    left end at their point and those on the right start there, in a margin wide enough for the
    longest slug ("communication-optimisation 10.0" at 11 px), so none is cut or runs into another."""
    if len(topics) < 3:
        return ""
    centre, radius = size / 2, size / 2 - 40
    n = len(topics)

    def point(i: int, value: float) -> tuple[float, float]:
        angle = -math.pi / 2 + 2 * math.pi * i / n
        return margin + centre + radius * value / 10 * math.cos(angle), centre + radius * value / 10 * math.sin(angle)

    def anchor(x: float) -> str:
        return "middle" if abs(x - margin - centre) < 8 else ("start" if x > margin + centre else "end")

    rings = "".join(
        f'<polygon points="{" ".join(f"{x:.1f},{y:.1f}" for x, y in (point(i, level) for i in range(n)))}" fill="none" stroke="#ddd"/>'
        for level in (2.5, 5, 7.5, 10)
    )
    shape = " ".join(f"{x:.1f},{y:.1f}" for x, y in (point(i, score) for i, (_, score) in enumerate(topics)))
    labels = "".join(
        f'<text x="{x:.1f}" y="{y + 4:.1f}" font-size="11" text-anchor="{anchor(x)}">{html.escape(topic)} {score}</text>'
        for i, (topic, score) in enumerate(topics)
        for x, y in [point(i, 10.8)]
    )
    width = size + 2 * margin
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 -12 {width} {size + 24}" width="100%" '
        f'style="max-width:{width}px" role="img">{rings}'
        f'<polygon points="{shape}" fill="rgba(234,88,12,0.25)" stroke="#ea580c" stroke-width="2"/>{labels}</svg>'
    )


CSS = """body{font-family:system-ui,"WenQuanYi Micro Hei","Noto Sans CJK SC",sans-serif;max-width:900px;margin:2em auto;
line-height:1.5;color:#222}h1{border-bottom:2px solid #ea580c}blockquote{background:#fff7ed;border-left:4px solid #ea580c;
margin:0.5em 0;padding:0.5em 1em}.said{white-space:pre-wrap;margin:0.4em 0}
pre{font-family:"DejaVu Sans Mono","Liberation Mono",monospace;font-size:0.85em;background:#f4f4f5;padding:0.6em;
white-space:pre-wrap;overflow-wrap:anywhere}.score{font-weight:bold}li{margin:0.2em 0}
h2{break-after:avoid}li,blockquote,pre{break-inside:avoid}
code{background:#f4f4f5;padding:0 0.3em}@media print{body{margin:0}}"""


def to_html(report: Report) -> str:
    t = TEXT[report.lang]
    e = html.escape
    parts = [
        f'<!doctype html><html lang="{report.lang}"><head><meta charset="utf-8">',
        f"<title>{e(t['title'])}</title><style>{CSS}</style></head><body>",
        f"<h1>{e(t['title'])}</h1><p class='score'>{e(t['overall'])}: {e(_score(report.overall))} · session {e(report.session_id)}</p>",
        "<ul>" + "".join(f"<li>{e(title)}: {e(_score(score))}</li>" for title, score in report.rounds) + "</ul>",
        f"<p class='usage'>{e(line)}</p>" if (line := usage_line(report)) else "",
        f"<h2>{e(t['topics'])}</h2>{radar_svg(report.topics)}",
    ]
    for q in report.questions:
        parts.append(f"<section><h2>[{e(q.id)}] {e(q.text)}</h2><p class='score'>{e(t['score'])}: {e(_score(q.score))}</p>")
        if q.answer is None:
            parts.append(f"<p class='passed'><em>{e(_passed(t, q.passed))}</em></p></section>")
            continue
        parts.append(f"<blockquote>{verbatim.to_html(q.answer)}</blockquote>")
        if q.grade is not None:
            parts.append("<ul>" + "".join(_criterion_html(c, t) for c in q.grade.criteria) + "</ul>")
            if q.grade.passages:
                parts.append(f"<p>{e(t['read'])}: " + ", ".join(f"<code>{e(p.source)}</code>" for p in q.grade.passages[:4]) + "</p>")
        for f in q.followups:
            said = (
                f"<blockquote>{verbatim.to_html(f.answer)}</blockquote>"
                if f.answer
                else f"<p class='passed'><em>{e(_passed(t, f.passed))}</em></p>"
            )
            parts.append(f"<p><strong>{e(t['followups'])}</strong>: {e(f.text)}</p>{said}")
            if f.grade is not None:
                parts.append(f"<p>{e(t['score'])}: {f.grade.score}/10</p>")
        parts.append("</section>")
    if report.plan:
        items = "".join(
            f"<li>[{e(qid)}] {score}/10 — {e(t['read'])}: "
            + "; ".join(f"{e(report.titles[r])} <code>{e(r)}</code>" if r in report.titles else f"<code>{e(r)}</code>" for r in refs)
            + "</li>"
            for qid, score, refs in report.plan
        )
        parts.append(f"<h2>{e(t['plan'])}</h2><ol>{items}</ol>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _criterion_html(c: Any, t: dict[str, str]) -> str:
    e = html.escape
    inner = "".join(f"<li>{e(t['evidence'])}: “{e(verbatim.clip(q, 200))}”</li>" for q in c.evidence[:2])
    inner += "".join(f"<li>{e(t['wrong'])}: {e(m.claim)} → {e(m.correction)}</li>" for m in c.misconceptions)
    if c.score < c.max_score and c.missing:
        inner += f"<li>{e(t['missed'])}: {e(c.missing[-1])}</li>"
    return f"<li><strong>{e(c.description)}</strong> {c.score}/{c.max_score}<ul>{inner}</ul></li>"


def to_pdf(report: Report) -> bytes:
    """The HTML report printed to PDF (WeasyPrint; Chinese needs a CJK font such as
    fonts-wqy-microhei or Noto Sans CJK installed)."""
    try:
        from weasyprint import HTML
    except (ImportError, OSError) as exc:  # OSError: the Pango libraries are missing
        from interviewer.errors import InterviewerError

        raise InterviewerError(f"PDF needs WeasyPrint and the Pango libraries ({exc}); use --format html and print it") from exc
    pdf: bytes = HTML(string=to_html(report)).write_pdf()
    return pdf
