"""The rubric compiled for matching: each criterion's concepts, misconceptions and top anchor,
segmented once so that every answer is matched against ready token sequences."""

from __future__ import annotations

import re
from dataclasses import dataclass

from interviewer.content.rubric import Criterion
from interviewer.grading.reading import Phrase, Unit, make_claim, make_phrase
from interviewer.retrieval.segment import Segmenter

_DIGIT = re.compile(r"\d")


@dataclass(frozen=True)
class CompiledConcept:
    id: str
    label: str
    terms: tuple[Phrase, ...]
    paraphrases: tuple[Phrase, ...]


@dataclass(frozen=True)
class CompiledMisconception:
    source: object  # the rubric's Misconception
    patterns: tuple[Phrase, ...]
    claims: tuple[Phrase, ...]
    correction_words: frozenset[str] = frozenset()  # every token of the correction, both languages

    def loose_match_holds(self, pattern: Phrase, unit: Unit) -> bool:
        """A long pattern may match with a quarter of its words missing, but not its numbers ("0%
        GPU-Util" is not "100%"), and not all of the words that make it wrong: those it does not
        share with the correction ("训练显存就是参数量乘 2 字节" vs the right "推理显存…")."""
        if not all(t in unit.token_set for t in pattern.tokens if _DIGIT.search(t)):
            return False
        wrong = [t for t in pattern.tokens if t not in self.correction_words]
        return not wrong or any(t in unit.token_set for t in wrong)


@dataclass(frozen=True)
class CompiledCriterion:
    criterion: Criterion
    concepts: tuple[CompiledConcept, ...]
    misconceptions: tuple[CompiledMisconception, ...]
    anchors: tuple[Phrase, ...]  # the top level's anchor, both languages


def compile_criteria(segmenter: Segmenter, criteria: tuple[Criterion, ...]) -> tuple[CompiledCriterion, ...]:
    phrase = lambda text: make_phrase(segmenter, text)  # noqa: E731
    compiled = []
    for criterion in criteria:
        concepts = tuple(
            CompiledConcept(
                id=c.id,
                label=c.terms[0],
                terms=tuple(p for p in map(phrase, c.terms) if p.tokens),
                paraphrases=tuple(p for p in map(phrase, c.paraphrases) if p.tokens),
            )
            for c in criterion.concepts
        )
        misconceptions = tuple(
            CompiledMisconception(
                source=m,
                patterns=tuple(p for p in (make_claim(segmenter, t) for t in m.patterns) if p.tokens),
                claims=tuple(p for p in (make_claim(segmenter, m.claim.zh), make_claim(segmenter, m.claim.en)) if p.tokens),
                correction_words=frozenset(t for text in (m.correction.zh, m.correction.en) for t in make_claim(segmenter, text).tokens),
            )
            for m in criterion.misconceptions
        )
        top = criterion.levels[-1]
        anchors = tuple(p for p in (phrase(top.zh), phrase(top.en)) if p.tokens)
        compiled.append(CompiledCriterion(criterion, concepts, misconceptions, anchors))
    return tuple(compiled)
