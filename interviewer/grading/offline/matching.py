"""Matching an answer against one compiled criterion: where it evidences each concept (full credit
in a sentence that explains, half for a bare mention), how much of the top anchor it covers, and
which misconceptions it states, clause by clause and with the claim's polarity."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from interviewer.grading.offline.compiled import CompiledConcept, CompiledCriterion, CompiledMisconception
from interviewer.grading.reading import Answer, Phrase, Unit

EXPLAINED_CREDIT = 1.0
MENTION_CREDIT = 0.5
PARAPHRASE_COVERAGE = 0.6
PATTERN_COVERAGE = 0.75
CLAIM_COVERAGE = 0.8
_CLAUSE_BREAK = re.compile(r"[，,、：:；;]")


@dataclass
class CriterionResult:
    """The grader's working for one criterion, kept for the calibration and the tests."""

    compiled: CompiledCriterion
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


def match_criterion(answer: Answer, compiled: CompiledCriterion) -> CriterionResult:
    result = CriterionResult(compiled)
    for concept in compiled.concepts:
        best = 0.0
        where: Unit | None = None
        for sentence in answer.unique_sentences:
            if not evidences(concept, sentence):
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
    result.depth = depth(answer, compiled.anchors)
    result.misconceptions = find_misconceptions(answer, compiled.misconceptions)
    fraction = 0.65 * result.concept_coverage + 0.35 * result.depth * min(1.0, result.concept_coverage * 2)
    if result.misconceptions:
        fraction = min(fraction, 0.34) * 0.5
    result.fraction = fraction
    return result


def evidences(concept: CompiledConcept, sentence: Unit) -> bool:
    for term in concept.terms:
        if term.whole_in(sentence):
            return True
    for paraphrase in concept.paraphrases:
        covered = paraphrase.coverage(sentence)
        if covered >= PARAPHRASE_COVERAGE and covered * len(paraphrase.tokens) >= min(2, len(paraphrase.tokens)):
            return True
    return False


def depth(answer: Answer, anchors: tuple[Phrase, ...]) -> float:
    if not anchors or not answer.unique_sentences:
        return 0.0
    whole = Unit(0, 0, "", tuple(answer.tokens), " ".join(s.norm for s in answer.unique_sentences))
    return max(anchor.coverage(whole) for anchor in anchors)


def find_misconceptions(answer: Answer, misconceptions: tuple[CompiledMisconception, ...]) -> list[tuple[object, Unit]]:
    found: list[tuple[object, Unit]] = []
    for m in misconceptions:
        hit = find_claim(answer, m)
        if hit is not None:
            found.append((m.source, hit))
    return found


def find_claim(answer: Answer, m: CompiledMisconception) -> Unit | None:
    for pattern in m.patterns:
        threshold = 1.0 if len(pattern.tokens) <= 5 else PATTERN_COVERAGE
        if not pattern.may_cover(answer.whole_claim_clauses, threshold):
            continue
        for unit in answer.claim_clauses:
            if unit.supposed or _polarity(unit.negated) != _polarity(pattern.negations):
                continue
            if pattern.all_terms_present(unit) and pattern.may_cover(unit, threshold) and pattern.ordered_coverage(unit) >= threshold:
                if threshold < 1.0 and not m.loose_match_holds(pattern, unit):
                    continue
                return unit
    for claim in m.claims:
        # a claim of one clause is looked for in one clause, not in words spread over a sentence
        sentences = bool(_CLAUSE_BREAK.search(claim.text.strip().rstrip("。.")))
        units = answer.claim_sentences if sentences else answer.claim_clauses
        if not claim.may_cover(answer.whole_claim_sentences if sentences else answer.whole_claim_clauses, CLAIM_COVERAGE):
            continue
        for unit in units:
            if _polarity(unit.negated) != _polarity(claim.negations):
                continue
            if claim.all_terms_present(unit) and claim.may_cover(unit, CLAIM_COVERAGE) and claim.ordered_coverage(unit) >= CLAIM_COVERAGE:
                return unit
    return None


def _polarity(negations: int) -> bool:
    """A claim and a clause match only when both are affirmative or both negative: "X needs no
    sync" must not fire on "X needs a sync", nor "X shards the parameters" on "X does not"."""
    return negations > 0
