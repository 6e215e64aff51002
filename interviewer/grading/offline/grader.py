"""The offline grader: judges an answer against its rubric without any model, composing the
package's parts.

For each criterion it finds where the answer evidences the criterion's concepts (their terms,
synonyms in either language, or plain-word paraphrases), gives full credit only when the
concept sits in a sentence that explains something (a bare list of terms earns half), measures
how much of the criterion's top score anchor the answer covers, and looks for the criterion's
misconceptions clause by clause (a contrast starts a new clause; a negated clause, such as a
correction, does not count, nor does a clause that only supposes something: "if TP spanned
nodes, …"; the words a claim turns on, such as 需要 or "all", are kept for this): see
:mod:`.matching`, on the rubric as :mod:`.compiled` prepares it. The weighted criterion fractions,
less a penalty per misconception, are mapped onto 0-10 by a calibration fitted on expert-scored
answers (see :mod:`interviewer.grading.calibration`); off-topic answers (:mod:`.topic`), answers
that read the question back, keyword lists and filler around one or two points are capped
(:mod:`.caps`). The feedback is written by :mod:`.feedback`.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict

from interviewer.content.bank import Bank
from interviewer.content.rubric import Criterion, FollowUp, Lang, Question
from interviewer.grading.calibration import Calibration
from interviewer.grading.grade import Grade, PassageCitation
from interviewer.grading.offline import caps
from interviewer.grading.offline.compiled import CompiledCriterion, compile_criteria
from interviewer.grading.offline.feedback import GRADER_NAME, GRADER_VERSION, criterion_grade, feedback
from interviewer.grading.offline.matching import EXPLAINED_CREDIT, CriterionResult, Features, match_criterion
from interviewer.grading.offline.topic import TopicModel
from interviewer.grading.reading import Answer
from interviewer.retrieval.segment import Segmenter

READINGS_KEPT = 256  # recent gradings kept (a turn reads one answer against a few rubrics)


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
        self.topics = TopicModel(segmenter, bank)
        self._compiled: dict[str, tuple[CompiledCriterion, ...]] = {}
        self._readings: OrderedDict[tuple[str, int, str, str | None], Grade] = OrderedDict()
        self._readings_lock = threading.Lock()
        self._computing = threading.Lock()
        # one turn reads the same answer against several rubrics (the question's, each follow-up's,
        # to know what it already covers): it is segmented, and judged on topic, once
        self._read = functools.lru_cache(maxsize=64)(lambda text: Answer.read(text, self.segmenter))
        self._off_topic = functools.lru_cache(maxsize=256)(
            lambda text, question_id: self.topics.off_topic(set(self._read(text).tokens), *_topic_of(question_id))
        )

    # -- rubric phrases, segmented once per criterion --------------------------------------------
    def _compile(self, key: str, criteria: tuple[Criterion, ...]) -> tuple[CompiledCriterion, ...]:
        if key not in self._compiled:
            self._compiled[key] = compile_criteria(self.segmenter, criteria)
        return self._compiled[key]

    # -- public API ------------------------------------------------------------------------------
    def grade(self, question: Question, answer: str, lang: Lang | None = None) -> Grade:
        return self._graded(question, None, answer, lang)

    def grade_followup(self, question: Question, followup: FollowUp, answer: str, lang: Lang | None = None) -> Grade:
        return self._graded(question, followup, answer, lang)

    def _graded(self, question: Question, followup: FollowUp | None, answer: str, lang: Lang | None) -> Grade:
        """A reading is computed once per rubric and answer: the live turn reads the answer to decide,
        and the model grader's second opinion, moments later, is the same reading. (Callers copy a
        grade to change it; the shared one is never modified.)"""
        rubric = question.id if followup is None else f"{question.id}/{followup.id}:{','.join(c.id for c in followup.criteria)}"
        key = (rubric, question.version, answer, lang)
        if (cached := self._cached(key)) is not None:
            return cached
        # One reading is computed at a time: it is pure CPU, so Python's interpreter lock runs one
        # at a time anyway, and a reading per thread only made the threads that write answers to
        # the store wait their turn behind all of them (ten answers at once: commits p95 42-143 ms
        # with the readings free, see the README). The same reading asked twice at once (the turn's
        # decision and the model grader's second opinion) is computed once.
        with self._computing:
            if (cached := self._cached(key)) is not None:
                return cached
            if followup is None:
                grade = self._grade_question(question, answer, lang)
            else:
                grade = self._grade_followup(question, followup, answer, lang)
        with self._readings_lock:
            self._readings[key] = grade
            while len(self._readings) > READINGS_KEPT:
                self._readings.popitem(last=False)
        return grade

    def _cached(self, key: tuple[str, int, str, str | None]) -> Grade | None:
        with self._readings_lock:
            cached = self._readings.get(key)
            if cached is not None:
                self._readings.move_to_end(key)
            return cached

    def _grade_question(self, question: Question, answer: str, lang: Lang | None = None) -> Grade:
        criteria = self._compile(question.id, tuple(question.criteria))
        asked = (question.question.zh, question.question.en)
        return self._grade(answer, criteria, question.id, question.version, question.references, lang, asked)

    def _grade_followup(self, question: Question, followup: FollowUp, answer: str, lang: Lang | None = None) -> Grade:
        # keyed by the criteria too: a model's own follow-up ("own-<n>") probes different ones per session
        criteria = self._compile(f"{question.id}/{followup.id}:{','.join(c.id for c in followup.criteria)}", tuple(followup.criteria))
        key, asked = f"{question.id}/{followup.id}", (followup.question.zh, followup.question.en)
        return self._grade(answer, criteria, key, question.version, followup.references, lang, asked)

    # -- the work --------------------------------------------------------------------------------
    def analyse(self, answer: Answer, criteria: tuple[CompiledCriterion, ...]) -> tuple[list[CriterionResult], Features]:
        results = [match_criterion(answer, c) for c in criteria]
        total_weight = sum(r.compiled.criterion.weight for r in results) or 1.0
        raw = sum(r.compiled.criterion.weight * r.fraction for r in results) / total_weight
        credit = [v for r in results for v in r.credit.values()]
        explained = sum(1 for v in credit if v >= EXPLAINED_CREDIT) / len(credit) if credit else 0.0
        misconceptions = sum(len(r.misconceptions) for r in results)
        flags = list(answer.flags)
        if caps.keyword_list(credit, explained):
            flags.append("keyword-list")
        filler = caps.filler(answer, results)
        if caps.padded(answer, filler):
            flags.append("padding")
        return results, Features(raw=raw, misconceptions=misconceptions, explained=explained, flags=flags, filler=filler)

    def _grade(
        self,
        text: str,
        criteria: tuple[CompiledCriterion, ...],
        question_id: str,
        rubric_version: int | None,
        references: list[str],
        lang: Lang | None,
        asked: tuple[str, ...] = (),
    ) -> Grade:
        answer: Answer = self._read(text)
        language: Lang = lang or ("zh" if answer.lang == "zh" else "en")
        results, features = self.analyse(answer, criteria)
        if answer.sentences and self._off_topic(text, question_id):
            features.flags.append("off-topic")
        if answer.gibberish:
            features.flags.append("gibberish")
        if caps.echoes(self.segmenter, answer, asked):
            features.flags.append("question-echo")
        score = caps.capped_score(features, self.calibration)
        graded = [criterion_grade(r, language) for r in results]
        return Grade(
            score=score,
            criteria=graded,
            feedback=feedback(score, graded, features, language),
            lang=language,
            flags=sorted(set(features.flags)),  # type: ignore[arg-type]
            passages=[PassageCitation(source=s, title=self.titles.get(s, s)) for s in references],
            question_id=question_id,
            grader=GRADER_NAME,
            grader_version=GRADER_VERSION,
            rubric_version=rubric_version,
        )


def _topic_of(key: str) -> tuple[str, bool]:
    """The question whose topic an answer must keep to, and whether it answers a follow-up of it."""
    question_id, _, followup = key.partition("/")
    return question_id, bool(followup)
