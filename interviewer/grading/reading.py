"""Reading an answer: sentences and clauses with exact spans, phrase matching, and the signals
the offline grader needs (steering attempts, "I don't know", keyword lists, padding, language).

Everything here is deterministic and works on the original text, so every quoted span is an
exact substring of what the candidate wrote.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property

from interviewer.grading.vocabulary import (
    CONTRAST,
    NEGATION,
    NO_KNOWLEDGE,
    NOT_NEGATIONS,
    QUANTITY,
    RELATION,
    ROLE_BLOCK,
    STEERING,
    SUPPOSITION,
)
from interviewer.retrieval.segment import CLAIM_WORDS, STOPWORDS, TERM_PREFIX, Segmenter, normalise

GRADING_LIMIT = 20_000  # characters read; a longer paste is graded on its beginning and flagged

# A sentence ends at Chinese or English end punctuation, a semicolon or a line break; an English
# full stop only when followed by a space or the end (so 1.5, e.g. and file.md stay whole).
_SENTENCE = re.compile(r"(?:[^。！？!?；;\n.]|\.(?!\s|$)|(?<=e\.g)\.|(?<=i\.e)\.)+(?:[。！？!?；;]|(?<!e\.g)(?<!i\.e)\.(?=\s|$))?")
_CLAUSE = re.compile(r"(?:[^，,、：:。！？!?；;\n]|(?<=\d)[:,](?=\d))+")  # "3:1" and "2,000" stay whole
_LIST_SPLIT = re.compile(r"[，,、/／;；]|→|->|\+")
# Words set apart by spaces are a list too: Chinese words with spaces between them ("优化器状态 梯度
# 参数"; prose puts spaces only around English words), or six or more English words without a single
# function word ("ZeRO-1 ZeRO-2 optimizer states gradients parameters").
_HAN_GAP = re.compile(r"[\u4e00-\u9fff]\s+[\u4e00-\u9fff]")
_ENGLISH_WORD = re.compile(r"[A-Za-z][\w.+-]*")
_HAN = re.compile(r"[\u4e00-\u9fff]")
_LATIN = re.compile(r"[A-Za-z]")


def count_negations(text: str) -> int:
    return len(NEGATION.findall(NOT_NEGATIONS.sub("", text)))


@dataclass(frozen=True)
class Unit:
    """A sentence or clause of the answer."""

    start: int
    end: int
    text: str  # exact substring of the answer
    tokens: tuple[str, ...]
    norm: str  # NFKC + case-folded text, for substring tests on Chinese words
    parts: tuple[tuple[str, ...], ...] = ()  # tokens of each comma/slash/arrow-separated part

    @cached_property
    def token_set(self) -> frozenset[str]:
        return frozenset(self.tokens)

    @cached_property
    def explanatory(self) -> bool:
        """Says something about the terms, rather than only naming them."""
        words = [t for t in self.tokens if not t.startswith(TERM_PREFIX)]
        has_relation = bool(RELATION.search(self.text)) or bool(QUANTITY.search(self.text))
        if not (len(self.tokens) >= 5 and len(words) >= 2 and has_relation):
            return False
        return not self.is_list

    @cached_property
    def is_list(self) -> bool:
        """A run of bare terms separated by commas, slashes or arrows, however long."""
        if len(self.parts) < 4:
            return False
        bare = sum(len(tokens) <= 2 or all(t.startswith(TERM_PREFIX) for t in tokens) for tokens in self.parts)
        return bare / len(self.parts) >= 0.7

    @cached_property
    def negated(self) -> int:
        return count_negations(self.text)

    @cached_property
    def supposed(self) -> bool:
        """The unit opens with "if" or "suppose": what it says is a hypothesis, not a claim."""
        return bool(SUPPOSITION.search(self.text))


@dataclass(frozen=True)
class Phrase:
    """A term, paraphrase or misconception pattern, segmented once."""

    text: str
    tokens: tuple[str, ...]
    negations: int

    def coverage(self, unit: Unit) -> float:
        if not self.tokens:
            return 0.0
        present = sum(1 for t in self.tokens if _present(t, unit))
        return present / len(self.tokens)

    def whole_in(self, unit: Unit) -> bool:
        """``coverage(unit) == 1.0``, stopping at the first token missing."""
        return bool(self.tokens) and all(_present(t, unit) for t in self.tokens)

    def ordered_coverage(self, unit: Unit) -> float:
        """Coverage counting only tokens found in the pattern's order (longest common
        subsequence): "ZeRO-1 shards parameters, ZeRO-3 optimizer states" must not match
        "ZeRO-1 shards optimizer states, ZeRO-3 parameters", which has the same words."""
        if not self.tokens:
            return 0.0
        previous = [0] * (len(unit.tokens) + 1)
        for token in self.tokens:
            current = [0] * (len(unit.tokens) + 1)
            for j, other in enumerate(unit.tokens, start=1):
                if other == token or (_HAN.search(token) and len(token) >= 2 and (token in other or (len(other) >= 2 and other in token))):
                    current[j] = previous[j - 1] + 1
                else:
                    current[j] = max(previous[j], current[j - 1])
            previous = current
        found = previous[-1]
        # a Chinese word jieba cut differently still counts, wherever it is (once: not when the
        # subsequence above already matched it inside a longer word)
        loose = sum(1 for t in self.tokens if t not in unit.token_set and _present(t, unit) and not _inside_a_token(t, unit))
        return min(len(self.tokens), found + loose) / len(self.tokens)

    def all_terms_present(self, unit: Unit) -> bool:
        return all(t in unit.token_set for t in self.terms)

    @cached_property
    def terms(self) -> tuple[str, ...]:
        return tuple(t for t in self.tokens if t.startswith(TERM_PREFIX))

    def may_cover(self, unit: Unit, share: float) -> bool:
        """False when :meth:`ordered_coverage` of ``unit`` is certainly below ``share``: fewer of the
        phrase's tokens could be matched there at all (exactly, as a Chinese word inside another,
        or present in the text). A cheap bound that spares the subsequence for most clauses, and,
        tried on a whole answer (:attr:`Answer.whole_claim_clauses`), for most phrases."""
        if not self.tokens:
            return False
        need = share * len(self.tokens)
        missing_allowed = len(self.tokens) - need
        missing = 0
        for token in self.tokens:
            if not _reachable(token, unit):
                missing += 1
                if missing > missing_allowed:
                    return False
        return True


def _reachable(token: str, unit: Unit) -> bool:
    """The token could count in :meth:`Phrase.ordered_coverage` of ``unit``: every way it matches
    there (the same token, a Chinese word inside another either way, present in the text) passes."""
    if token in unit.token_set:
        return True
    if len(token) < 2 or not _HAN.search(token):
        return False
    return token in unit.norm or _inside_a_token(token, unit)


def _inside_a_token(token: str, unit: Unit) -> bool:
    return any(token in other or (len(other) >= 2 and other in token) for other in unit.tokens)


def _present(token: str, unit: Unit) -> bool:
    if token in unit.token_set:
        return True
    # jieba may cut a Chinese phrase differently in the answer than in the rubric
    return bool(_HAN.search(token)) and len(token) >= 2 and token in unit.norm


def make_phrase(segmenter: Segmenter, text: str, keep: frozenset[str] = frozenset()) -> Phrase:
    return Phrase(text=text, tokens=tuple(dict.fromkeys(segmenter.tokens(text, keep))), negations=count_negations(text))


def make_claim(segmenter: Segmenter, text: str) -> Phrase:
    """A misconception's phrasing, with the words a claim turns on (需要, 都, each …) kept."""
    return make_phrase(segmenter, text, CLAIM_WORDS)


