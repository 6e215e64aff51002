"""One turn of a live interview, as every face plays it: the answer is committed at once, the
interviewer's next words follow as they come (streamed with a model), and the grade is computed
alongside; nothing the candidate sees waits for it, except the practice feedback card and the
scores of a round's summary or of the report, which arrive when it does.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from interviewer.application.grading import GradingWorker
from interviewer.grading.grade import Grade
from interviewer.interview.engine import Committed, Engine
from interviewer.interview.interviewer import LLMInterviewer, ScriptedInterviewer
from interviewer.interview.state import SessionState


@dataclass(frozen=True)
class Step:
    """What the candidate can see at one moment of the turn."""

    state: SessionState  # the session as stored
    speaking: str | None = None  # the interviewer's words so far, while it is still wording its follow-up
    notices: list[str] = field(default_factory=list)
    grade: Grade | None = None  # the answer's grade, once it is in
    turn_id: int | None = None


def play(
    engine: Engine,
    interviewer: LLMInterviewer | ScriptedInterviewer,
    committed: Committed,
    worker: GradingWorker | None = None,
    grade_wait_s: float = 0.0,
) -> Iterator[Step]:
    """Yield the turn's steps: the answer on screen, then the interviewer's words as they grow, then
    the next prompt as stored; then, waiting up to ``grade_wait_s`` for it, the grade when the
    session shows it (practice mode, a round's summary, the end)."""
    last: Step | None = None
    for last in speak(engine, interviewer, committed, worker):
        yield last
    assert last is not None
    yield from settle(engine, last, worker, grade_wait_s)


def speak(
    engine: Engine,
    interviewer: LLMInterviewer | ScriptedInterviewer,
    committed: Committed,
    worker: GradingWorker | None = None,
) -> Iterator[Step]:
    """The turn up to its decision: the answer on screen, the interviewer's words as they grow, and
    last the next prompt as stored (with the grade when it came with the decision)."""
    before, turn = committed.before, committed.turn
    deciding = committed.deciding
    yield Step(deciding, turn_id=turn.id)
    if worker is not None and not engine.grades_at_once:
        worker.submit(turn.id, decide_first=False)  # graded alongside; the decision is this turn's to make
    options = engine.options(committed)
    asked = turn.asked or ""
    earlier = [t.answer for t in before.turns_of(options.question.id) if t.kind == "answer" and t.answer]
    move, notices = None, []
    for spoken in interviewer.live(options, asked, earlier, turn.answer or "", before.lang, since=turn.answered_at):
        if not spoken.final:
            yield Step(deciding, speaking=spoken.text, turn_id=turn.id)
            continue
        move = spoken.move
        notices = [spoken.notice] if spoken.notice else []
    outcome = engine.decide(committed, move, options)
    yield Step(outcome.state, notices=[*outcome.notices, *notices], grade=outcome.grade, turn_id=turn.id)


def settle(engine: Engine, decided: Step, worker: GradingWorker | None, grade_wait_s: float) -> Iterator[Step]:
    """After the decision (``decided``, the last step of :func:`speak`): the grade, once it is in,
    when the session shows it; without a background worker it is computed here."""
    if decided.grade is not None or decided.turn_id is None:
        return
    turn_id, state, notices = decided.turn_id, decided.state, decided.notices
    if worker is None:  # no background: graded here, after the interviewer has spoken
        grade = engine.grade(turn_id)
        yield Step(engine.state(state.id), notices=notices, grade=grade, turn_id=turn_id)
        return
    shows_grade = state.mode == "practice" or state.prompt.kind in {"round-summary", "end"}
    if not shows_grade or grade_wait_s <= 0:
        return
    deadline = time.monotonic() + grade_wait_s
    waiting = [t.id for t in state.grading] if state.prompt.kind != "followup" else []
    grade = worker.wait(turn_id, grade_wait_s)
    for other in waiting:  # a summary or the report shows the round's scores: wait for all of them
        worker.wait(other, max(0.0, deadline - time.monotonic()))
    yield Step(engine.state(state.id), notices=notices, grade=grade, turn_id=turn_id)


class Playback:
    """A turn spoken once, in the background, from the moment its answer is committed; any number
    of followers (the page's stream, a reload, a second tab) read its steps. The model is asked as
    soon as the answer is stored, not when the page, busy repainting, asks for the next words; and
    the turn is decided even if no page ever follows it."""

    def __init__(self) -> None:
        self._steps: list[Step] = []
        self._failure: BaseException | None = None
        self._done = False
        self._changed = threading.Condition()
        self.finished_at: float | None = None

    @property
    def done(self) -> bool:
        with self._changed:
            return self._done

    def run(self, steps: Iterator[Step]) -> None:
        try:
            for step in steps:
                with self._changed:
                    self._steps.append(step)
                    self._changed.notify_all()
        except BaseException as exc:  # handed to every follower
            self._failure = exc
        finally:
            with self._changed:
                self._done = True
                self.finished_at = time.monotonic()
                self._changed.notify_all()

    def follow(self) -> Iterator[Step]:
        """The steps in order, as they come; a follower that falls behind the words skips to the
        latest words (each holds all that was said so far), never past the answer or the decision."""
        seen = 0
        while True:
            with self._changed:
                while seen >= len(self._steps) and not self._done:
                    self._changed.wait()
                if seen >= len(self._steps):
                    if self._failure is not None:
                        raise self._failure
                    return
                while seen + 1 < len(self._steps) and self._steps[seen].speaking and self._steps[seen + 1].speaking:
                    seen += 1
                step = self._steps[seen]
                seen += 1
            yield step
