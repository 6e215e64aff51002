"""Grading without a rubric: an answer against a reference answer, or against retrieved passages.

Used for questions outside the bank (``interviewer grade`` lines with ``question`` instead of
``question_id``). The unit of comparison is a Chinese character or an English word, weighted by
rarity (jieba's general-language frequencies: 的 counts little, 栈 a lot). The features are the
weighted recall of the reference's units, bigram and trigram recall, bigram precision, the
answer's length, how the reference's key points (its clauses) are covered one by one (a teacher
marks points, not words), how much of the answer only repeats the question, and, when the
reference opens with a verdict ("错误。…", "Yes, …"), whether the answer reaches the same one; a ridge
regression over them and a few non-linear terms, followed by a monotone
piecewise-linear map, is fitted on a public Chinese short-answer set (see
:class:`interviewer.grading.calibration.ReferenceCalibration`). Against several references the best one
counts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from interviewer.content.rubric import Lang
from interviewer.grading.calibration import ReferenceCalibration
from interviewer.grading.grade import Grade, PassageCitation
from interviewer.grading.reading import Answer
from interviewer.retrieval.segment import STOPWORDS, Segmenter, normalise

GRADER_NAME = "offline-reference"
GRADER_VERSION = "1"
_HAN_RUN = re.compile(r"[\u4e00-\u9fff]+")


_UNIT = re.compile(r"[\u4e00-\u9fff]|[a-z0-9]+(?:[-_.][a-z0-9]+)*")
_KEY_POINT = re.compile(r"[，,。；;！？!?：:\n、（）()]+")
KEY_POINT_UNITS = 3  # a clause shorter than this is no key point of its own

# A verdict opens a reference to a true-or-false or can-or-cannot question: "错误。…", "可以，…",
# "No, …". The short words count only when a pause follows (对于 / 是一种 / 能够 are no verdicts).
_VERDICT_LEAD = re.compile(r"^[\s\d.、:：()①②③]*(?:[答解][:：]?\s*)?(?:(?:这个|这|该|此)?(?:叙述|说法|命题|题目)(?:是)?)?")
_PAUSE = r"(?:的)?(?:[,.;!?:，。；！？：、\s]|$)"
_NO = re.compile(r"(?:不正确|不对|错误|(?:错|否|不能|不可以|不可能|不会|不是|不一定|false|wrong|incorrect|no)" + _PAUSE + ")")
_YES = re.compile(r"(?:正确|(?:对|是|能|可以|会|一定|true|right|correct|yes)" + _PAUSE + ")")


@dataclass(frozen=True)
class ReferenceFeatures:
    """Overlap of an answer with one reference, in units of Chinese characters and English words."""

    unit_recall: float  # share of the reference's units (rarity-weighted) found in the answer
    bigram_recall: float
    trigram_recall: float
    bigram_precision: float  # share of the answer's bigrams found in the reference
    log_length: float  # log(1 + units in the answer): an empty or one-word answer scores low
    length_ratio: float  # answer units / reference units, capped at 1
    tiny: float  # 1 when the answer has fewer than 5 units
    points: float = 0.0  # mean coverage of the reference's key points, weighted by their content
    points_half: float = 0.0  # share of key points at least half covered
    points_third: float = 0.0  # share of key points at least a third covered
    points_best: float = 0.0  # the best-covered key point
    points_median: float = 0.0
    question_copy: float = 0.0  # share of the answer's units that are the question's own
    verdict_agrees: float = 0.0  # 1 when the reference opens with a verdict and the answer reaches it
    verdict_contradicts: float = 0.0  # 1 when the answer opens with the opposite verdict

    def vector(self) -> list[float]:
        """The model's inputs: the features plus the non-linear terms the fit found useful."""
        u, ll = self.unit_recall, self.log_length
        return [
            u,
            self.bigram_recall,
            self.trigram_recall,
            self.bigram_precision,
            ll,
            self.length_ratio,
            self.tiny,
            u * u,
            u * ll,
            self.bigram_recall * ll,
            math.sqrt(u),
            self.length_ratio * u,
            min(ll, 3.0),
            self.points,
            self.points_half,
            self.points_third,
            self.points_best,
            self.points_median,
            self.question_copy,
            self.verdict_agrees,
            self.verdict_contradicts,
        ]


