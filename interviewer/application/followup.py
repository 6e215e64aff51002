"""The follow-up as the candidate hears it: the engine chose it; the interviewer words it (the
model, streamed, or the bank's script), and the model's words are kept with the session."""

from __future__ import annotations

from collections.abc import Iterator

from interviewer.interview.engine import Engine, Outcome
from interviewer.interview.interviewer import LLMInterviewer, ScriptedInterviewer, Wording


def word_followup(engine: Engine, interviewer: LLMInterviewer | ScriptedInterviewer, outcome: Outcome, answer: str) -> Iterator[Wording]:
    """Yield the follow-up's wording as it grows; the last value is final. Nothing is yielded when
    the next prompt is not a follow-up. The model's final words are stored, so a reload, the
    transcript and the report show the question as it was asked; a fallback stores nothing (the
    bank's wording is what was asked then)."""
    prompt = outcome.next
    if prompt.kind != "followup" or prompt.question_id is None:
        return
    question = engine.bank.get(prompt.question_id)
    followup = next(f for f in question.followups if f.id == prompt.followup_id)
    last: Wording | None = None
    for wording in interviewer.stream(question, followup, answer, outcome.grade, outcome.state.lang):
        last = wording
        yield wording
    if last is not None and last.final and last.by == "model":
        engine.record_wording(outcome.state, last.text)
