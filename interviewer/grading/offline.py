"""The offline grader: judges an answer against its rubric without any model.

For each criterion it finds where the answer evidences the criterion's concepts (their terms,
synonyms in either language, or plain-word paraphrases), gives full credit only when the
concept sits in a sentence that explains something (a bare list of terms earns half), measures
how much of the criterion's top score anchor the answer covers, and looks for the criterion's
misconceptions clause by clause (a contrast starts a new clause; a negated clause, such as a
correction, does not count, nor does a clause that only supposes something: "if TP spanned
nodes, …"; the words a claim turns on, such as 需要 or "all", are kept for this). The weighted
criterion fractions, less a penalty per misconception, are mapped onto 0-10 by a calibration
fitted on expert-scored answers (see :mod:`interviewer.grading.calibration`); off-topic answers, answers
that read the question back, keyword lists and filler around one or two points are capped.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from interviewer.content.bank import Bank
from interviewer.content.rubric import Criterion, FollowUp, Lang, Question
from interviewer.grading.calibration import Calibration
from interviewer.grading.grade import CriterionGrade, Grade, MisconceptionFound, PassageCitation
from interviewer.grading.reading import Answer, Phrase, Unit, make_claim, make_phrase
from interviewer.retrieval.segment import Segmenter

GRADER_NAME = "offline"
GRADER_VERSION = "1"

EXPLAINED_CREDIT = 1.0
MENTION_CREDIT = 0.5
PARAPHRASE_COVERAGE = 0.6
PATTERN_COVERAGE = 0.75
CLAIM_COVERAGE = 0.8
# Off-topic: another question of the bank explains the answer's (rarity-weighted) words clearly
# better than this one (the largest margin among the development set's on-topic answers is 0.29),
# or almost none of them belong to this question.
OFF_TOPIC_MARGIN = 0.3
UNRELATED_RELEVANCE = 0.12
OFF_TOPIC_CAP = 1.0
KEYWORD_LIST_CAP = 2.0  # a list of the right terms shows recall, not understanding
# Padding: filler around one or two real points. At least three in four sentences evidence nothing
# the rubric asks for (correct answers in the development and held-out sets: at most 0.70, and never
# fewer than three sentences that do), and at most two do.
FILLER_SHARE = 0.75
FILLER_POINTS = 2
PADDING_CAP = 3.0
ECHO_SHARE = 0.7  # an answer whose words are this much the question's own only repeats it
_CLAUSE_BREAK = re.compile(r"[，,、：:；;]")
_DIGIT = re.compile(r"\d")


@dataclass(frozen=True)
class _Concept:
    id: str
    label: str
    terms: tuple[Phrase, ...]
    paraphrases: tuple[Phrase, ...]


@dataclass(frozen=True)
class _Misconception:
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
class _CompiledCriterion:
    criterion: Criterion
    concepts: tuple[_Concept, ...]
    misconceptions: tuple[_Misconception, ...]
    anchors: tuple[Phrase, ...]  # the top level's anchor, both languages


@dataclass
class CriterionResult:
    """The grader's working for one criterion, kept for the calibration and the tests."""

    compiled: _CompiledCriterion
    credit: dict[str, float] = field(default_factory=dict)
    evidence: list[Unit] = field(default_factory=list)
    misconceptions: list[tuple[object, Unit]] = field(default_factory=list)
    concept_coverage: float = 0.0
    depth: float = 0.0
    fraction: float = 0.0


@dataclass
class Features:
    """What the calibration sees: everything is a fraction or a count, never the answer's length."""

    raw: float  # weighted criterion fractions, 0-1
    misconceptions: int
    explained: float  # share of concept credit earned in explanatory sentences
    flags: list[str]
    filler: bool = False  # most sentences evidence nothing the rubric asks for


