"""Score caps: the answers whose calibrated score is capped, and at what. A keyword list, filler
around one or two points, an off-topic answer or one that reads the question back is capped; a
criterion with a misconception is held at its lowest non-zero anchor."""

from __future__ import annotations

from interviewer.grading.calibration import Calibration
from interviewer.grading.grade import NOTHING_TO_GRADE
from interviewer.grading.offline.matching import CriterionResult, Features
from interviewer.grading.reading import Answer
from interviewer.retrieval.segment import Segmenter

OFF_TOPIC_CAP = 1.0
KEYWORD_LIST_CAP = 2.0  # a list of the right terms shows recall, not understanding
# Padding: filler around one or two real points. At least three in four sentences evidence nothing
# the rubric asks for (correct answers in the development and held-out sets: at most 0.70, and never
# fewer than three sentences that do), and at most two do.
FILLER_SHARE = 0.75
FILLER_POINTS = 2
PADDING_CAP = 3.0
ECHO_SHARE = 0.7  # an answer whose words are this much the question's own only repeats it


def keyword_list(credit: list[float], explained: float) -> bool:
    """Three or more concepts found, but mostly in sentences that only name them."""
    return bool(credit) and len(credit) >= 3 and explained < 0.34


def filler(answer: Answer, results: list[CriterionResult]) -> bool:
    """Most sentences evidence nothing the rubric asks for, and at most a couple do."""
    evidence = {id(u) for r in results for u in r.evidence}
    sentences = answer.unique_sentences
    points = sum(1 for s in sentences if id(s) in evidence)
    return len(sentences) >= 4 and points <= FILLER_POINTS and 1 - points / len(sentences) >= FILLER_SHARE


def padded(answer: Answer, is_filler: bool) -> bool:
    """Filler, or the same sentences repeated."""
    return is_filler or (answer.padding_ratio >= 0.4 and len(answer.sentences) >= 4)


def echoes(segmenter: Segmenter, answer: Answer, asked: tuple[str, ...]) -> bool:
    """Mostly the question's own words back (answers in the labelled sets: at most 0.39)."""
    words = set().union(*(segmenter.tokens(text) for text in asked)) if asked else set()
    return len(answer.tokens) >= 3 and sum(1 for t in answer.tokens if t in words) / len(answer.tokens) >= ECHO_SHARE


def capped_score(features: Features, calibration: Calibration) -> float:
    """The calibrated score, zero or capped as the answer's flags say."""
    if NOTHING_TO_GRADE & set(features.flags):
        return 0.0
    if {"off-topic", "question-echo"} & set(features.flags):
        return min(OFF_TOPIC_CAP, calibration.score(features))
    if "keyword-list" in features.flags:
        return min(KEYWORD_LIST_CAP, calibration.score(features))
    if features.filler:
        return min(PADDING_CAP, calibration.score(features))
    return calibration.score(features)


def criterion_score(result: CriterionResult) -> int:
    """The criterion's anchor: its fraction of the top score, rounded; a criterion with a
    misconception is capped at its lowest non-zero anchor."""
    top = result.compiled.criterion.max_score
    ceiling = 1 if result.misconceptions else top
    return min(ceiling, int(result.fraction * top + 0.5))
