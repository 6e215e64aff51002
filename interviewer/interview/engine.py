"""The engine: it carries out the candidate's moves on a session and hands back the new state.

Each move is two transactions at most: the answer first (durable before grading starts), then
everything that follows from its grade (the grade, the follow-up decision, the review schedule,
the round's clock, the end of the session) together, so a crash between them loses nothing but
the grading, which is done again when the session is next opened. One move reads the session's
turns twice: before (to know what was asked) and after (the new state).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from interviewer.content.bank import Bank
from interviewer.content.rubric import FollowUp, Lang, Question
from interviewer.errors import InterviewerError
from interviewer.grading.grade import Grade, RubricGrader
from interviewer.interview.followups import Decision, choose
from interviewer.interview.plan import Plan
from interviewer.interview.schedule import quality
from interviewer.interview.state import GAVE_UP, Prompt, SessionState
from interviewer.interview.store import GradeRecord, StaleMove, Store, Turn, TurnKind

TIME_UP = {"zh": "本轮时间已到，进入下一题。", "en": "Time is up for this round; moving on."}


class SessionError(InterviewerError):
    pass


@dataclass(frozen=True)
class Outcome:
    """What one move led to."""

    turn_id: int
    grade: Grade
    decision: Decision
    state: SessionState  # after the move
    notices: list[str] = field(default_factory=list)

    @property
    def next(self) -> Prompt:
        return self.state.prompt

    @property
    def show_feedback(self) -> bool:
        """Practice mode shows the grade at once; an interview keeps it for the round's end."""
        return self.state.mode == "practice"


