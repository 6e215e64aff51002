"""The question bank's data model: questions, rubric criteria, follow-ups, all bilingual.

Every rubric file is validated into these models with ``extra="forbid"``, so a typo in a field
name is an error rather than a silently ignored key. Cross-references that need more than one
model (follow-up targets, knowledge references) are checked by :mod:`interviewer.content.bank`.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

Lang = Literal["zh", "en"]
Identifier = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_-]*$", min_length=1, max_length=64)]
NonEmpty = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
PassageRef = Annotated[str, StringConstraints(pattern=r"^[^#\s]+\.md#[a-z0-9][a-z0-9-]*$")]

WEIGHT_TOLERANCE = 0.01
_HAN = re.compile(r"[\u4e00-\u9fff]")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Text(Strict):
    """The same text in Chinese and in English."""

    zh: NonEmpty
    en: NonEmpty

    @field_validator("zh")
    @classmethod
    def _zh_is_chinese(cls, value: str) -> str:
        if not _HAN.search(value):
            raise ValueError("the Chinese text contains no Chinese characters")
        return value

    def get(self, lang: Lang) -> str:
        return self.zh if lang == "zh" else self.en


class Level(Strict):
    """What an answer at one score of a criterion's scale looks like."""

    score: int = Field(ge=0, le=5, description="A point on the criterion's scale, 0 = nothing of it.")
    zh: NonEmpty
    en: NonEmpty

    def get(self, lang: Lang) -> str:
        return self.zh if lang == "zh" else self.en


class Concept(Strict):
    """A piece of knowledge whose presence in an answer evidences a criterion."""

    id: Identifier
    terms: list[NonEmpty] = Field(
        min_length=1, description="Names, synonyms and abbreviations in both languages (e.g. ZeRO-3, FSDP, 参数切分)."
    )
    paraphrases: list[NonEmpty] = Field(default_factory=list, description="Plain-word ways a candidate may say it without the jargon.")


class Misconception(Strict):
    """A precise wrong claim that costs points, with its correction."""

    id: Identifier
    claim: Text = Field(description="The wrong statement, stated precisely (e.g. 'ZeRO-1 shards the parameters').")
    correction: Text = Field(description="What is true instead, and why.")
    patterns: list[NonEmpty] = Field(default_factory=list, description="Phrasings by which a candidate typically makes this claim.")


class Criterion(Strict):
    """One weighted dimension of a rubric, with score anchors, evidence concepts and misconceptions."""

    id: Identifier
    weight: float = Field(gt=0, le=1)
    description: Text
    levels: list[Level] = Field(min_length=3, max_length=6)
    concepts: list[Concept] = Field(min_length=1)
    misconceptions: list[Misconception] = Field(default_factory=list)

    @property
    def max_score(self) -> int:
        return self.levels[-1].score

    @field_validator("levels")
    @classmethod
    def _levels_form_a_scale(cls, levels: list[Level]) -> list[Level]:
        scores = [level.score for level in levels]
        if scores != list(range(len(scores))):
            raise ValueError(f"levels must be scores 0..{len(scores) - 1} in order, got {scores}")
        return levels


def _check_weights(criteria: list[Criterion]) -> None:
    total = sum(c.weight for c in criteria)
    if abs(total - 1.0) > WEIGHT_TOLERANCE:
        raise ValueError(f"criterion weights add up to {total:.3f}, not 1.0")
    ids = [c.id for c in criteria]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ValueError(f"duplicate criterion ids: {', '.join(duplicates)}")


class FollowUp(Strict):
    """A follow-up question aimed at criteria of its parent question, graded by its own criteria."""

    id: Identifier
    targets: list[Identifier] = Field(min_length=1, description="Parent criterion ids this follow-up probes.")
    from_seed: bool = Field(default=False, description="True when the source write-up records this follow-up.")
    question: Text
    criteria: list[Criterion] = Field(min_length=2, max_length=4)
    references: list[PassageRef] = Field(min_length=1)
    expects: list[NonEmpty] = Field(
        default_factory=list,
        description="What a good answer contains, beyond the criteria (the model's own follow-ups carry it; the bank's need none).",
    )

    @field_validator("criteria")
    @classmethod
    def _weights(cls, criteria: list[Criterion]) -> list[Criterion]:
        _check_weights(criteria)
        return criteria


class Question(Strict):
    """One interview question: the rubric, the follow-ups and the knowledge that backs it."""

    id: Annotated[str, StringConstraints(pattern=r"^q\d{2}$")]
    version: int = Field(ge=1, description="Bumped whenever the rubric changes; stored with every grade.")
    round: Literal[1, 2, 3, 4]
    source: Literal["seed", "beyond"] = Field(
        default="seed",
        description="seed: asked in the source interview, played by the default loop; beyond: what real interviews ask "
        "past it, played by drills, topics and the extended loop.",
    )
    topics: list[Identifier] = Field(min_length=1)
    time_guide_min: int = Field(gt=0, le=60, description="Minutes a real interviewer would give this question.")
    answer_format: Literal["prose", "code"] = "prose"
    question: Text
    reference_answer: Text = Field(description="What a strong answer covers, as a senior engineer would say it.")
    criteria: list[Criterion] = Field(min_length=4, max_length=7)
    followups: list[FollowUp] = Field(min_length=2, max_length=4)
    references: list[PassageRef] = Field(min_length=1)

    @field_validator("criteria")
    @classmethod
    def _weights(cls, criteria: list[Criterion]) -> list[Criterion]:
        _check_weights(criteria)
        return criteria

    @field_validator("followups")
    @classmethod
    def _unique_followups(cls, followups: list[FollowUp]) -> list[FollowUp]:
        ids = [f.id for f in followups]
        if len(set(ids)) != len(ids):
            raise ValueError("follow-up ids repeat")
        return followups

    def criterion(self, criterion_id: str) -> Criterion:
        for criterion in self.criteria:
            if criterion.id == criterion_id:
                return criterion
        raise KeyError(criterion_id)

    def all_references(self) -> list[str]:
        refs = list(self.references)
        for followup in self.followups:
            refs.extend(followup.references)
        return list(dict.fromkeys(refs))


class Round(Strict):
    number: Literal[1, 2, 3, 4]
    title: Text
    minutes: int = Field(gt=0)
    interviewer: Text = Field(description="Who runs the round, as the candidate meets them.")
    in_full_loop: bool = Field(
        default=True, description="Part of the default full interview; False: played on its own, or added to the loop on request."
    )


class RoundsFile(Strict):
    rounds: list[Round] = Field(min_length=3, max_length=4)
