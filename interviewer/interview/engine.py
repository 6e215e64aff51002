"""The engine: it carries out the candidate's moves on a session and hands back the new state.

A move is up to three transactions, and the conversation never waits for a grade:

1. the answer, committed before anything else happens to it (:meth:`Engine.commit`);
2. what follows it (:meth:`Engine.decide`): a follow-up or the next prompt, chosen by the engine
   from the offline reading of the answer (milliseconds) or by the live interviewer within the
   engine's rules (:meth:`Engine.options`); the next prompt's clock starts here;
3. the grade and the review schedule (:meth:`Engine.grade`), by the session's grader, once and only
   once per answer, whenever it is ready (a background worker with a model; at once offline, where
   2 and 3 are one transaction).

A crash after 1 loses nothing: opening the session decides what follows (offline), and a pending
grade is graded by the next worker that finds it (:meth:`Store.pending`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Literal

from interviewer.content.bank import Bank
from interviewer.content.rubric import FollowUp, Lang, Question
from interviewer.errors import InterviewerError
from interviewer.grading.grade import Grade, RubricGrader
from interviewer.interview.followups import Decision, OwnFollowUp, already_answered, choose, eligible, evidenced, limit
from interviewer.interview.plan import Plan
from interviewer.interview.schedule import quality
from interviewer.interview.state import GAVE_UP, Prompt, SessionState
from interviewer.interview.store import LOCAL, GradeRecord, StaleMove, Store, Turn, TurnKind

TIME_UP = {"zh": "本轮时间已到，进入下一题。", "en": "Time is up for this round; moving on."}


class SessionError(InterviewerError):
    pass


@dataclass(frozen=True)
class Committed:
    """An answer just committed, with the session as it stood when it was given."""

    before: SessionState
    turn: Turn

    @property
    def deciding(self) -> SessionState:
        """The session with the answer just committed: the interviewer has yet to speak."""
        before = self.before
        return SessionState(before.row, [*before.turns, self.turn], before.bank, before.now)


@dataclass(frozen=True)
class Options:
    """What may follow an answer. The rules are the engine's: the cap, the round's clock, moving on
    after a pass or an empty answer (``imposed``), never a follow-up the answer already covered."""

    question: Question
    answered: FollowUp | None  # the follow-up the turn answered; None: the question itself
    said: str  # everything the candidate has said on this question so far
    base: Grade  # the offline reading of ``said`` against the question's rubric
    open_targets: list[str]  # criteria the answer does not evidence: an own follow-up aims at these
    own_id: str  # the id an own follow-up of this turn gets
    fallback: Decision  # the engine's own choice
    imposed: bool  # the rules decide; nobody else is asked
    eligible: Callable[[], list[FollowUp]] = list  # the bank's follow-ups that may be asked (read when needed)

    @cached_property
    def allowed(self) -> list[FollowUp]:
        """The bank's follow-ups that may be asked: only the live interviewer needs them all, so
        they are read against the answer when first asked for (the offline path reads fewer)."""
        return [] if self.imposed else self.eligible()

    def accept(self, move: Decision | None) -> Decision:
        """``move`` (the live interviewer's) when it keeps to the options, else the engine's choice."""
        if move is None or self.imposed:
            return self.fallback
        covered, answered = self.fallback.covered, self.fallback.answered  # what the engine read, kept with any move
        if move.action == "move-on":
            return Decision(action="move-on", reason=move.reason, by="model", covered=covered, answered=answered)
        wording = (move.wording or "").strip()
        if move.own is not None:
            targets = [t for t in dict.fromkeys(move.own.targets) if t in self.open_targets]
            if not targets or not wording:
                return self.fallback
            own = OwnFollowUp(id=self.own_id, targets=targets, expects=[e.strip() for e in move.own.expects if e.strip()][:6])
            return Decision(
                action="ask", reason=move.reason, followup=own.id, aims_at=targets, wording=wording, own=own, by="model",
                covered=covered, answered=answered,
            )  # fmt: skip
        chosen = next((f for f in self.allowed if f.id == move.followup), None)
        if chosen is None:
            return self.fallback
        return Decision(
            action="ask", reason=move.reason, followup=chosen.id, aims_at=list(chosen.targets), wording=wording or None, by="model",
            covered=covered, answered=answered,
        )  # fmt: skip


@dataclass(frozen=True)
class Outcome:
    """What one move led to."""

    turn_id: int
    grade: Grade | None  # None while the session's grader is still grading the answer
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
    def __init__(
        self,
        store: Store,
        bank: Bank,
        grader: RubricGrader,
        clock: Callable[[], float] = time.time,
        offline: RubricGrader | None = None,
    ):
        self.store = store
        self.bank = bank
        self.grader = grader
        self.clock = clock
        # the fast reading every decision is made on: the grader itself offline, else its offline twin
        self.offline: RubricGrader = offline if offline is not None else getattr(grader, "offline", grader)

    @property
    def grades_at_once(self) -> bool:
        """True when the session's grader is the offline one: the grade is there as soon as the decision."""
        return self.grader is self.offline

    # -- reading -----------------------------------------------------------------------------------
    def state(self, session_id: str) -> SessionState:
        """The session as it stands (nothing is written)."""
        row, turns = self.store.session_with_turns(session_id)
        return SessionState(row, turns, self.bank, self.clock())

    # -- life cycle --------------------------------------------------------------------------------
    def start(
        self,
        plan: Plan,
        mode: str = "interview",
        lang: Lang = "zh",
        max_followups: int = 2,
        owner: str = LOCAL,
        endpoint: Literal["server", "own"] = "server",
    ) -> SessionState:
        """A new session of ``owner``'s, graded with the server's model or the owner's own (``endpoint``)."""
        if mode not in {"interview", "practice"}:
            raise SessionError(f"unknown mode '{mode}': use interview or practice")
        row = self.store.create_session(mode, lang, plan, self.grader.name, max_followups, self.clock(), owner, endpoint)
        return SessionState(row, [], self.bank, self.clock())

    def open(self, session_id: str, grade: bool = True, leave: Collection[int] = ()) -> SessionState:
        """The session, with an answer whose next move was cut off (a crash, a kill, a dropped
        stream) decided now, offline; the turns in ``leave`` are being decided by their live turn
        and are left to it. With ``grade``, every pending grade is computed here too (a face
        without a background worker: the terminal, a script)."""
        state = self.state(session_id)
        undecided = [t for t in state.undecided if t.id not in leave]
        for turn in undecided:
            before = state.before(turn)
            self.decide(Committed(before, turn))
        if grade:
            for turn in self.state(session_id).grading:
                self.grade(turn.id)
        return self.state(session_id) if undecided or grade else state

    def resume(self, session_id: str, grade: bool = True, leave: Collection[int] = ()) -> SessionState:
        """Come back to a session: the time away does not count against the round."""
        self.open(session_id, grade=grade, leave=leave)
        self.store.mark_prompt_shown(session_id, self.clock())
        return self.state(session_id)

    # -- the candidate's moves ---------------------------------------------------------------------
    # Each move may name the position (``SessionState.position``) of the view it was made on; a
    # move made on a view that is no longer current is refused with StaleMove and records nothing.
    # ``submit``, ``skip``, ``dont_know`` and ``retry`` are the whole move with the engine deciding
    # (and grading, when that is synchronous); a live face calls commit, options and decide itself.
    def submit(self, session_id: str, answer: str, at: int | None = None) -> Outcome:
        return self._whole(self.commit(session_id, "answer", answer, at=at))

    def skip(self, session_id: str, at: int | None = None) -> Outcome:
        return self._whole(self.commit(session_id, "skip", None, at=at))

    def dont_know(self, session_id: str, at: int | None = None) -> Outcome:
        return self._whole(self.commit(session_id, "dont-know", None, at=at))

    def retry(self, session_id: str, answer: str, at: int | None = None) -> Outcome:
        return self._whole(self.commit_retry(session_id, answer, at=at))

    def _whole(self, committed: Committed) -> Outcome:
        """Decide, then grade here and now (a script, a test, a batch: nobody is waiting to talk)."""
        outcome = self.decide(committed)
        if outcome.grade is not None:
            return outcome
        grade = self.grade(outcome.turn_id)
        return replace(outcome, grade=grade, state=self.state(committed.before.id))

    def commit(self, session_id: str, kind: TurnKind, answer: str | None, at: int | None = None) -> Committed:
        """Store the answer (or the pass) to the current prompt; nothing else happens to it yet."""
        state = self._current(session_id, at)
        prompt = state.prompt
        if prompt.kind == "round-summary":
            raise SessionError("the round is over: continue to the next round first")
        if prompt.kind == "end":
            raise SessionError("this interview is over")
        if prompt.kind == "deciding":
            raise SessionError("the interviewer is still answering your last answer: wait a moment")
        turn = self.store.add_turn(
            state.id, kind, prompt.question_id, prompt.followup_id, prompt.round, answer, prompt.text, prompt.asked_by,
            state.row.prompt_shown_at, self.clock(), after_seq=state.position,
        )  # fmt: skip
        return Committed(state, turn)

    def commit_retry(self, session_id: str, answer: str, at: int | None = None) -> Committed:
        """Practice mode: answer the last answered prompt again, as a new attempt."""
        state = self._current(session_id, at)
        if state.mode != "practice":
            raise SessionError("retries are for practice mode; in an interview you answer once")
        if state.prompt.kind == "deciding":
            raise SessionError("the interviewer is still answering your last answer: wait a moment")
        last = state.last_answered()
        if last is None:
            raise SessionError("there is no answer to retry yet")
        attempt = 1 + max(t.attempt for t in state.turns if (t.question_id, t.followup_id) == (last.question_id, last.followup_id))
        asked = next(e.asked for e in reversed(state.exchanges) if e.turn.id == last.id)
        turn = self.store.add_turn(
            state.id, "answer", last.question_id, last.followup_id, last.round, answer, asked, last.asked_by,
            state.row.prompt_shown_at, self.clock(), attempt=attempt, after_seq=state.position,
        )  # fmt: skip
        return Committed(state, turn)

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
        """How the model worded the follow-up the engine chose (the choice stays the engine's)."""
        turn = state.decision_turn()
        if turn is not None and wording.strip():
            self.store.record_wording(turn.id, wording.strip())

    def _current(self, session_id: str, at: int | None) -> SessionState:
        state = self.state(session_id)
        if at is not None and at != state.position:
            raise StaleMove()
        return state

    # -- what follows an answer --------------------------------------------------------------------
    def options(self, committed: Committed) -> Options:
        """What may follow the committed answer, read offline in milliseconds."""
        before, turn = committed.before, committed.turn
        assert turn.question_id is not None
        question = self.bank.get(turn.question_id)
        mine = [*before.turns_of(question.id), turn]
        texts = [t.answer for t in mine if t.kind == "answer" and t.answer]
        said = "\n\n".join(texts)
        base = self.offline.grade(question, said)
        asked = list(dict.fromkeys(t.followup_id for t in mine if t.followup_id))
        own_id = f"own-{turn.seq}"
        answered = before.followup(question, turn.followup_id)
        imposed = self._imposed(before, question, base, turn, asked)
        if imposed is not None:
            return Options(question, answered, said, base, [], own_id, imposed, imposed=True)
        # what the candidate has covered on this question: in all that was said, or at an earlier decision
        # (a later answer cannot take back what an earlier one covered)
        earlier = [t.decision for t in before.turns_of(question.id) if t.decision is not None]
        covered = evidenced(base).union(*(d.covered for d in earlier))
        spoken = {f: True for d in earlier for f in d.answered}

        def spoken_to(followup: FollowUp) -> bool:  # what was said already answers the follow-up (read once)
            if followup.id not in spoken:
                spoken[followup.id] = already_answered(self.offline.grade_followup(question, followup, said))
            return spoken[followup.id]

        chosen = choose(question, base, asked, before.row.max_followups, spoken_to, covered)
        fallback = chosen.model_copy(update={"covered": sorted(covered), "answered": sorted(f for f, yes in spoken.items() if yes)})
        probed = {target for f in before.followups_of(question) if f.id in asked for target in f.targets}
        open_targets = [c.id for c in question.criteria if c.id not in covered and c.id not in probed]
        return Options(
            question, answered, said, base, open_targets, own_id, fallback, imposed=False,
            eligible=lambda: eligible(question, base, asked, spoken_to, covered),
        )  # fmt: skip

    def decide(self, committed: Committed, move: Decision | None = None, options: Options | None = None) -> Outcome:
        """Record what follows the committed answer: ``move`` (the live interviewer's) if it keeps
        to the options, else the engine's own choice. Offline, the grade is recorded with it."""
        before, turn = committed.before, committed.turn
        options = options or self.options(committed)
        decision = options.accept(move)
        notices = [TIME_UP[before.lang]] if decision.action == "move-on" and "time" in decision.reason else []
        earlier = [t for t in before.turns if t.seq < turn.seq]
        decided = replace(turn, decision=decision)
        grade: Grade | None = None
        if turn.kind in GAVE_UP or self.grades_at_once:
            started = time.perf_counter()
            if turn.kind in GAVE_UP:
                grade = self._passed(options.question, options.answered, turn.kind, before.lang)
            elif options.answered is None and turn.answer == options.said:
                grade = options.base  # the offline reading is the grade itself
            else:
                grade = self._grade_answer(options.question, options.answered, turn, before.lang)
            after = SessionState(before.row, [*earlier, replace(decided, status="graded", grade=grade)], self.bank, self.clock())
            self.store.record_grade(
                GradeRecord(
                    turn_id=turn.id,
                    grade=grade,
                    grading_ms=(time.perf_counter() - started) * 1000,
                    decision=decision,
                    reviews=_reviews(options.question, grade, turn),
                    now=after.now,
                    finished=after.finished,
                )
            )
        else:
            after = SessionState(before.row, [*earlier, decided], self.bank, self.clock())
            recorded = self.store.record_decision(turn.id, decision, after.now, after.finished)
            now = self.state(before.id)
            stored = next(t for t in now.turns if t.id == turn.id)
            if not recorded:  # decided meanwhile (a resume elsewhere): that decision stands
                decision, notices = stored.decision or decision, []
            return Outcome(turn.id, stored.grade, decision, now, notices)  # the grade may have come in meanwhile
        return Outcome(turn.id, grade, decision, self.state(before.id), notices)

    # -- grading -----------------------------------------------------------------------------------
    def grade(self, turn_id: int, decide_first: bool = True) -> Grade | None:
        """Grade one pending answer with the session's grader and move its review schedule, once:
        None when the answer was graded already (by another worker, a resume). With
        ``decide_first``, an answer whose next move was never decided (a crash) is decided first,
        offline; a live turn grades alongside its own deciding and passes False."""
        turn = self.store.turn(turn_id)
        if turn.status != "pending":
            return None
        state = self.state(turn.session_id)
        assert turn.question_id is not None
        if turn.decision is None and decide_first:
            before = state.before(turn)
            outcome = self.decide(Committed(before, turn))
            if outcome.grade is not None:
                return outcome.grade
        question = self.bank.get(turn.question_id)
        followup = state.followup(question, turn.followup_id)
        started = time.perf_counter()
        if turn.kind in GAVE_UP:
            grade = self._passed(question, followup, turn.kind, state.lang)
        else:
            grade = self._grade_answer(question, followup, turn, state.lang)
        record = GradeRecord(
            turn_id=turn.id,
            grade=grade,
            grading_ms=(time.perf_counter() - started) * 1000,
            decision=None,
            reviews=_reviews(question, grade, turn),
            now=self.clock(),
        )
        return grade if self.store.record_grade(record) else None

    def _grade_answer(self, question: Question, followup: FollowUp | None, turn: Turn, lang: Lang) -> Grade:
        text = turn.answer or ""
        if followup is None:
            return self.grader.grade(question, text)
        return self.grader.grade_followup(question, followup, text)

    @staticmethod
    def _imposed(before: SessionState, question: Question, base: Grade, turn: Turn, asked: list[str]) -> Decision | None:
        """A move-on the rules impose, whoever decides: a pass, the round's clock, the cap, nothing said."""
        if turn.kind in GAVE_UP:
            return Decision(action="move-on", reason="the candidate passed")
        left = before.time_left(question.round)
        if left is not None and left <= 0:
            return Decision(action="move-on", reason="the round's time is up")
        return limit(base, asked, before.row.max_followups)

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


def _reviews(question: Question, grade: Grade, turn: Turn) -> list[tuple[str, str, int]]:
    """Each graded criterion's SM-2 quality; a skip or an "I don't know" of a question fails all of its criteria."""
    prefix = question.id if turn.followup_id is None else f"{question.id}/{turn.followup_id}"
    if grade.criteria:
        return [(f"{prefix}/{c.id}", question.id, quality(c.score, c.max_score)) for c in grade.criteria]
    if turn.kind in GAVE_UP and turn.followup_id is None:
        return [(f"{prefix}/{c.id}", question.id, 0) for c in question.criteria]
    return []
