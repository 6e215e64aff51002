"""What the candidate wrote, shown as it was written.

An answer is prose and code. Prose keeps its line breaks and indentation and is never read as
Markdown or HTML: ``__global__`` stays ``__global__``, ``<img src=x>`` stays those characters.
Code is shown monospace: a fenced block (```` ``` ```` or ``~~~``), the kernel from the app's code
editor (which the app fences), or a paragraph whose lines read as C++/CUDA/Python (most of them end
in ``;``, ``{`` or ``}``, or open with ``#include``, ``//``, ``for (`` …). Renderers for the three
places answers appear: Markdown blocks (the app's chat and in-app report), one-line Markdown quotes
(evidence in a feedback card) and HTML (the report files and their PDF)."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Literal

_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)")
_CODE_LINE = re.compile(
    r"""^\s*(?:\#\s*(?:include|define|pragma|if|endif)\b|//|/\*|\*/|template\s*<|__global__|__device__
    |(?:for|if|while|switch)\s*\(|(?:def|class|return|import)\s)|[;{}]\s*(?://.*)?$""",
    re.X,
)
# every ASCII punctuation character may be backslash-escaped in CommonMark; these are the ones
# that can start Markdown or HTML, or (``$``) a formula in Gradio's renderer
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~<>&$])")


@dataclass(frozen=True)
class Block:
    kind: Literal["prose", "code"]
    text: str
    lang: str = ""


def fence(code: str, lang: str = "") -> str:
    """Code as a fenced block that nothing inside it can close."""
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    marks = "`" * max(3, longest + 1)
    return f"{marks}{lang}\n{code.rstrip(chr(10))}\n{marks}"


def blocks(text: str) -> list[Block]:
    """The answer cut into prose and code, in order; nothing is dropped but the fences' own lines
    and blank lines between blocks."""
    out: list[Block] = []
    prose: list[str] = []

    def flush_prose() -> None:
        for paragraph in re.split(r"\n[ \t]*\n", "\n".join(prose)):
            if not paragraph.strip():
                continue
            if _reads_as_code(paragraph):
                out.append(Block("code", paragraph.strip("\n")))
            else:
                out.append(Block("prose", paragraph.strip("\n")))
        prose.clear()

    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    i = 0
    while i < len(lines):
        opened = _FENCE_OPEN.match(lines[i])
        if opened is None:
            prose.append(lines[i])
            i += 1
            continue
        flush_prose()
        marker, lang = opened.group(1), opened.group(2)
        body: list[str] = []
        i += 1
        while i < len(lines) and not _closes(lines[i], marker):
            body.append(lines[i])
            i += 1
        i += 1  # the closing fence (an unclosed fence runs to the end, as in CommonMark)
        out.append(Block("code", "\n".join(body), lang))
    flush_prose()
    return out


def _closes(line: str, marker: str) -> bool:
    stripped = line.strip()
    return len(stripped) >= len(marker) and set(stripped) == {marker[0]}


def _reads_as_code(paragraph: str) -> bool:
    lines = [line for line in paragraph.split("\n") if line.strip()]
    return len(lines) >= 2 and sum(bool(_CODE_LINE.search(line)) for line in lines) >= 0.6 * len(lines)


def escape_markdown(text: str) -> str:
    """Text that Markdown shows character for character (no emphasis, links, HTML or formulas)."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


def _prose_markdown(text: str) -> str:
    lines = []
    for line in text.split("\n"):
        body = line.lstrip(" \t")
        indent = line[: len(line) - len(body)].replace("\t", "    ")
        lines.append("&nbsp;" * len(indent) + escape_markdown(body.rstrip()))
    return "  \n".join(lines)  # two spaces: a hard line break, so each line stays a line


def markdown(text: str) -> str:
    """The answer as Markdown blocks, separated by blank lines."""
    return "\n\n".join(fence(b.text, b.lang) if b.kind == "code" else _prose_markdown(b.text) for b in blocks(text))


def quote_markdown(text: str, limit: int = 200) -> str:
    """A quote on one line: whitespace collapsed, cut at a word (or, in Chinese, any character)
    boundary with an ellipsis, escaped."""
    return escape_markdown(clip(text, limit))


def clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[:limit]
    space = cut.rfind(" ")
    inside_word = all(c.isascii() and c.isalnum() for c in flat[limit - 1 : limit + 1])
    if inside_word and space > limit * 0.6:
        cut = cut[:space]  # the cut would split a Latin word: end at the last space before it
    return cut.rstrip() + "…"


def to_html(text: str) -> str:
    """The answer as HTML: prose paragraphs that keep their lines (``.said``), code in ``<pre>``."""
    parts = []
    for b in blocks(text):
        if b.kind == "code":
            lang = f' class="language-{html.escape(b.lang)}"' if b.lang else ""
            parts.append(f"<pre><code{lang}>{html.escape(b.text)}</code></pre>")
        else:
            parts.append(f'<p class="said">{html.escape(b.text)}</p>')
    return "".join(parts)


_CODE_SPAN_OR_DUNDER = re.compile(r"(`+)(?:.+?)\1|(?<![\w`])(__\w+?__)(?![\w`])", re.S)


def mark_identifiers(text: str) -> str:
    """The interviewer's own Markdown (bank questions, the model's words) with CUDA's double-
    underscore identifiers (``__shared__``, ``__syncthreads``…) made code, so they are not bold."""
    return _CODE_SPAN_OR_DUNDER.sub(lambda m: f"`{m.group(2)}`" if m.group(2) else m.group(0), text)
