"""What an interview asks: the plan (the full loop, a round, one question, a topic, weak points)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from interviewer.content.bank import Bank
from interviewer.errors import InterviewerError

PlanKind = Literal["full", "round", "question", "topic", "weak"]


class PlanError(InterviewerError):
    pass


@dataclass(frozen=True)
class Plan:
    kind: PlanKind
    label: str
    questions: list[str]

    @property
    def timed(self) -> bool:
        """A full loop or a round runs against the round's clock and ends with its summary; drills do not."""
        return self.kind in {"full", "round"}

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "label": self.label, "questions": self.questions}


_NUMBERS = {1: "one", 2: "two", 3: "three", 4: "four"}


def make_plan(bank: Bank, kind: PlanKind = "full", value: str | int | None = None) -> Plan:
    """A plan from the bank alone (the weak-points plan also needs the history: see application.plans)."""
    if kind == "full":  # the loop's rounds; value "all": every round and every question
        every = value in {"all", "4"}
        questions = [q.id for q in bank.loop_questions(every_round=every)]
        looped = sorted({q.round for q in bank.loop_questions(every_round=every)})
        return Plan("full", f"all {_NUMBERS.get(len(looped), str(len(looped)))} rounds", questions)
    if kind == "round":
        try:
            number = int(value or 0)
        except ValueError:
            number = 0
        questions = [q.id for q in bank.round_plan(number)]
        if not questions:
            numbers = [str(r.number) for r in bank.rounds]
            raise PlanError(f"no round {value}: rounds are {', '.join(numbers[:-1])} and {numbers[-1]}")
        return Plan("round", f"round {number}", questions)
    if kind == "question":
        try:
            return Plan("question", f"drill {value}", [bank.get(str(value)).id])
        except KeyError:
            raise PlanError(f"no question '{value}' in the bank ({bank.questions[0].id}..{bank.questions[-1].id})") from None
    if kind == "topic":
        return Plan("topic", f"topic {value}", topic_questions(bank, str(value)))
    raise PlanError(f"unknown plan '{kind}': use full, round, question, topic or weak")


def topic_questions(bank: Bank, topic: str) -> list[str]:
    """The questions of one topic. A topic no question has is named with the bank's topics, so a
    typo is not taken for an empty history."""
    questions = [q.id for q in bank.questions if topic in q.topics]
    if not questions:
        topics = sorted({t for q in bank.questions for t in q.topics})
        raise PlanError(f"no question has topic '{topic}'; topics: {', '.join(topics)}")
    return questions
