"""Knowledge documents: Markdown files split into passages at their ``##`` headings.

A passage is cited as ``file#anchor``. Shipped documents give every ``##`` heading an explicit
anchor (``## 标题 Title {#stable-anchor}``) so that rewording a heading never breaks a citation;
documents a user adds may omit it, and then the anchor is derived from the heading text.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from interviewer.errors import KnowledgeError

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
_ANCHOR = re.compile(r"\s*\{#([a-z0-9][a-z0-9-]*)\}\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Passage:
    """One citable section of a knowledge document."""

    source: str  # "file.md#anchor", relative to its knowledge folder (prefixed for added folders)
    document: str  # the document's path as cited, e.g. "zero.md"
    title: str  # "Document title › Section heading"
    heading: str
    text: str  # the section body, heading included

    @property
    def anchor(self) -> str:
        return self.source.split("#", 1)[1]


def slugify(heading: str) -> str:
    """A stable anchor from heading text: lower-case ASCII words and CJK characters joined by '-'."""
    words = re.findall(r"[a-z0-9]+|[\u4e00-\u9fff]+", heading.lower())
    return "-".join(words) or "section"


def parse_document(text: str, document: str, require_anchors: bool = False) -> list[Passage]:
    """Split one Markdown document into passages, one per ``##`` section.

    Text before the first ``##`` heading (the title and an introduction) becomes a passage of its
    own only when it has body text. Headings inside fenced code blocks are ignored.
    """
    title = Path(document).stem
    sections: list[tuple[str, str, list[str]]] = []  # (heading, anchor, lines)
    intro: list[str] = []
    in_fence = False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        match = None if in_fence else _HEADING.match(line)
        if match and len(match.group(1)) == 1 and not sections:
            title = _ANCHOR.sub("", match.group(2)).strip()
            continue
        if match and len(match.group(1)) == 2:
            raw = match.group(2)
            explicit = _ANCHOR.search(raw)
            heading = _ANCHOR.sub("", raw).strip()
            if explicit is None and require_anchors:
                raise KnowledgeError(f"{document}: heading '{heading}' has no {{#anchor}}")
            anchor = explicit.group(1) if explicit else slugify(heading)
            sections.append((heading, anchor, [f"## {heading}"]))
            continue
        (sections[-1][2] if sections else intro).append(line)

    passages: list[Passage] = []
    seen: set[str] = set()
    intro_body = "\n".join(intro).strip()
    if intro_body:
        sections.insert(0, ("", "intro", [intro_body]))
    for heading, anchor, lines in sections:
        if anchor in seen:
            raise KnowledgeError(f"{document}: anchor '#{anchor}' is used twice")
        seen.add(anchor)
        body = "\n".join(lines).strip()
        passages.append(
            Passage(
                source=f"{document}#{anchor}",
                document=document,
                title=f"{title} › {heading}" if heading else title,
                heading=heading or title,
                text=body,
            )
        )
    return passages


@dataclass(frozen=True)
class KnowledgeFile:
    """A knowledge document on disk, with the fingerprint used for incremental indexing."""

    path: Path
    document: str  # the name it is cited by
    sha256: str


def discover(roots: list[Path], shipped: Path | None = None) -> list[KnowledgeFile]:
    """Every ``*.md`` file under the knowledge folders, sorted. Added folders prefix their name."""
    files: list[KnowledgeFile] = []
    for root in roots:
        if not root.is_dir():
            raise KnowledgeError(f"knowledge folder not found: {root}")
        prefix = "" if shipped is not None and root.resolve() == shipped.resolve() else f"{root.name}/"
        for path in sorted(root.rglob("*.md")):
            if any(part.startswith(".") for part in path.relative_to(root).parts):
                continue
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            files.append(KnowledgeFile(path, prefix + path.relative_to(root).as_posix(), digest))
    return files


def load_passages(file: KnowledgeFile, require_anchors: bool) -> list[Passage]:
    try:
        text = file.path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise KnowledgeError(f"cannot read {file.path}: {exc}") from exc
    return parse_document(text, file.document, require_anchors=require_anchors)