class ReferenceGrader:
    name = GRADER_NAME
    version = GRADER_VERSION

    def __init__(self, segmenter: Segmenter, calibration: ReferenceCalibration | None = None):
        self.segmenter = segmenter
        self.calibration = calibration or ReferenceCalibration.load()

    def weight(self, unit: str) -> float:
        """Rarity of a unit in general language: 的 weighs ~5, 栈 ~13; English words a flat 9."""
        if len(unit) == 1 or _HAN_RUN.match(unit):
            jieba = self.segmenter.jieba_tokenizer
            return min(14.0, math.log(jieba.total / (jieba.FREQ.get(unit, 0) + 1)))
        return 0.5 if unit in STOPWORDS else 9.0

    @staticmethod
    def units(text: str) -> list[str]:
        return _UNIT.findall(normalise(text))

    def recall(self, units: set[str], of: set[str]) -> float:
        """Rarity-weighted share of ``of`` found in ``units``."""
        total = sum(self.weight(u) for u in of)
        return sum(self.weight(u) for u in of if u in units) / total if total else 0.0

    def key_points(self, answer: list[str], reference: str) -> list[tuple[float, float]]:
        """(coverage, content weight) of each clause of the reference: half unit recall, half
        bigram recall, so a point counts when its words come together."""
        a_set, a2 = set(answer), _grams(answer, 2)
        points = []
        for clause in _KEY_POINT.split(reference):
            units = self.units(clause)
            if len(units) < KEY_POINT_UNITS:
                continue
            u2 = _grams(units, 2)
            coverage = 0.5 * self.recall(a_set, set(units)) + 0.5 * (len(u2 & a2) / len(u2) if u2 else 0.0)
            points.append((coverage, sum(self.weight(u) for u in set(units))))
        return points or [(0.0, 1.0)]

    def features(self, answer: str, reference: str, question: str = "") -> ReferenceFeatures:
        a, r = self.units(answer), self.units(reference)
        a_set, r_set = set(a), set(r)
        recall = self.recall(a_set, r_set)
        a2, r2, a3, r3 = _grams(a, 2), _grams(r, 2), _grams(a, 3), _grams(r, 3)
        points = self.key_points(a, reference)
        coverage = sorted(c for c, _ in points)
        asked = set(self.units(question))
        expected, given = verdict(reference), verdict(answer)
        return ReferenceFeatures(
            unit_recall=recall,
            bigram_recall=len(a2 & r2) / len(r2) if r2 else 0.0,
            trigram_recall=len(a3 & r3) / len(r3) if r3 else 0.0,
            bigram_precision=len(a2 & r2) / len(a2) if a2 else 0.0,
            log_length=math.log1p(len(a)),
            length_ratio=min(1.0, len(a) / max(1, len(r))),
            tiny=1.0 if len(a) < 5 else 0.0,
            points=sum(c * w for c, w in points) / sum(w for _, w in points),
            points_half=sum(c >= 0.5 for c in coverage) / len(coverage),
            points_third=sum(c >= 0.3 for c in coverage) / len(coverage),
            points_best=coverage[-1],
            points_median=coverage[len(coverage) // 2],
            question_copy=sum(1 for u in a if u in asked) / len(a) if a else 0.0,
            verdict_agrees=1.0 if expected and given == expected else 0.0,
            verdict_contradicts=1.0 if expected and given == -expected else 0.0,
        )

    def best_features(self, answer: str, references: Sequence[str], question: str = "") -> ReferenceFeatures:
        candidates = [self.features(answer, r, question) for r in references if r.strip()]
        if not candidates:
            raise ValueError("no reference text to grade against")
        return max(candidates, key=lambda f: f.bigram_recall)  # the reference the answer follows most closely

    def grade(
        self,
        question: str,
        answer: str,
        references: Sequence[str],
        passages: Sequence[PassageCitation] = (),
        lang: Lang | None = None,
    ) -> Grade:
        read = Answer.read(answer, self.segmenter)
        language: Lang = lang or ("zh" if read.lang == "zh" else "en")
        flags = list(read.flags)
        graded_text = " ".join(s.text for s in read.sentences)
        if {"empty", "no-knowledge"} & set(flags) or not graded_text:
            score = 0.0
            features = None
        else:
            features = self.best_features(graded_text, references, question)
            score = self.calibration.score(features.vector())
        against = "检索到的知识库段落" if passages else "参考答案"
        against_en = "retrieved knowledge passages" if passages else "the reference answer"
        if features is None:
            feedback = "没有可评分的内容。" if language == "zh" else "Nothing to grade."
        elif language == "zh":
            feedback = (
                f"对照{against}评分（无评分细则）：覆盖了参考内容中约 {features.unit_recall:.0%} 的要点，"
                f"回答中约 {features.bigram_precision:.0%} 的表述与参考一致。"
            )
        else:
            feedback = (
                f"Graded against {against_en} (no rubric): covers about {features.unit_recall:.0%} of the "
                f"reference's content; about {features.bigram_precision:.0%} of the answer's wording agrees with it."
            )
        if features is not None and features.verdict_contradicts:
            opposite = "回答的结论与参考答案相反。" if language == "zh" else "The answer's verdict is the opposite of the reference's."
            feedback += "\n" + opposite
        if "steering-attempt" in flags:
            feedback += "\n" + ("回答中对评分者的指令已被忽略。" if language == "zh" else "Instructions to the grader were ignored.")
        return Grade(
            score=score,
            criteria=[],
            feedback=feedback,
            lang=language,
            flags=sorted(set(flags)),  # type: ignore[arg-type]
            passages=list(passages),
            question_id=None,
            grader=GRADER_NAME,
            grader_version=GRADER_VERSION,
            rubric_version=None,
        )


def verdict(text: str) -> int:
    """+1 when the text opens with a yes (正确, 可以, "Yes,"), -1 with a no (错误, 不能, "No."), else 0."""
    opening = _VERDICT_LEAD.sub("", normalise(text))[:12]
    if _NO.match(opening):
        return -1
    return 1 if _YES.match(opening) else 0


def _grams(units: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(units[i : i + n]) for i in range(len(units) - n + 1)}
