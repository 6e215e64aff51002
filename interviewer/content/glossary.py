"""The domain glossary: canonical terms and their aliases in both languages.

It is the domain dictionary for segmentation (so ``ZeRO-3`` and ``warp divergence`` stay whole)
and the bridge between languages: ``张量并行``, ``tensor parallelism`` and ``TP`` all map to the
same term, which is how an English query finds a Chinese passage.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from interviewer.content.rubric import Identifier, NonEmpty
from interviewer.errors import KnowledgeError


class Term(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Identifier
    aliases: list[NonEmpty] = Field(min_length=1, description="Every way of writing the term, both languages.")
    broader: list[Identifier] = Field(
        default=[], description="Terms this one is a kind of (tensor parallelism: parallelism); retrieval reads them, grading does not."
    )


class GlossaryFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    terms: list[Term]


class Glossary:
    """All glossary files merged: alias (case-folded) -> term id."""

    def __init__(self, terms: list[Term]):
        merged: dict[str, list[str]] = {}
        self.broader: dict[str, list[str]] = {}
        for term in terms:
            merged.setdefault(term.id, [])
            self.broader.setdefault(term.id, [])
            self.broader[term.id] += [b for b in term.broader if b not in self.broader[term.id]]
            for alias in term.aliases:
                if alias not in merged[term.id]:
                    merged[term.id].append(alias)
        self.terms = merged
        self.alias_to_id: dict[str, str] = {}
        for term_id, aliases in merged.items():
            for alias in [term_id, *aliases]:
                key = alias.casefold()
                other = self.alias_to_id.setdefault(key, term_id)
                if other != term_id:
                    raise KnowledgeError(f"glossary alias '{alias}' belongs to both '{other}' and '{term_id}'")
        for term_id, broader in self.broader.items():
            for parent in broader:
                if parent not in merged:
                    raise KnowledgeError(f"glossary term '{term_id}' is a kind of '{parent}', which no glossary file defines")

    def ancestors(self, term_id: str) -> list[str]:
        """The broader terms of a term, theirs in turn, nearest first (a cycle is walked once)."""
        seen: list[str] = []
        frontier = list(self.broader.get(term_id, []))
        while frontier:
            parent = frontier.pop(0)
            if parent != term_id and parent not in seen:
                seen.append(parent)
                frontier += self.broader.get(parent, [])
        return seen

    @classmethod
    def load(cls, directory: Path) -> Glossary:
        terms: list[Term] = []
        for path in sorted(directory.glob("*.yaml")):
            try:
                data = yaml.safe_load(path.read_text(encoding="utf-8"))
                terms.extend(GlossaryFile.model_validate(data).terms)
            except (OSError, yaml.YAMLError, ValidationError) as exc:
                raise KnowledgeError(f"glossary file {path} is invalid: {exc}") from exc
        return cls(terms)

    def fingerprint(self) -> str:
        """Changes whenever any alias changes, so an index built with another glossary is rebuilt."""
        digest = hashlib.sha256()
        for term_id in sorted(self.terms):
            digest.update(term_id.encode())
            for alias in sorted(self.terms[term_id]):
                digest.update(b"\0" + alias.encode())
            for parent in self.broader.get(term_id, []):
                digest.update(b"\1" + parent.encode())
        return digest.hexdigest()[:16]
