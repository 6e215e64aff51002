"""The LLM grader: the model scores each rubric criterion with retrieved evidence; the code keeps
it honest.

The prompt (its text is in :mod:`interviewer.prompts`) carries the question, the rubric (criteria,
score anchors, misconceptions), the knowledge passages that back the question, and the answer,
fenced as data: instructions inside the answer are not instructions. What comes back is checked: scores are clamped to each
criterion's scale, criteria the model invents are ignored and missing ones taken from the
offline grade, evidence quotes that are not in the answer are dropped and counted. The overall
score is computed here from the criterion scores and weights, mapped onto the experts' scale by the
calibration fitted on a real model's recorded replies (``benchmarks/recorded_model.py fit``: read
as they are, a model's levels are harsh in the middle), never taken from the model. The
offline grade rides along as a second opinion; a large gap is flagged. Sentences addressed to the
grader are not sent at all. When the model fails for
good (after bounded retries), the offline grade is returned, flagged, with a one-line notice.
"""

from __future__ import annotations

import concurrent.futures
import re
import time
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict, Field

from interviewer import prompts
from interviewer.content.rubric import Criterion, FollowUp, Lang, Question
from interviewer.grading.calibration import Calibration, LevelFeatures
from interviewer.grading.grade import NOTHING_TO_GRADE, CriterionGrade, Grade, MisconceptionFound
from interviewer.grading.offline import OfflineGrader
from interviewer.grading.reading import for_the_model
from interviewer.pools import start_all
from interviewer.provider import LLMError, Message, Reply, StructuredCaller, describe_endpoint
from interviewer.settings import Settings

GRADER_NAME = "llm"
GRADER_VERSION = "1"
_SPACE = re.compile(r"\s+")


class ModelMisconception(BaseModel):
    model_config = ConfigDict(extra="forbid")
    claim: str = Field(description="The wrong claim the answer makes, in the answer's language.")
    correction: str = Field(description="What is true instead.")
    evidence: str = Field(description="The exact words of the answer that make the claim.")


