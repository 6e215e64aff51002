"""The interview session: a deterministic state machine driven by code, not by a model.

plan -> ask -> answer -> grade -> follow-up or next question -> round summary -> end.

The state is never kept only in memory: it is replayed from the stored turns, so a session
resumed after a crash, a restart or in another process continues exactly where it stopped, and
an answer whose grading was cut off is graded on resume. Everything a UI shows (the prompt,
progress, the round's time left, feedback, summaries) comes from this API, so the terminal, the
web app and the tests drive the same object.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from interviewer.content.bank import Bank
from interviewer.content.rubric import FollowUp, Lang, Question
from interviewer.errors import InterviewerError
from interviewer.grading.grade import Grade
from interviewer.interview.followups import Decision, choose
from interviewer.interview.store import SessionRow, Store, Turn

Mode = Literal["interview", "practice"]
PlanKind = Literal["full", "round", "question", "topic", "weak"]
WEAK_BELOW = 7.0  # a question whose latest score is under this is a weak point
WEAK_LIMIT = 5
FOLLOWUP_SHARE = 0.3  # how much the answered follow-ups weigh in a question's score


def format_clock(seconds: int | None) -> str:
    """A round's time left as m:ss ('-' once over); empty when the plan has no clock."""
    if seconds is None:
        return ""
    sign = "-" if seconds < 0 else ""
    seconds = abs(seconds)
    return f"{sign}{seconds // 60}:{seconds % 60:02d}"


class SessionError(InterviewerError):
    pass


class Grader(Protocol):
    name: str

    def grade(self, question: Question, answer: str, lang: Lang | None = None) -> Grade: ...

    def grade_followup(self, question: Question, followup: FollowUp, answer: str, lang: Lang | None = None) -> Grade: ...


@dataclass(frozen=True)
class Plan:
    kind: PlanKind
    label: str
    questions: list[str]

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "label": self.label, "questions": self.questions}


def make_plan(bank: Bank, kind: PlanKind = "full", value: str | int | None = None) -> Plan:
    if kind == "full":
        return Plan("full", "all three rounds", [q.id for q in bank.questions])
    if kind == "round":
        number = int(value or 0)
        questions = [q.id for q in bank.in_round(number)]
        if not questions:
            raise SessionError(f"no round {value}: rounds are 1, 2 and 3")
        return Plan("round", f"round {number}", questions)
    if kind == "question":
        try:
            return Plan("question", f"drill {value}", [bank.get(str(value)).id])
        except KeyError:
            raise SessionError(f"no question '{value}' in the bank (q01..q16)") from None
    if kind == "topic":
        questions = [q.id for q in bank.questions if str(value) in q.topics]
        if not questions:
            topics = sorted({t for q in bank.questions for t in q.topics})
            raise SessionError(f"no question has topic '{value}'; topics: {', '.join(topics)}")
        return Plan("topic", f"topic {value}", questions)
    raise SessionError(f"unknown plan '{kind}': use full, round, question or topic (weak points: weak_plan)")


def latest_scores(store: Store) -> dict[str, float]:
    """Each question's latest main-answer score across all sessions."""
    latest: dict[str, tuple[float, float]] = {}  # question id -> (answered_at, score)
    for row in store.sessions():
        for turn in store.turns(row.id):
            if turn.followup_id is not None or not turn.question_id or turn.grade is None:
                continue
            if turn.question_id not in latest or turn.answered_at >= latest[turn.question_id][0]:
                latest[turn.question_id] = (turn.answered_at, float(turn.grade["score"]))
    return {question_id: score for question_id, (_, score) in latest.items()}


def weak_plan(store: Store, bank: Bank, limit: int = WEAK_LIMIT, topic: str | None = None, now: float | None = None) -> Plan:
    """The questions whose criteria are due for review (spaced repetition), most overdue and
    hardest first; when nothing is scheduled yet, the questions whose latest score is lowest."""
    now = time.time() if now is None else now
    order = [q.id for q in bank.questions]
    wanted = {q.id for q in bank.questions if topic is None or topic in q.topics}
    chosen: list[str] = []
    for schedule in store.reviews():  # sorted by due date, then easiness
        due = schedule.due_at <= now and schedule.last_quality is not None and schedule.last_quality < 5
        if due and schedule.question_id in wanted and schedule.question_id not in chosen:
            chosen.append(schedule.question_id)
    if not chosen:
        weak = sorted((score, qid) for qid, score in latest_scores(store).items() if score < WEAK_BELOW and qid in wanted)
        chosen = [qid for _, qid in weak if qid in order]
    if not chosen:
        raise SessionError("no weak points yet: sit an interview or a round first" + (f" (topic {topic})" if topic else ""))
    return Plan("weak", "my weak points" + (f": {topic}" if topic else ""), chosen[:limit])


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


