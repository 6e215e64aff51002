"""One turn of a live interview, as every face plays it: the answer is committed at once, the
interviewer's next words follow as they come (streamed with a model), and the grade is computed
alongside; nothing the candidate sees waits for it, except the practice feedback card and the
scores of a round's summary or of the report, which arrive when it does.
"""

from __future__ import annotations

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
    notices = [*outcome.notices, *notices]
    yield Step(outcome.state, notices=notices, grade=outcome.grade, turn_id=turn.id)
    if outcome.grade is not None:
        return
    if worker is None:  # no background: graded here, after the interviewer has spoken
        grade = engine.grade(turn.id)
        yield Step(engine.state(before.id), notices=notices, grade=grade, turn_id=turn.id)
        return
    shows_grade = outcome.state.mode == "practice" or outcome.next.kind in {"round-summary", "end"}
    if not shows_grade or grade_wait_s <= 0:
        return
    deadline = time.monotonic() + grade_wait_s
    waiting = [t.id for t in outcome.state.grading] if outcome.next.kind != "followup" else []
    grade = worker.wait(turn.id, grade_wait_s)
    for other in waiting:  # a summary or the report shows the round's scores: wait for all of them
        worker.wait(other, max(0.0, deadline - time.monotonic()))
    yield Step(engine.state(before.id), notices=notices, grade=grade, turn_id=turn.id)
