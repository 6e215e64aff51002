"""The session's state, replayed from its stored turns, the bank and a clock. It never writes.

Everything a face shows (the prompt, the transcript, the scores, the round's time left) is a
query on this state; every move the candidate makes is a command of the engine
(:mod:`interviewer.interview.engine`), which stores the move and hands back the new state.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Literal, Protocol

from interviewer.content.bank import Bank
from interviewer.content.rubric import FollowUp, Lang, Question
from interviewer.interview.plan import Plan
from interviewer.interview.store import AskedBy, SessionRow, Turn

FOLLOWUP_SHARE = 0.3  # how much the answered follow-ups weigh in a question's score
GAVE_UP = frozenset({"skip", "dont-know"})

PromptKind = Literal["question", "followup", "deciding", "round-summary", "end"]


def format_clock(seconds: int | None) -> str:
    """A round's time left as m:ss ('-' once over); empty when the plan has no clock."""
    if seconds is None:
        return ""
    sign = "-" if seconds < 0 else ""
    seconds = abs(seconds)
    return f"{sign}{seconds // 60}:{seconds % 60:02d}"


@dataclass(frozen=True)
class QuestionScore:
    id: str
    round: int
    score: float | None  # None until the question is answered or skipped
    main: float | None
    followups: dict[str, float]  # follow-up id -> score of its latest answer
    skipped: bool


@dataclass(frozen=True)
class RoundScore:
    round: int
    score: float | None
    questions: list[QuestionScore]


@dataclass(frozen=True)
class Scores:
    overall: float | None
    rounds: list[RoundScore]

    def question(self, question_id: str) -> QuestionScore:
        return next(q for r in self.rounds for q in r.questions if q.id == question_id)

    @property
    def answered(self) -> int:
        """Questions answered (a skip or an "I don't know" is not an answer)."""
        return sum(1 for r in self.rounds for q in r.questions if q.score is not None and not q.skipped)


class Scored(Protocol):
    """What scoring reads of a turn: a stored :class:`Turn`, or the history's lighter ``TurnScore``."""

    @property
    def kind(self) -> str: ...
    @property
    def question_id(self) -> str | None: ...
    @property
    def followup_id(self) -> str | None: ...
    @property
    def score(self) -> float | None: ...


def score_turns(plan: Plan, bank: Bank, turns: Sequence[Scored]) -> Scores:
    """A question's score is 70% its latest answer and 30% the mean of its answered follow-ups; a
    round's the mean of its questions; the overall score the mean of every answered question."""
    by_round: dict[int, list[QuestionScore]] = {}
    for question_id in plan.questions:
        question = bank.get(question_id)
        graded = [t for t in turns if t.question_id == question_id and t.score is not None]
        main = [t for t in graded if t.followup_id is None]
        latest = {t.followup_id: t.score for t in graded if t.followup_id is not None and t.kind == "answer" and t.score is not None}
        main_score = main[-1].score if main else None
        score = main_score
        if main_score is not None and latest:
            score = round((1 - FOLLOWUP_SHARE) * main_score + FOLLOWUP_SHARE * sum(latest.values()) / len(latest), 1)
        skipped = bool(main) and main[-1].kind in GAVE_UP
        by_round.setdefault(question.round, []).append(QuestionScore(question_id, question.round, score, main_score, latest, skipped))
    rounds = []
    for number, questions in sorted(by_round.items()):
        done = [q.score for q in questions if q.score is not None]
        rounds.append(RoundScore(number, round(sum(done) / len(done), 1) if done else None, questions))
    answered = [q.score for r in rounds for q in r.questions if q.score is not None]
    return Scores(round(sum(answered) / len(answered), 1) if answered else None, rounds)


def topic_means(scores: Scores, bank: Bank) -> list[tuple[str, float]]:
    """(topic, mean score of its answered questions), weakest first."""
    by_topic: dict[str, list[float]] = {}
    for r in scores.rounds:
        for q in r.questions:
            if q.score is not None:
                for topic in bank.get(q.id).topics:
                    by_topic.setdefault(topic, []).append(q.score)
    means = [(topic, round(sum(v) / len(v), 1)) for topic, v in by_topic.items()]
    return sorted(means, key=lambda item: (item[1], item[0]))


