"""The off-topic model: what each bank question is about, as its vocabulary, and whether an
answer's words belong to its own question clearly less than to another question of the bank."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator

from interviewer.content.bank import Bank
from interviewer.content.rubric import Question
from interviewer.retrieval.segment import Segmenter

# Off-topic: another question of the bank explains the answer's (rarity-weighted) words clearly
# better than this one (the largest margin among the development set's on-topic answers is 0.29),
# or almost none of them belong to this question.
OFF_TOPIC_MARGIN = 0.3
UNRELATED_RELEVANCE = 0.12


class TopicModel:
    """The bank's questions' vocabularies, built on first use, and the rarity of each word."""

    def __init__(self, segmenter: Segmenter, bank: Bank | None):
        self.segmenter = segmenter
        self.bank = bank
        self._vocabularies: dict[str, frozenset[str]] | None = None
        self._rarity: dict[str, float] = {}

    def vocabularies(self) -> dict[str, frozenset[str]]:
        """Every bank question's words (question, reference answer, rubric, follow-ups)."""
        if self._vocabularies is None:
            self._vocabularies = {}
            if self.bank is not None:
                for question in self.bank.questions:
                    self._vocabularies[question.id] = frozenset(t for text in _texts(question) for t in self.segmenter.tokens(text))
            frequency = Counter(t for words in self._vocabularies.values() for t in words)
            n = len(self._vocabularies)
            self._rarity = {t: math.log((n + 1) / (f + 0.5)) for t, f in frequency.items()}
        return self._vocabularies

    def relevance(self, tokens: set[str], question_id: str) -> float:
        """Share of the answer's words (weighted by how few questions use them) that belong to
        the question's own vocabulary."""
        words = self.vocabularies().get(question_id)
        if not words or not tokens:
            return 1.0
        default = math.log(len(self._vocabularies or {}) + 2)
        total = sum(self._rarity.get(t, default) for t in tokens)
        return sum(self._rarity.get(t, default) for t in tokens if t in words) / total if total else 1.0

    def off_topic(self, tokens: set[str], question_id: str, followup: bool = False) -> bool:
        """Off the question's topic: too few of its words, or (for a main answer) clearly more of
        another question's. A follow-up digs into one corner, often one a neighbouring question
        owns (a TP follow-up of q01 speaks q03's words), so only the first test applies to it."""
        if self.bank is None or question_id not in self.vocabularies():
            return False
        own = self.relevance(tokens, question_id)
        if own < UNRELATED_RELEVANCE:
            return True
        if followup:
            return False
        best_other = max((self.relevance(tokens, q) for q in self.vocabularies() if q != question_id), default=0.0)
        return best_other - own >= OFF_TOPIC_MARGIN


def _texts(question: Question) -> Iterator[str]:
    yield from (question.question.zh, question.question.en, question.reference_answer.zh, question.reference_answer.en)
    for criterion in [*question.criteria, *(c for f in question.followups for c in f.criteria)]:
        yield from (criterion.description.zh, criterion.description.en)
        for level in criterion.levels:
            yield from (level.zh, level.en)
        for concept in criterion.concepts:
            yield from concept.terms
            yield from concept.paraphrases
    for followup in question.followups:
        yield from (followup.question.zh, followup.question.en)