class ModelCriterion(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str = Field(description="The criterion id from the rubric.")
    score: int = Field(description="An integer score on the criterion's scale.")
    evidence: list[str] = Field(description="Exact quotes from the answer that earn the score.")
    missing: list[str] = Field(description="What the answer lacks for full marks, short.")
    misconceptions: list[ModelMisconception] = Field(description="Wrong claims in the answer about this criterion.")


class ModelGrade(BaseModel):
    model_config = ConfigDict(extra="forbid")
    criteria: list[ModelCriterion]
    feedback: str = Field(description="Two to four sentences of specific feedback, in the answer's language.")


def _normalise(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


class LLMGrader:
    name = GRADER_NAME
    version = GRADER_VERSION

    def __init__(
        self,
        settings: Settings,
        offline: OfflineGrader,
        passages: dict[str, str],
        caller: StructuredCaller | None = None,
        sleep: Callable[[float], None] = time.sleep,
        calibration: Calibration | None = None,
    ):
        self.settings = settings
        self.offline = offline
        self.passages = passages
        self.caller = caller or StructuredCaller(settings, sleep=sleep)
        # the criterion levels' weighted share of full marks, mapped onto the experts' 0-10 (fitted
        # by `benchmarks/recorded_model.py fit` on recorded replies; the identity ×10 until then)
        self.calibration = calibration or Calibration.load(section="model")
        self.model_name = describe_endpoint(settings)
        self._calls = settings.llm.grading_workers * settings.llm.samples
        self._pool = concurrent.futures.ThreadPoolExecutor(self._calls, "model-grade")

    def start(self) -> None:
        """Start the call pool's threads now (a server, before candidates arrive: see ``pools``)."""
        start_all(self._pool, self._calls)

    def grade(self, question: Question, answer: str, lang: Lang | None = None) -> Grade:
        offline = self.offline.grade(question, answer, lang)
        return self._grade(question.question.get(offline.lang), question.criteria, question.references, answer, offline)

    def grade_followup(self, question: Question, followup: FollowUp, answer: str, lang: Lang | None = None) -> Grade:
        offline = self.offline.grade_followup(question, followup, answer, lang)
        asked = followup.question.get(offline.lang)
        if followup.expects:  # a model's own follow-up: what its good answer contains, as the model said when asking
            asked += "\n" + prompts.EXPECTS_LINE + "\n" + "\n".join(f"- {point}" for point in followup.expects)
        return self._grade(asked, followup.criteria, followup.references, answer, offline)

    def messages(self, question_text: str, criteria: list[Criterion], references: list[str], answer: str, lang: Lang) -> list[Message]:
        """The prompt (see :mod:`interviewer.prompts`): the rubric and schema, then the question,
        its passages and the fenced answer."""
        return [
            Message("system", prompts.grader_system(ModelGrade.model_json_schema())),
            Message("user", prompts.grader_user(question_text, criteria, references, self.passages, answer, lang)),
        ]

    def without_steering(self, answer: str) -> str:
        """The answer as the model is shown it: cut where the offline reader stops reading, less
        the sentences addressed to the grader (the reader set them aside too)."""
        return for_the_model(answer)

    def _grade(self, question_text: str, criteria: list[Criterion], references: list[str], answer: str, offline: Grade) -> Grade:
        if NOTHING_TO_GRADE & set(offline.flags):
            return offline  # nothing for a model to judge
        messages = self.messages(question_text, criteria, references, self.without_steering(answer), offline.lang)
        samples: list[tuple[float, list[CriterionGrade], str, int]] = []
        usage: dict[str, int] = {}
        latency = 0.0
        deadline = time.monotonic() + self.settings.llm.grade_budget_s
        try:
            for _ in range(self.settings.llm.samples):
                reply = self._ask_within(messages, deadline)
                latency += reply.latency_ms
                for key, value in reply.usage.items():
                    usage[key] = usage.get(key, 0) + value
                samples.append(self._check(reply.parsed, criteria, answer, offline))
        except LLMError as exc:
            notice = (
                f"模型评分失败（{exc}），本题改用离线评分。"
                if offline.lang == "zh"
                else f"The model could not grade this answer ({exc}); the offline grader did."
            )
            return offline.model_copy(
                update={
                    "flags": sorted({*offline.flags, "llm-fallback"}),
                    "feedback": notice + "\n" + offline.feedback,
                    "latency_ms": latency,
                }
            )
        scores = [s[0] for s in samples]
        middle = sorted(range(len(samples)), key=lambda i: scores[i])[len(samples) // 2]
        score, graded, feedback, dropped = samples[middle]
        return offline.model_copy(
            update={
                "score": score,
                "criteria": graded,
                "feedback": feedback or offline.feedback,
                "grader": GRADER_NAME,
                "grader_version": GRADER_VERSION,
                "model": self.model_name,
                "second_opinion": offline.score,
                "disagreement": abs(score - offline.score) > self.settings.llm.disagreement,
                "spread": round(max(scores) - min(scores), 1) if len(scores) > 1 else None,
                "dropped_quotes": dropped,
                "usage": usage or None,
                "latency_ms": round(latency, 1),
            }
        )

    def _ask_within(self, messages: list[Message], deadline: float) -> Reply:
        """One structured call, retries included, given up at ``deadline`` (the grade's budget): a
        model that never answers costs its candidate a bounded wait, then the offline grade stands.
        The abandoned call finishes on its pool thread, bounded by the client's own timeout."""
        future = self._pool.submit(self.caller.ask, ModelGrade, messages)
        try:
            return future.result(timeout=max(0.0, deadline - time.monotonic()))
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise LLMError(f"no grade within the budget of {self.settings.llm.grade_budget_s:.0f} s", retryable=True) from None

    def _check(
        self, parsed: ModelGrade, criteria: list[Criterion], answer: str, offline: Grade
    ) -> tuple[float, list[CriterionGrade], str, int]:
        """Keep the model to the rubric and to the answer's own words."""
        by_id = {c.id: c for c in parsed.criteria}
        fallback = {c.id: c for c in offline.criteria}
        haystack = _normalise(answer)
        dropped = 0
        graded: list[CriterionGrade] = []
        lang = offline.lang
        for criterion in criteria:
            got = by_id.get(criterion.id)
            if got is None:  # the model skipped it: keep the offline judgement for this one
                graded.append(fallback[criterion.id])
                continue
            evidence = [q for q in got.evidence if q.strip() and _normalise(q) in haystack]
            dropped += len([q for q in got.evidence if q.strip()]) - len(evidence)
            found = []
            for m in got.misconceptions:
                if m.evidence.strip() and _normalise(m.evidence) in haystack:
                    found.append(MisconceptionFound(id="model", claim=m.claim, correction=m.correction, evidence=m.evidence))
                else:
                    dropped += 1
            score = min(criterion.max_score, max(0, int(got.score)))
            if score > 0 and not evidence:
                score = min(score, 1)  # a score with nothing in the answer to show for it
            graded.append(
                CriterionGrade(
                    id=criterion.id,
                    description=criterion.description.get(lang),
                    weight=criterion.weight,
                    score=score,
                    max_score=criterion.max_score,
                    level=criterion.levels[score].get(lang),
                    evidence=evidence,
                    found=[],
                    missing=got.missing[:5],
                    misconceptions=found,
                )
            )
        overall = self.calibration.score(LevelFeatures.of(graded, offline.flags))
        return overall, graded, parsed.feedback.strip(), dropped