@dataclass(frozen=True)
class Prompt:
    kind: PromptKind
    text: str
    asked_by: AskedBy | None = None  # whose words the question is in
    round: int | None = None
    round_title: str = ""
    question_id: str | None = None
    followup_id: str | None = None
    answer_format: str = "prose"
    number: int = 0  # 1-based position of the question in the plan
    total: int = 0
    time_left_s: int | None = None  # of the round's time guide; negative once over
    summary: RoundScore | None = None

    @property
    def answerable(self) -> bool:
        return self.kind in {"question", "followup"}


@dataclass(frozen=True)
class Exchange:
    """One answered turn as the candidate lived it: what was asked, in the words it was asked with."""

    turn: Turn
    asked: str

    @property
    def is_followup(self) -> bool:
        return self.turn.followup_id is not None


class SessionState:
    """One session at one moment. Build it with :meth:`replay`; it reads nothing and writes nothing."""

    def __init__(self, row: SessionRow, turns: list[Turn], bank: Bank, now: float):
        self.row = row
        self.turns = turns
        self.bank = bank
        self.now = now

    @property
    def id(self) -> str:
        return self.row.id

    @property
    def mode(self) -> Literal["interview", "practice"]:
        return self.row.mode

    @property
    def lang(self) -> Lang:
        return self.row.lang

    @property
    def plan(self) -> Plan:
        return self.row.plan

    @property
    def position(self) -> int:
        """How far the session has gone: the number of its last turn. A move names the position it
        was made at, so it cannot land on a prompt the candidate never saw."""
        return self.turns[-1].seq if self.turns else 0

    @property
    def finished(self) -> bool:
        return self.prompt.kind == "end"

    # -- queries -----------------------------------------------------------------------------------
    @cached_property
    def scores(self) -> Scores:
        return score_turns(self.plan, self.bank, self.turns)

    @cached_property
    def prompt(self) -> Prompt:
        summarised = {t.round for t in self.turns if t.kind == "summary"}
        questions = self.plan.questions
        for index, question_id in enumerate(questions):
            question = self.bank.get(question_id)
            mine = self.turns_of(question_id)
            if mine and mine[-1].decision is None:  # the interviewer is still choosing what follows
                return Prompt(
                    "deciding",
                    "",
                    round=question.round,
                    round_title=self.round_title(question.round),  # the progress line stays put while it thinks
                    question_id=question_id,
                    number=index + 1,
                    total=len(questions),
                    time_left_s=self.time_left(question.round),
                )
            step = self._open_step(question, mine)
            if step is not None:
                return self._question_prompt(question, step, index, mine)
            following = self.bank.get(questions[index + 1]).round if index + 1 < len(questions) else None
            if self.plan.timed and following != question.round and question.round not in summarised:
                return Prompt(
                    "round-summary",
                    self._round_summary_text(question.round),
                    round=question.round,
                    round_title=self.round_title(question.round),
                    number=index + 1,
                    total=len(questions),
                    summary=self._round_score(question.round),
                )
        return Prompt("end", self._end_text(), number=len(questions), total=len(questions))

    @cached_property
    def exchanges(self) -> list[Exchange]:
        """Every answered, skipped or unknown turn, in order, with the words it was asked with."""
        return [Exchange(t, t.asked or self._bank_wording(t)) for t in self.turns if t.kind != "summary" and t.question_id]

    @property
    def undecided(self) -> list[Turn]:
        """Answers whose next move is not recorded yet (being decided, or cut off by a crash)."""
        return [t for t in self.turns if t.kind != "summary" and t.decision is None]

    @property
    def grading(self) -> list[Turn]:
        """The answers whose grade is still being computed (the interview goes on meanwhile)."""
        return [t for t in self.turns if t.status == "pending"]

    def followups_of(self, question: Question) -> list[FollowUp]:
        """The bank's follow-ups of ``question`` and those the model asked of its own in this session."""
        own = [
            followup
            for t in self.turns_of(question.id)
            if t.decision is not None and t.decision.own is not None
            for followup in [t.decision.followup_of(question)]
            if followup is not None
        ]
        return [*question.followups, *own]

    def followup(self, question: Question, followup_id: str | None) -> FollowUp | None:
        return next((f for f in self.followups_of(question) if f.id == followup_id), None) if followup_id else None

    def before(self, turn: Turn) -> SessionState:
        """The session as it stood when ``turn`` was committed (its earlier turns only)."""
        return SessionState(self.row, [t for t in self.turns if t.seq < turn.seq], self.bank, self.now)

    def turns_of(self, question_id: str) -> list[Turn]:
        return [t for t in self.turns if t.question_id == question_id and t.kind != "summary"]

    def last_answered(self) -> Turn | None:
        """The last turn that answered, skipped or passed on a prompt (what a retry answers again)."""
        return next((t for t in reversed(self.turns) if t.kind != "summary"), None)

    def decision_turn(self) -> Turn | None:
        """The turn whose decision chose the follow-up now asked (where the model's wording goes)."""
        if self.prompt.kind != "followup" or self.prompt.question_id is None:
            return None
        mine = self.turns_of(self.prompt.question_id)
        return mine[-1] if mine else None

    def time_left(self, round_number: int) -> int | None:
        if not self.plan.timed:
            return None
        minutes = next(r.minutes for r in self.bank.rounds if r.number == round_number)
        spent = sum(
            max(0.0, t.answered_at - t.asked_at)
            for t in self.turns
            if t.round == round_number and t.asked_at is not None and t.kind != "summary"
        )
        current = self.row.prompt_shown_at
        if current is not None and not any(t.round == round_number and t.kind == "summary" for t in self.turns):
            spent += max(0.0, self.now - current)
        return int(minutes * 60 - spent)

    def round_title(self, number: int) -> str:
        return next(r.title.get(self.lang) for r in self.bank.rounds if r.number == number)

    # -- replay ------------------------------------------------------------------------------------
    @staticmethod
    def _open_step(question: Question, mine: list[Turn]) -> FollowUp | Question | None:
        """What is still to be asked for this question: itself, a follow-up, or nothing."""
        if not any(t.followup_id is None for t in mine):
            return question
        last = mine[-1]
        if last.kind in GAVE_UP and last.followup_id is None:
            return None
        if last.decision is not None and last.decision.action == "ask":
            followup = last.decision.followup_of(question)
            if followup is not None and not any(t.followup_id == followup.id for t in mine):
                return followup
        return None

    def _question_prompt(self, question: Question, step: FollowUp | Question, index: int, mine: list[Turn]) -> Prompt:
        asked_by: AskedBy = "bank"
        text, followup_id, answer_format = step.question.get(self.lang), None, question.answer_format
        if isinstance(step, FollowUp):  # a follow-up, in the model's words once the model has worded it
            wording = mine[-1].decision.wording if mine[-1].decision else None
            asked_by, followup_id, answer_format = ("model" if wording else "scripted"), step.id, "prose"
            text = wording or text
        return Prompt(
            "followup" if followup_id else "question",
            text,
            asked_by=asked_by,
            round=question.round,
            round_title=self.round_title(question.round),
            question_id=question.id,
            followup_id=followup_id,
            answer_format=answer_format,
            number=index + 1,
            total=len(self.plan.questions),
            time_left_s=self.time_left(question.round),
        )

    def _bank_wording(self, turn: Turn) -> str:
        assert turn.question_id is not None
        question = self.bank.get(turn.question_id)
        return (self.followup(question, turn.followup_id) or question).question.get(self.lang)

    def _round_score(self, number: int) -> RoundScore:
        return next(r for r in self.scores.rounds if r.round == number)

    def _round_summary_text(self, number: int) -> str:
        score = self._round_score(number).score
        if self.lang == "zh":
            return f"{self.round_title(number)} 结束。本轮得分 {score}/10。"
        return f"{self.round_title(number)} is over. Score for the round: {score}/10."

    def _end_text(self) -> str:
        overall = self.scores.overall
        return f"面试结束。总分 {overall}/10。" if self.lang == "zh" else f"The interview is over. Overall score: {overall}/10."