_VOWELS = re.compile(r"[aeiouy]")
_CONSONANT_RUN = re.compile(r"[b-df-hj-np-tv-xz]{5,}")


def _implausible(word: str, dictionary: dict[str, int]) -> bool:
    if _HAN.search(word):
        # a run of Chinese characters that jieba could not cut into dictionary words
        return len(word) == 1 and dictionary.get(word, 0) < 50
    if word.isdigit():
        return False
    return len(word) >= 4 and (not _VOWELS.search(word) or bool(_CONSONANT_RUN.search(word)))


def _list_parts(text: str) -> list[str]:
    parts = [part for part in _LIST_SPLIT.split(text) if part.strip()]
    english = _ENGLISH_WORD.findall(text)
    spaced = len(_HAN_GAP.findall(text)) >= 3 or (
        not _HAN.search(text) and len(english) >= 6 and not any(w.casefold() in STOPWORDS for w in english)
    )
    return [word for part in parts for word in part.split()] if spaced else parts


def _contrasted(clause: str) -> Iterator[tuple[int, str]]:
    """The parts of a clause split at its contrasts, each with its offset, stripped."""
    cuts = [0, *(m.start() for m in CONTRAST.finditer(clause) if m.start() > 0), len(clause)]
    for begin, end in itertools.pairwise(cuts):
        piece = clause[begin:end]
        if piece.strip():
            yield begin + piece.index(piece.strip()), piece.strip()


def detect_language(text: str) -> str:
    han = len(_HAN.findall(text))
    latin = len(_LATIN.findall(text))
    # A Chinese character carries about as much as a short English word, hence the factor.
    return "zh" if han * 3 >= latin and han > 0 else "en"


def _without_role_blocks(text: str) -> tuple[str, list[str]]:
    """``text`` with each role block (``ROLE_BLOCK``) blanked out, spaces for its characters so
    that offsets into the text still hold, and the blocks as written."""
    blocks = [m.group(0) for m in ROLE_BLOCK.finditer(text)]
    blanked = ROLE_BLOCK.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    return blanked, [b.strip() for b in blocks if b.strip()]


def addressed_to_grader(text: str) -> list[str]:
    """What in ``text`` speaks to whoever grades it, as written: role blocks (a system header and
    its lines, a system code block, a role tag and what it encloses), then each sentence that
    ``STEERING`` finds in the rest."""
    rest, found = _without_role_blocks(text)
    for match in _SENTENCE.finditer(rest):
        stripped = match.group(0).strip()
        if stripped and STEERING.search(stripped):
            found.append(stripped)
    return found


