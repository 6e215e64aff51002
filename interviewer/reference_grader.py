"""Grading without a rubric: an answer against a reference answer, or against retrieved passages.

Used for questions outside the bank (``interviewer grade`` lines with ``question`` instead of
``question_id``). The unit of comparison is a Chinese character or an English word, weighted by
rarity (jieba's general-language frequencies: 的 counts little, 栈 a lot). The features are the
weighted recall of the reference's units, bigram and trigram recall, bigram precision and the
answer's length; a ridge regression over them and a few non-linear terms, followed by a monotone
piecewise-linear map, is fitted on a public Chinese short-answer set (see
:class:`interviewer.calibration.ReferenceCalibration`). Against several references the best one
counts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from .answer import Answer
from .calibration import ReferenceCalibration
from .grading import Grade, PassageCitation
from .rubric import Lang
from .segment import STOPWORDS, Segmenter, normalise

GRADER_NAME = "offline-reference"
GRADER_VERSION = "1"
_HAN_RUN = re.compile(r"[\u4e00-\u9fff]+")


_UNIT = re.compile(r"[\u4e00-\u9fff]|[a-z0-9]+(?:[-_.][a-z0-9]+)*")


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

    def features(self, answer: str, reference: str) -> ReferenceFeatures:
        a, r = self.units(answer), self.units(reference)
        a_set, r_set = set(a), set(r)
        total = sum(self.weight(u) for u in r_set)
        recall = sum(self.weight(u) for u in r_set if u in a_set) / total if total else 0.0

        def grams(units: list[str], n: int) -> set[tuple[str, ...]]:
            return {tuple(units[i : i + n]) for i in range(len(units) - n + 1)}

        a2, r2, a3, r3 = grams(a, 2), grams(r, 2), grams(a, 3), grams(r, 3)
        return ReferenceFeatures(
            unit_recall=recall,
            bigram_recall=len(a2 & r2) / len(r2) if r2 else 0.0,
            trigram_recall=len(a3 & r3) / len(r3) if r3 else 0.0,
            bigram_precision=len(a2 & r2) / len(a2) if a2 else 0.0,
            log_length=math.log1p(len(a)),
            length_ratio=min(1.0, len(a) / max(1, len(r))),
            tiny=1.0 if len(a) < 5 else 0.0,
        )

    def best_features(self, answer: str, references: Sequence[str]) -> ReferenceFeatures:
        candidates = [self.features(answer, r) for r in references if r.strip()]
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
            features = self.best_features(graded_text, references)
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