@dataclass(frozen=True)
class Prompt:
    kind: Literal["question", "followup", "round-summary", "end"]
    text: str
    round: int | None = None
    round_title: str = ""
    question_id: str | None = None
    followup_id: str | None = None
    answer_format: str = "prose"
    number: int = 0  # 1-based position of the question in the plan
    total: int = 0
    time_left_s: int | None = None  # of the round's time guide; negative once over
    summary: RoundScore | None = None


@dataclass(frozen=True)
class Outcome:
    """What one submitted answer led to."""

    turn_id: int
    grade: Grade
    show_feedback: bool  # practice mode: at once; interview mode: at the round summary
    decision: Decision | None
    next: Prompt
    notices: list[str] = field(default_factory=list)


class Session:
    """One interview. Build with :meth:`start` or :meth:`resume`."""

    def __init__(self, store: Store, bank: Bank, grader: Grader, row: SessionRow, clock: Callable[[], float] = time.time):
        self.store = store
        self.bank = bank
        self.grader = grader
        self.row = row
        self.clock = clock

    # -- life cycle ----------------------------------------------------------------------------
    @classmethod
    def start(
        cls,
        store: Store,
        bank: Bank,
        grader: Grader,
        plan: Plan,
        mode: Mode = "interview",
        lang: Lang = "zh",
        max_followups: int = 2,
        clock: Callable[[], float] = time.time,
    ) -> Session:
        settings = {"grader": grader.name, "max_followups": max_followups}
        session_id = store.create_session(mode, lang, plan.as_dict(), settings)
        store.mark_prompt_shown(session_id, clock())
        return cls(store, bank, grader, store.session(session_id), clock)

    @classmethod
    def open(cls, store: Store, bank: Bank, grader: Grader, session_id: str, clock: Callable[[], float] = time.time) -> Session:
        """The session as it stands, for one more event of an interview in progress (the clock runs on)."""
        session = cls(store, bank, grader, store.session(session_id), clock)
        session.recover()
        return session

    @classmethod
    def resume(cls, store: Store, bank: Bank, grader: Grader, session_id: str, clock: Callable[[], float] = time.time) -> Session:
        session = cls.open(store, bank, grader, session_id, clock)
        store.mark_prompt_shown(session_id, clock())  # time away does not count against the round
        session.row = store.session(session_id)
        return session

    def recover(self) -> list[int]:
        """Grade answers whose grading was cut off (a crash, a kill). Returns their turn ids."""
        recovered = []
        for turn in self.store.pending_turns(self.id):
            self._grade_turn(turn)
            recovered.append(turn.id)
        return recovered

    @property
    def id(self) -> str:
        return self.row.id

    @property
    def mode(self) -> Mode:
        return self.row.mode  # type: ignore[return-value]

    @property
    def lang(self) -> Lang:
        return self.row.lang  # type: ignore[return-value]

    @property
    def plan(self) -> list[str]:
        return list(self.row.plan["questions"])

    @property
    def max_followups(self) -> int:
        return int(self.row.settings.get("max_followups", 2))

    # -- the state, replayed from the turns ------------------------------------------------------
    def turns(self) -> list[Turn]:
        return self.store.turns(self.id)

    def prompt(self) -> Prompt:
        turns = self.turns()
        if any(t.status == "pending" for t in turns):
            self.recover()
            turns = self.turns()
        summarised = {t.round for t in turns if t.kind == "summary"}
        plan = self.plan
        for index, question_id in enumerate(plan):
            question = self.bank.get(question_id)
            step = self._open_step(question, turns)
            if step is not None:
                prompt = self._question_prompt(question, step, index, turns)
                worded = self._worded(question, turns) if isinstance(step, FollowUp) else None
                return replace(prompt, text=worded) if worded else prompt
            following = self.bank.get(plan[index + 1]).round if index + 1 < len(plan) else None
            if self.row.plan["kind"] in {"full", "round"} and following != question.round and question.round not in summarised:
                return Prompt(
                    "round-summary",
                    self._round_summary_text(question.round),
                    round=question.round,
                    round_title=self._round_title(question.round),
                    number=index + 1,
                    total=len(plan),
                    summary=self.scores(turns).rounds[self._round_index(question.round)],
                )
        if self.row.status != "finished":
            self.store.set_status(self.id, "finished")
            self.row = self.store.session(self.id)
        return Prompt("end", self._end_text(), number=len(plan), total=len(plan))

    @staticmethod
    def _worded(question: Question, turns: list[Turn]) -> str | None:
        """The LLM interviewer's wording of the pending follow-up, if it gave one."""
        mine = [t for t in turns if t.question_id == question.id and t.kind != "summary"]
        decision = (mine[-1].decision or {}) if mine else {}
        text = decision.get("text")
        return str(text) if text else None

    def word_followup(self, text: str) -> None:
        """Record how the LLM interviewer phrased the follow-up the session chose. The choice (which
        follow-up, aimed at what, within the cap) stays the session's; only the words are the model's."""
        prompt = self.prompt()
        if prompt.kind != "followup" or not text.strip():
            return
        mine = [t for t in self.turns() if t.question_id == prompt.question_id and t.kind != "summary"]
        decision = dict(mine[-1].decision or {})
        decision["text"] = text.strip()
        self.store.update_decision(mine[-1].id, decision)

    def last_answer(self) -> tuple[Turn, Grade] | None:
        """The most recent graded answer, for the interviewer to phrase its follow-up from."""
        for turn in reversed(self.turns()):
            if turn.kind == "answer" and turn.grade is not None:
                return turn, Grade.model_validate(turn.grade)
        return None

    def _open_step(self, question: Question, turns: list[Turn]) -> FollowUp | Question | None:
        """What is still to be asked for this question: itself, a follow-up, or nothing."""
        mine = [t for t in turns if t.question_id == question.id and t.kind != "summary"]
        main = [t for t in mine if t.followup_id is None]
        if not main:
            return question
        last = mine[-1]
        if last.kind in {"skip", "dont-know"} and last.followup_id is None:
            return None
        decision = last.decision or {}
        if decision.get("action") == "ask":
            followup = next((f for f in question.followups if f.id == decision.get("followup")), None)
            if followup is not None and not any(t.followup_id == followup.id for t in mine):
                return followup
        return None

    def _question_prompt(self, question: Question, step: FollowUp | Question, index: int, turns: list[Turn]) -> Prompt:
        is_followup = isinstance(step, FollowUp)
        return Prompt(
            "followup" if is_followup else "question",
            step.question.get(self.lang),
            round=question.round,
            round_title=self._round_title(question.round),
            question_id=question.id,
            followup_id=step.id if isinstance(step, FollowUp) else None,
            answer_format="prose" if is_followup else question.answer_format,
            number=index + 1,
            total=len(self.plan),
            time_left_s=self.time_left(question.round, turns),
        )

    # -- the candidate's moves -------------------------------------------------------------------
    def submit(self, answer: str, retry: bool = False) -> Outcome:
        """Store the answer (committed before grading starts), grade it, choose what comes next.

        With ``retry`` (practice mode), the answer is a new attempt at the last answered prompt."""
        if retry:
            return self._retry(answer)
        prompt = self._answerable()
        kind = "answer"
        turn_id = self.store.add_turn(
            self.id, kind, prompt.question_id, prompt.followup_id, prompt.round, answer, self.row.prompt_shown_at, now=self.clock()
        )
        return self._after(turn_id)

    def skip(self) -> Outcome:
        return self._give_up("skip")

    def dont_know(self) -> Outcome:
        return self._give_up("dont-know")

    def continue_after_summary(self) -> Prompt:
        prompt = self.prompt()
        if prompt.kind != "round-summary":
            raise SessionError("there is no round summary to continue from")
        self.store.add_turn(self.id, "summary", None, None, prompt.round, None, self.row.prompt_shown_at, status="none", now=self.clock())
        self._shown()
        return self.prompt()

    def _answerable(self) -> Prompt:
        prompt = self.prompt()
        if prompt.kind == "round-summary":
            raise SessionError("the round is over: continue to the next round first")
        if prompt.kind == "end":
            raise SessionError("this interview is over")
        return prompt

    def _give_up(self, kind: str) -> Outcome:
        prompt = self._answerable()
        turn_id = self.store.add_turn(
            self.id, kind, prompt.question_id, prompt.followup_id, prompt.round, None, self.row.prompt_shown_at, now=self.clock()
        )
        return self._after(turn_id)

    def _retry(self, answer: str) -> Outcome:
        if self.mode != "practice":
            raise SessionError("retries are for practice mode; in an interview you answer once")
        answered = [t for t in self.turns() if t.kind in {"answer", "skip", "dont-know"}]
        if not answered:
            raise SessionError("there is no answer to retry yet")
        last = answered[-1]
        attempt = max(t.attempt for t in answered if (t.question_id, t.followup_id) == (last.question_id, last.followup_id)) + 1
        turn_id = self.store.add_turn(
            self.id,
            "answer",
            last.question_id,
            last.followup_id,
            last.round,
            answer,
            self.row.prompt_shown_at,
            attempt=attempt,
            now=self.clock(),
        )
        return self._after(turn_id)

    def _after(self, turn_id: int) -> Outcome:
        turn = next(t for t in self.turns() if t.id == turn_id)
        grade, decision, notices = self._grade_turn(turn)
        self._shown()
        return Outcome(turn_id, grade, self.mode == "practice", decision, self.prompt(), notices)

    def _shown(self) -> None:
        self.store.mark_prompt_shown(self.id, self.clock())
        self.row = self.store.session(self.id)

    # -- grading and the follow-up decision --------------------------------------------------------
    def _grade_turn(self, turn: Turn) -> tuple[Grade, Decision | None, list[str]]:
        assert turn.question_id is not None
        question = self.bank.get(turn.question_id)
        followup = next((f for f in question.followups if f.id == turn.followup_id), None)
        started = time.perf_counter()
        notices: list[str] = []
        if turn.kind == "answer":
            text = turn.answer or ""
            if followup is None:
                grade = self.grader.grade(question, text)
            else:
                grade = self.grader.grade_followup(question, followup, text)
        else:
            grade = self._empty_grade(question, followup, turn.kind)
        grading_ms = (time.perf_counter() - started) * 1000
        decision = self._decide(question, grade, turn)
        if decision is not None and decision.action == "move-on" and "time" in decision.reason:
            notices.append("本轮时间已到，进入下一题。" if self.lang == "zh" else "Time is up for this round; moving on.")
        record = (
            None
            if decision is None
            else {"action": decision.action, "reason": decision.reason, "followup": decision.followup.id if decision.followup else None}
        )
        self.store.record_grade(turn.id, grade.model_dump(mode="json"), grading_ms, record)
        self._schedule_reviews(grade, turn)
        return grade, decision, notices

    def _schedule_reviews(self, grade: Grade, turn: Turn) -> None:
        """Move each graded criterion's spaced-repetition schedule (SM-2); a pass or an "I don't
        know" reschedules the question's criteria as failed."""
        from interviewer.interview.schedule import Schedule, quality, review

        assert turn.question_id is not None
        prefix = turn.question_id if turn.followup_id is None else f"{turn.question_id}/{turn.followup_id}"
        question = self.bank.get(turn.question_id)
        items: list[tuple[str, int]] = []
        if grade.criteria:
            items = [(f"{prefix}/{c.id}", quality(c.score, c.max_score)) for c in grade.criteria]
        elif turn.kind in {"skip", "dont-know"} and turn.followup_id is None:
            items = [(f"{prefix}/{c.id}", 0) for c in question.criteria]
        now = self.clock()
        updated = []
        for key, q in items:
            previous = self.store.review(key) or Schedule(key=key, question_id=turn.question_id)
            updated.append(review(previous, q, now))
        if updated:
            self.store.save_reviews(updated)

    def _decide(self, question: Question, grade: Grade, turn: Turn) -> Decision | None:
        if turn.kind in {"skip", "dont-know"}:
            return Decision("move-on", "the candidate passed")
        turns = [t for t in self.turns() if t.question_id == question.id and t.id != turn.id]
        asked = list(dict.fromkeys(t.followup_id for t in turns if t.followup_id))
        if turn.followup_id and turn.followup_id not in asked:
            asked.append(turn.followup_id)
        left = self.time_left(question.round, self.turns())
        if left is not None and left <= 0:
            return Decision("move-on", "the round's time is up")
        base = grade
        if turn.followup_id is not None:
            main = [t for t in turns if t.followup_id is None and t.grade]
            if main:
                base = Grade.model_validate(main[-1].grade)
        return choose(question, base, asked, self.lang, self.max_followups)

    def _empty_grade(self, question: Question, followup: FollowUp | None, kind: str) -> Grade:
        zh = self.lang == "zh"
        text = ("跳过了这道题。" if zh else "Skipped.") if kind == "skip" else ("记为不会。" if zh else "Noted as not known.")
        return Grade(
            score=0.0,
            criteria=[],
            feedback=text,
            lang=self.lang,
            flags=["skipped"] if kind == "skip" else ["no-knowledge"],
            passages=[],
            question_id=question.id if followup is None else f"{question.id}/{followup.id}",
            grader="session",
            grader_version="1",
            rubric_version=question.version,
        )

    # -- time and scores -----------------------------------------------------------------------
    def time_left(self, round_number: int, turns: list[Turn]) -> int | None:
        if self.row.plan["kind"] not in {"full", "round"}:
            return None
        minutes = next(r.minutes for r in self.bank.rounds if r.number == round_number)
        spent = sum(
            max(0.0, t.answered_at - t.asked_at)
            for t in turns
            if t.round == round_number and t.asked_at is not None and t.kind != "summary"
        )
        current = self.row.prompt_shown_at
        if current is not None and not any(t.round == round_number and t.kind == "summary" for t in turns):
            spent += max(0.0, self.clock() - current)
        return int(minutes * 60 - spent)

    def scores(self, turns: list[Turn] | None = None) -> Scores:
        turns = self.turns() if turns is None else turns
        by_round: dict[int, list[QuestionScore]] = {}
        for question_id in self.plan:
            question = self.bank.get(question_id)
            mine = [t for t in turns if t.question_id == question_id and t.grade is not None]
            main = [t for t in mine if t.followup_id is None]
            latest: dict[str, float] = {}
            for t in mine:
                if t.followup_id is not None and t.kind == "answer":
                    latest[t.followup_id] = float(t.grade["score"])  # type: ignore[index]
            main_score = float(main[-1].grade["score"]) if main else None  # type: ignore[index]
            score = main_score
            if main_score is not None and latest:
                score = round((1 - FOLLOWUP_SHARE) * main_score + FOLLOWUP_SHARE * sum(latest.values()) / len(latest), 1)
            skipped = bool(main) and main[-1].kind in {"skip", "dont-know"}
            by_round.setdefault(question.round, []).append(QuestionScore(question_id, question.round, score, main_score, latest, skipped))
        rounds = []
        for number, questions in sorted(by_round.items()):
            done = [q.score for q in questions if q.score is not None]
            rounds.append(RoundScore(number, round(sum(done) / len(done), 1) if done else None, questions))
        answered = [q.score for r in rounds for q in r.questions if q.score is not None]
        return Scores(round(sum(answered) / len(answered), 1) if answered else None, rounds)

    def _round_index(self, number: int) -> int:
        return [r.round for r in self.scores().rounds].index(number)

    def _round_title(self, number: int) -> str:
        return next(r.title.get(self.lang) for r in self.bank.rounds if r.number == number)

    def _round_summary_text(self, number: int) -> str:
        score = self.scores().rounds[self._round_index(number)].score
        if self.lang == "zh":
            return f"{self._round_title(number)} 结束。本轮得分 {score}/10。"
        return f"{self._round_title(number)} is over. Score for the round: {score}/10."

    def _end_text(self) -> str:
        overall = self.scores().overall
        return f"面试结束。总分 {overall}/10。" if self.lang == "zh" else f"The interview is over. Overall score: {overall}/10."