def for_the_model(text: str, limit: int = GRADING_LIMIT) -> str:
    """The candidate's words as a model is shown them, grader or interviewer: the first ``limit``
    characters (what the offline reader grades; a longer paste is flagged ``truncated``), less the
    sentences addressed to the grader. The fence around them (``prompts.fence``) stays as well."""
    body = text[:limit]
    for sentence in addressed_to_grader(body):
        body = body.replace(sentence, "", 1)
    return body


@dataclass
class Answer:
    """An answer prepared for grading."""

    original: str
    segmenter: Segmenter
    flags: list[str] = field(default_factory=list)
    steering: list[str] = field(default_factory=list)
    sentences: list[Unit] = field(default_factory=list)
    clauses: list[Unit] = field(default_factory=list)

    @classmethod
    def read(cls, text: str, segmenter: Segmenter, limit: int = GRADING_LIMIT) -> Answer:
        answer = cls(original=text, segmenter=segmenter)
        body = text
        if len(body) > limit:
            body = body[:limit]
            answer.flags.append("truncated")
        if not body.strip():
            answer.flags.append("empty")
            return answer
        body, answer.steering = _without_role_blocks(body)
        for match in _SENTENCE.finditer(body):
            raw = match.group(0)
            stripped = raw.strip()
            if not stripped:
                continue
            start = match.start() + raw.index(stripped)
            if STEERING.search(stripped):
                answer.steering.append(stripped)
                continue
            sentence = answer._unit(start, stripped)
            if not sentence.tokens:
                continue
            answer.sentences.append(sentence)
            for clause in _CLAUSE.finditer(stripped):
                for offset, part in _contrasted(clause.group(0)):
                    unit = answer._unit(start + clause.start() + offset, part)
                    if unit.tokens:
                        answer.clauses.append(unit)
        if answer.steering:
            answer.flags.append("steering-attempt")
        if not answer.sentences:  # only punctuation, symbols or instructions to the grader
            answer.flags.append("empty")
        if NO_KNOWLEDGE.search(body.strip()) and len(body.strip()) < 60:
            answer.flags.append("no-knowledge")
        return answer

    def _unit(self, start: int, text: str) -> Unit:
        parts = tuple(tuple(self.segmenter.tokens(part)) for part in _list_parts(text))
        return Unit(start, start + len(text), text, tuple(self.segmenter.tokens(text)), normalise(text), parts)

    @cached_property
    def tokens(self) -> list[str]:
        return [t for s in self.sentences for t in s.tokens]

    @cached_property
    def claim_clauses(self) -> list[Unit]:
        """The clauses as misconceptions are matched against them (see :func:`make_claim`)."""
        return [self._claim_unit(u) for u in self.clauses]

    @cached_property
    def claim_sentences(self) -> list[Unit]:
        return [self._claim_unit(u) for u in self.sentences]

    @cached_property
    def whole_claim_clauses(self) -> Unit:
        """Every claim clause as one unit: a phrase that cannot cover it covers none of them."""
        return _whole(self.claim_clauses)

    @cached_property
    def whole_claim_sentences(self) -> Unit:
        return _whole(self.claim_sentences)

    def _claim_unit(self, unit: Unit) -> Unit:
        return Unit(unit.start, unit.end, unit.text, tuple(self.segmenter.tokens(unit.text, CLAIM_WORDS)), unit.norm, unit.parts)

    @cached_property
    def lang(self) -> str:
        return detect_language(" ".join(s.text for s in self.sentences) or self.original)

    @cached_property
    def unique_sentences(self) -> list[Unit]:
        """Sentences with repeats (the same tokens) removed: padding earns nothing twice."""
        seen: set[tuple[str, ...]] = set()
        unique: list[Unit] = []
        for sentence in self.sentences:
            key = tuple(sorted(set(sentence.tokens)))
            if key in seen:
                continue
            seen.add(key)
            unique.append(sentence)
        return unique

    @cached_property
    def gibberish(self) -> bool:
        """Mostly strings that are no words: keyboard mashing, random characters."""
        words = [t for t in self.tokens if not t.startswith("@")]
        if not words or len(words) != len(self.tokens):
            return False
        dictionary = self.segmenter.jieba_tokenizer.FREQ
        implausible = sum(1 for w in words if _implausible(w, dictionary))
        return implausible / len(words) >= 0.6

    @cached_property
    def padding_ratio(self) -> float:
        if not self.sentences:
            return 0.0
        return 1.0 - len(self.unique_sentences) / len(self.sentences)


def _whole(units: list[Unit]) -> Unit:
    """The units as one (for bounds only: its span and text mean nothing), with each distinct token
    once: every token, Chinese word and text of a unit is in it, so what a unit could match, it can."""
    tokens = tuple(dict.fromkeys(t for u in units for t in u.tokens))
    return Unit(0, 0, "", tokens, "\n".join(u.norm for u in units))