class Engine:
    def __init__(self, store: Store, bank: Bank, grader: RubricGrader, clock: Callable[[], float] = time.time):
        self.store = store
        self.bank = bank
        self.grader = grader
        self.clock = clock

    # -- reading -----------------------------------------------------------------------------------
    def state(self, session_id: str) -> SessionState:
        """The session as it stands (nothing is written)."""
        row, turns = self.store.session_with_turns(session_id)
        return SessionState(row, turns, self.bank, self.clock())

    # -- life cycle --------------------------------------------------------------------------------
    def start(self, plan: Plan, mode: str = "interview", lang: Lang = "zh", max_followups: int = 2) -> SessionState:
        if mode not in {"interview", "practice"}:
            raise SessionError(f"unknown mode '{mode}': use interview or practice")
        row = self.store.create_session(mode, lang, plan, self.grader.name, max_followups, self.clock())
        return SessionState(row, [], self.bank, self.clock())

    def open(self, session_id: str) -> SessionState:
        """The session, with any answer whose grading was cut off (a crash, a kill) graded now."""
        state = self.state(session_id)
        pending = [t for t in state.turns if t.status == "pending"]
        if not pending:
            return state
        for turn in pending:
            self._grade_and_record(state, turn)
        return self.state(session_id)

    def resume(self, session_id: str) -> SessionState:
        """Come back to a session: the time away does not count against the round."""
        self.open(session_id)
        self.store.mark_prompt_shown(session_id, self.clock())
        return self.state(session_id)

    # -- the candidate's moves ---------------------------------------------------------------------
    # Each move may name the position (``SessionState.position``) of the view it was made on; a
    # move made on a view that is no longer current is refused with StaleMove and records nothing.
    def submit(self, session_id: str, answer: str, at: int | None = None) -> Outcome:
        return self._answer(self._current(session_id, at), "answer", answer)

    def skip(self, session_id: str, at: int | None = None) -> Outcome:
        return self._answer(self._current(session_id, at), "skip", None)

    def dont_know(self, session_id: str, at: int | None = None) -> Outcome:
        return self._answer(self._current(session_id, at), "dont-know", None)

    def retry(self, session_id: str, answer: str, at: int | None = None) -> Outcome:
        """Practice mode: answer the last answered prompt again, as a new attempt."""
        state = self._current(session_id, at)
        if state.mode != "practice":
            raise SessionError("retries are for practice mode; in an interview you answer once")
        last = state.last_answered()
        if last is None:
            raise SessionError("there is no answer to retry yet")
        attempt = 1 + max(t.attempt for t in state.turns if (t.question_id, t.followup_id) == (last.question_id, last.followup_id))
        asked = next(e.asked for e in reversed(state.exchanges) if e.turn.id == last.id)
        turn = self.store.add_turn(
            state.id, "answer", last.question_id, last.followup_id, last.round, answer, asked, last.asked_by,
            state.row.prompt_shown_at, self.clock(), attempt=attempt, after_seq=state.position,
        )  # fmt: skip
        return self._after(state, turn)

    def proceed(self, session_id: str, at: int | None = None) -> SessionState:
        """Continue after a round's summary."""
        state = self._current(session_id, at)
        prompt = state.prompt
        if prompt.kind != "round-summary":
            raise SessionError("there is no round summary to continue from")
        last_round = prompt.number >= len(state.plan.questions)
        self.store.add_turn(
            state.id, "summary", None, None, prompt.round, None, None, None, state.row.prompt_shown_at, self.clock(),
            status="none", finished=last_round, after_seq=state.position,
        )  # fmt: skip
        return self.state(session_id)

    def record_wording(self, state: SessionState, wording: str) -> None:
        """How the model worded the follow-up the engine chose: the choice (which follow-up, aimed
        at what, within the cap) stays the engine's; only the words are the model's."""
        turn = state.decision_turn()
        if turn is not None and wording.strip():
            self.store.record_wording(turn.id, wording.strip())

    def _current(self, session_id: str, at: int | None) -> SessionState:
        state = self.state(session_id)
        if at is not None and at != state.position:
            raise StaleMove()
        return state

    # -- grading and what follows ------------------------------------------------------------------
    def _answer(self, state: SessionState, kind: TurnKind, answer: str | None) -> Outcome:
        prompt = state.prompt
        if prompt.kind == "round-summary":
            raise SessionError("the round is over: continue to the next round first")
        if prompt.kind == "end":
            raise SessionError("this interview is over")
        if prompt.kind == "grading":
            raise SessionError("the last answer is still being graded: wait a moment")
        turn = self.store.add_turn(
            state.id, kind, prompt.question_id, prompt.followup_id, prompt.round, answer, prompt.text, prompt.asked_by,
            state.row.prompt_shown_at, self.clock(), after_seq=state.position,
        )  # fmt: skip
        return self._after(state, turn)

    def _after(self, before: SessionState, turn: Turn) -> Outcome:
        grade, decision, notices = self._grade_and_record(before, turn)
        return Outcome(turn.id, grade, decision, self.state(before.id), notices)

    def _grade_and_record(self, state: SessionState, turn: Turn) -> tuple[Grade, Decision, list[str]]:
        assert turn.question_id is not None
        question = self.bank.get(turn.question_id)
        followup = next((f for f in question.followups if f.id == turn.followup_id), None)
        started = time.perf_counter()
        if turn.kind == "answer":
            text = turn.answer or ""
            grade = self.grader.grade(question, text) if followup is None else self.grader.grade_followup(question, followup, text)
        else:
            grade = self._passed(question, followup, turn.kind, state.lang)
        grading_ms = (time.perf_counter() - started) * 1000
        earlier = [t for t in state.turns if t.seq < turn.seq]
        answered = SessionState(state.row, [*earlier, turn], self.bank, self.clock())
        decision = self._decide(answered, question, grade, turn)
        notices = [TIME_UP[state.lang]] if decision.action == "move-on" and "time" in decision.reason else []
        after = SessionState(state.row, [*earlier, _graded(turn, grade, decision)], self.bank, answered.now)
        self.store.record_grade(
            GradeRecord(
                turn_id=turn.id,
                grade=grade,
                grading_ms=grading_ms,
                decision=decision,
                reviews=_reviews(question, grade, turn),
                now=self.clock(),
                finished=after.finished,
            )
        )
        return grade, decision, notices

    @staticmethod
    def _decide(answered: SessionState, question: Question, grade: Grade, turn: Turn) -> Decision:
        """What follows ``turn``, given the session up to and including it."""
        if turn.kind in GAVE_UP:
            return Decision(action="move-on", reason="the candidate passed")
        mine = [t for t in answered.turns_of(question.id) if t.id != turn.id]
        asked = list(dict.fromkeys(t.followup_id for t in [*mine, turn] if t.followup_id))
        left = answered.time_left(question.round)
        if left is not None and left <= 0:
            return Decision(action="move-on", reason="the round's time is up")
        base = grade
        if turn.followup_id is not None:  # a follow-up is chosen against the main answer's gaps
            main = [t for t in mine if t.followup_id is None and t.grade is not None]
            if main and main[-1].grade is not None:
                base = main[-1].grade
        return choose(question, base, asked, answered.row.max_followups)

    @staticmethod
    def _passed(question: Question, followup: FollowUp | None, kind: str, lang: Lang) -> Grade:
        zh = lang == "zh"
        text = ("跳过了这道题。" if zh else "Skipped.") if kind == "skip" else ("记为不会。" if zh else "Noted as not known.")
        return Grade(
            score=0.0,
            feedback=text,
            lang=lang,
            flags=["skipped"] if kind == "skip" else ["no-knowledge"],
            question_id=question.id if followup is None else f"{question.id}/{followup.id}",
            grader="session",
            grader_version="1",
            rubric_version=question.version,
        )


def _graded(turn: Turn, grade: Grade, decision: Decision) -> Turn:
    return replace(turn, status="graded", grade=grade, decision=decision)


def _reviews(question: Question, grade: Grade, turn: Turn) -> list[tuple[str, str, int]]:
    """Each graded criterion's SM-2 quality; a skip or an "I don't know" of a question fails all of its criteria."""
    prefix = question.id if turn.followup_id is None else f"{question.id}/{turn.followup_id}"
    if grade.criteria:
        return [(f"{prefix}/{c.id}", question.id, quality(c.score, c.max_score)) for c in grade.criteria]
    if turn.kind in GAVE_UP and turn.followup_id is None:
        return [(f"{prefix}/{c.id}", question.id, 0) for c in question.criteria]
    return []