class OfflineGrader:
    """Grades answers to bank questions and follow-ups, and free questions against a reference."""

    name = GRADER_NAME
    version = GRADER_VERSION

    def __init__(
        self,
        segmenter: Segmenter,
        calibration: Calibration | None = None,
        titles: dict[str, str] | None = None,
        bank: Bank | None = None,
    ):
        self.segmenter = segmenter
        self.calibration = calibration or Calibration.load()
        self.titles = titles or {}
        self.bank = bank
        self._vocabularies: dict[str, frozenset[str]] | None = None
        self._rarity: dict[str, float] = {}
        self._compiled: dict[str, tuple[_CompiledCriterion, ...]] = {}

    # -- rubric phrases, segmented once per criterion --------------------------------------------
    def _compile(self, key: str, criteria: tuple[Criterion, ...]) -> tuple[_CompiledCriterion, ...]:
        if key not in self._compiled:
            self._compiled[key] = self._compile_criteria(criteria)
        return self._compiled[key]

    def _compile_criteria(self, criteria: tuple[Criterion, ...]) -> tuple[_CompiledCriterion, ...]:
        phrase = lambda text: make_phrase(self.segmenter, text)  # noqa: E731
        compiled = []
        for criterion in criteria:
            concepts = tuple(
                _Concept(
                    id=c.id,
                    label=c.terms[0],
                    terms=tuple(p for p in map(phrase, c.terms) if p.tokens),
                    paraphrases=tuple(p for p in map(phrase, c.paraphrases) if p.tokens),
                )
                for c in criterion.concepts
            )
            misconceptions = tuple(
                _Misconception(
                    source=m,
                    patterns=tuple(p for p in (make_claim(self.segmenter, t) for t in m.patterns) if p.tokens),
                    claims=tuple(p for p in (make_claim(self.segmenter, m.claim.zh), make_claim(self.segmenter, m.claim.en)) if p.tokens),
                    correction_words=frozenset(
                        t for text in (m.correction.zh, m.correction.en) for t in make_claim(self.segmenter, text).tokens
                    ),
                )
                for m in criterion.misconceptions
            )
            top = criterion.levels[-1]
            anchors = tuple(p for p in (phrase(top.zh), phrase(top.en)) if p.tokens)
            compiled.append(_CompiledCriterion(criterion, concepts, misconceptions, anchors))
        return tuple(compiled)

    # -- what each question is about ----------------------------------------------------------
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

    def off_topic(self, tokens: set[str], question_id: str) -> bool:
        if self.bank is None or question_id not in self.vocabularies():
            return False
        own = self.relevance(tokens, question_id)
        if own < UNRELATED_RELEVANCE:
            return True
        best_other = max((self.relevance(tokens, q) for q in self.vocabularies() if q != question_id), default=0.0)
        return best_other - own >= OFF_TOPIC_MARGIN

    # -- public API ------------------------------------------------------------------------------
    def grade(self, question: Question, answer: str, lang: Lang | None = None) -> Grade:
        criteria = self._compile(question.id, tuple(question.criteria))
        asked = (question.question.zh, question.question.en)
        return self._grade(answer, criteria, question.id, question.version, question.references, lang, asked)

    def grade_followup(self, question: Question, followup: FollowUp, answer: str, lang: Lang | None = None) -> Grade:
        criteria = self._compile(f"{question.id}/{followup.id}", tuple(followup.criteria))
        key, asked = f"{question.id}/{followup.id}", (followup.question.zh, followup.question.en)
        return self._grade(answer, criteria, key, question.version, followup.references, lang, asked)

    def echoes(self, answer: Answer, asked: tuple[str, ...]) -> bool:
        """Mostly the question's own words back (answers in the labelled sets: at most 0.39)."""
        words = set().union(*(self.segmenter.tokens(text) for text in asked)) if asked else set()
        return len(answer.tokens) >= 3 and sum(1 for t in answer.tokens if t in words) / len(answer.tokens) >= ECHO_SHARE

    # -- the work --------------------------------------------------------------------------------
    def analyse(self, answer: Answer, criteria: tuple[_CompiledCriterion, ...]) -> tuple[list[CriterionResult], Features]:
        results = [self._criterion(answer, c) for c in criteria]
        total_weight = sum(r.compiled.criterion.weight for r in results) or 1.0
        raw = sum(r.compiled.criterion.weight * r.fraction for r in results) / total_weight
        credit = [v for r in results for v in r.credit.values()]
        explained = sum(1 for v in credit if v >= EXPLAINED_CREDIT) / len(credit) if credit else 0.0
        misconceptions = sum(len(r.misconceptions) for r in results)
        flags = list(answer.flags)
        if credit and len(credit) >= 3 and explained < 0.34:
            flags.append("keyword-list")
        evidence = {id(u) for r in results for u in r.evidence}
        sentences = answer.unique_sentences
        points = sum(1 for s in sentences if id(s) in evidence)
        filler = len(sentences) >= 4 and points <= FILLER_POINTS and 1 - points / len(sentences) >= FILLER_SHARE
        if filler or (answer.padding_ratio >= 0.4 and len(answer.sentences) >= 4):
            flags.append("padding")
        return results, Features(raw=raw, misconceptions=misconceptions, explained=explained, flags=flags, filler=filler)

    def _criterion(self, answer: Answer, compiled: _CompiledCriterion) -> CriterionResult:
        result = CriterionResult(compiled)
        for concept in compiled.concepts:
            best = 0.0
            where: Unit | None = None
            for sentence in answer.unique_sentences:
                if not self._evidences(concept, sentence):
                    continue
                credit = EXPLAINED_CREDIT if sentence.explanatory else MENTION_CREDIT
                if credit > best:
                    best, where = credit, sentence
                if best >= EXPLAINED_CREDIT:
                    break
            if where is not None:
                result.credit[concept.id] = best
                if where not in result.evidence:
                    result.evidence.append(where)
        n = len(compiled.concepts)
        need = max(1, round(0.75 * n))
        result.concept_coverage = min(1.0, sum(result.credit.values()) / need)
        result.depth = self._depth(answer, compiled.anchors)
        result.misconceptions = self._misconceptions(answer, compiled.misconceptions)
        fraction = 0.65 * result.concept_coverage + 0.35 * result.depth * min(1.0, result.concept_coverage * 2)
        if result.misconceptions:
            fraction = min(fraction, 0.34) * 0.5
        result.fraction = fraction
        return result

    @staticmethod
    def _evidences(concept: _Concept, sentence: Unit) -> bool:
        for term in concept.terms:
            if term.coverage(sentence) >= 1.0:
                return True
        for paraphrase in concept.paraphrases:
            covered = paraphrase.coverage(sentence)
            if covered >= PARAPHRASE_COVERAGE and covered * len(paraphrase.tokens) >= min(2, len(paraphrase.tokens)):
                return True
        return False

    @staticmethod
    def _depth(answer: Answer, anchors: tuple[Phrase, ...]) -> float:
        if not anchors or not answer.unique_sentences:
            return 0.0
        whole = Unit(0, 0, "", tuple(answer.tokens), " ".join(s.norm for s in answer.unique_sentences))
        return max(anchor.coverage(whole) for anchor in anchors)

    @staticmethod
    def _misconceptions(answer: Answer, misconceptions: tuple[_Misconception, ...]) -> list[tuple[object, Unit]]:
        found: list[tuple[object, Unit]] = []
        for m in misconceptions:
            hit = OfflineGrader._find_claim(answer, m)
            if hit is not None:
                found.append((m.source, hit))
        return found

    @staticmethod
    def _find_claim(answer: Answer, m: _Misconception) -> Unit | None:
        for pattern in m.patterns:
            threshold = 1.0 if len(pattern.tokens) <= 5 else PATTERN_COVERAGE
            for unit in answer.claim_clauses:
                if unit.supposed or _polarity(unit.negated) != _polarity(pattern.negations):
                    continue
                if pattern.all_terms_present(unit) and pattern.ordered_coverage(unit) >= threshold:
                    if threshold < 1.0 and not m.loose_match_holds(pattern, unit):
                        continue
                    return unit
        for claim in m.claims:
            # a claim of one clause is looked for in one clause, not in words spread over a sentence
            units = answer.claim_sentences if _CLAUSE_BREAK.search(claim.text.strip().rstrip("。.")) else answer.claim_clauses
            for unit in units:
                if _polarity(unit.negated) != _polarity(claim.negations):
                    continue
                if claim.all_terms_present(unit) and claim.ordered_coverage(unit) >= CLAIM_COVERAGE:
                    return unit
        return None

    def _grade(
        self,
        text: str,
        criteria: tuple[_CompiledCriterion, ...],
        question_id: str,
        rubric_version: int | None,
        references: list[str],
        lang: Lang | None,
        asked: tuple[str, ...] = (),
    ) -> Grade:
        answer = Answer.read(text, self.segmenter)
        language: Lang = lang or ("zh" if answer.lang == "zh" else "en")
        results, features = self.analyse(answer, criteria)
        if answer.sentences and self.off_topic(set(answer.tokens), question_id.split("/")[0]):
            features.flags.append("off-topic")
        if answer.gibberish:
            features.flags.append("gibberish")
        if self.echoes(answer, asked):
            features.flags.append("question-echo")
        if {"empty", "no-knowledge", "gibberish"} & set(features.flags):
            score = 0.0
        elif {"off-topic", "question-echo"} & set(features.flags):
            score = min(OFF_TOPIC_CAP, self.calibration.score(features))
        elif "keyword-list" in features.flags:
            score = min(KEYWORD_LIST_CAP, self.calibration.score(features))
        elif features.filler:
            score = min(PADDING_CAP, self.calibration.score(features))
        else:
            score = self.calibration.score(features)
        graded = [self._criterion_grade(r, language) for r in results]
        return Grade(
            score=score,
            criteria=graded,
            feedback=self._feedback(score, graded, features, language),
            lang=language,
            flags=sorted(set(features.flags)),  # type: ignore[arg-type]
            passages=[PassageCitation(source=s, title=self.titles.get(s, s)) for s in references],
            question_id=question_id,
            grader=GRADER_NAME,
            grader_version=GRADER_VERSION,
            rubric_version=rubric_version,
        )

    @staticmethod
    def _criterion_grade(result: CriterionResult, lang: Lang) -> CriterionGrade:
        criterion = result.compiled.criterion
        top = criterion.max_score
        # a criterion with a misconception is capped at its lowest non-zero anchor
        ceiling = 1 if result.misconceptions else top
        score = min(ceiling, int(result.fraction * top + 0.5))
        level = criterion.levels[score]
        missing = [concept.label for concept in result.compiled.concepts if result.credit.get(concept.id, 0) < EXPLAINED_CREDIT]
        if score < top:
            missing.append(criterion.levels[top].get(lang))
        return CriterionGrade(
            id=criterion.id,
            description=criterion.description.get(lang),
            weight=criterion.weight,
            score=score,
            max_score=top,
            level=level.zh if lang == "zh" else level.en,
            evidence=[u.text for u in result.evidence],
            found=sorted(result.credit),
            missing=missing,
            misconceptions=[
                MisconceptionFound(
                    id=m.id,  # type: ignore[attr-defined]
                    claim=m.claim.get(lang),  # type: ignore[attr-defined]
                    correction=m.correction.get(lang),  # type: ignore[attr-defined]
                    evidence=unit.text,
                )
                for m, unit in result.misconceptions
            ],
        )

    @staticmethod
    def _feedback(score: float, criteria: list[CriterionGrade], features: Features, lang: Lang) -> str:
        zh = lang == "zh"
        parts: list[str] = []
        if "empty" in features.flags:
            if "steering-attempt" in features.flags:
                return "回答只有对评分者的指令，已被忽略；没有可评分的内容。" if zh else "The answer only addressed the grader: ignored."
            return "没有作答。" if zh else "No answer was given."
        if "no-knowledge" in features.flags:
            return (
                "记为不会。先读下面的参考资料，再来练这道题。"
                if zh
                else "Noted as not known. Read the passages below, then practise this question."
            )
        if "question-echo" in features.flags:
            parts.append("回答基本只是复述了题目，没有自己的内容。" if zh else "The answer mostly repeats the question.")
        if "steering-attempt" in features.flags:
            parts.append("回答中对评分者的指令已被忽略。" if zh else "Instructions addressed to the grader were ignored.")
        for c in criteria:
            for m in c.misconceptions:
                claim = m.claim.rstrip("。.！!；; ")
                correction = m.correction.rstrip("。.！!；; ")
                parts.append(f"错误：{claim}。更正：{correction}。" if zh else f"Wrong: {claim}. In fact: {correction}.")
        strong = [c.description for c in criteria if c.score == c.max_score]
        if strong:
            parts.append(("讲到位的：" if zh else "Covered well: ") + ("；".join(strong) if zh else "; ".join(strong)))
        weak = sorted((c for c in criteria if c.score < c.max_score), key=lambda c: -c.weight * (c.max_score - c.score))
        for c in weak[:2]:
            parts.append(
                f"{c.description}（{c.score}/{c.max_score}）。满分的回答：{c.missing[-1]}"
                if zh
                else f"{c.description} ({c.score}/{c.max_score}). Full marks: {c.missing[-1]}"
            )
        if "keyword-list" in features.flags:
            parts.append("多数术语只是列出，没有解释机制和原因。" if zh else "Most terms are only listed, not explained.")
        if features.filler:
            parts.append(
                "大部分句子没有回答问题，只有一两句讲到了要点：空话不加分，要把要点展开讲机制和原因。"
                if zh
                else "Most sentences say nothing the question asks for; only one or two make a point. "
                "Filler earns nothing: develop the points into mechanisms and reasons."
            )
        elif "padding" in features.flags:
            parts.append("重复的内容不会加分。" if zh else "Repeated content earns nothing twice.")
        if "truncated" in features.flags:
            parts.append("回答过长，只评了前面部分。" if zh else "The answer was too long; only its beginning was graded.")
        return "\n".join(parts)


_LIMITATION = {
    "zh": "离线评分只认得评分细则里列出的错误说法；没被指出的错误不代表不存在。配置模型后，每个说法都会被逐一判断。",
    "en": "The offline grader only recognises the wrong claims its rubric lists; an error it does not name may still be "
    "there. With a model configured, every claim is judged.",
}


def limitation_note(grade: Grade) -> str | None:
    """What an offline grade that names no error cannot promise, in the grade's language."""
    if grade.grader != GRADER_NAME or grade.score <= 0 or "llm-fallback" in grade.flags or any(c.misconceptions for c in grade.criteria):
        return None
    return _LIMITATION[grade.lang]


def _polarity(negations: int) -> bool:
    """A claim and a clause match only when both are affirmative or both negative: "X needs no
    sync" must not fire on "X needs a sync", nor "X shards the parameters" on "X does not"."""
    return negations > 0


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
