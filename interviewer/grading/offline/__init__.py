"""The offline grader, by job: the rubric compiled for matching (:mod:`.compiled`), the off-topic
model (:mod:`.topic`), concept and misconception matching (:mod:`.matching`), score caps
(:mod:`.caps`), the feedback in both languages (:mod:`.feedback`), and the grader that composes
them (:mod:`.grader`)."""

from interviewer.grading.offline.caps import (
    ECHO_SHARE,
    FILLER_POINTS,
    FILLER_SHARE,
    KEYWORD_LIST_CAP,
    OFF_TOPIC_CAP,
    PADDING_CAP,
)
from interviewer.grading.offline.feedback import GRADER_NAME, GRADER_VERSION, limitation_note
from interviewer.grading.offline.grader import OfflineGrader
from interviewer.grading.offline.matching import (
    CLAIM_COVERAGE,
    EXPLAINED_CREDIT,
    MENTION_CREDIT,
    PARAPHRASE_COVERAGE,
    PATTERN_COVERAGE,
    CriterionResult,
    Features,
)
from interviewer.grading.offline.topic import OFF_TOPIC_MARGIN, UNRELATED_RELEVANCE

__all__ = [
    "CLAIM_COVERAGE",
    "ECHO_SHARE",
    "EXPLAINED_CREDIT",
    "FILLER_POINTS",
    "FILLER_SHARE",
    "GRADER_NAME",
    "GRADER_VERSION",
    "KEYWORD_LIST_CAP",
    "MENTION_CREDIT",
    "OFF_TOPIC_CAP",
    "OFF_TOPIC_MARGIN",
    "PADDING_CAP",
    "PARAPHRASE_COVERAGE",
    "PATTERN_COVERAGE",
    "UNRELATED_RELEVANCE",
    "CriterionResult",
    "Features",
    "OfflineGrader",
    "limitation_note",
]
