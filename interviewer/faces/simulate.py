"""``interviewer simulate``: a scripted candidate sits an interview from a JSONL of answers.

Each line: ``question_id``, ``answer`` and optionally ``followup_answers`` (used in order; a
follow-up with no answer left is skipped). The plan is the full loop when the answers cover all
rounds, else the rounds they cover. Lines for the same question after the first are ignored.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from interviewer.content.bank import Bank
from interviewer.content.rubric import Lang
from interviewer.errors import InterviewerError
from interviewer.interview.engine import Engine
from interviewer.interview.plan import Plan, PlanKind
from interviewer.interview.state import SessionState
from interviewer.interview.store import LOCAL


class ScriptedAnswer(BaseModel):
    model_config = ConfigDict(extra="allow")

    question_id: str
    answer: str
    followup_answers: list[str] = Field(default_factory=list)


def read_script(lines: Iterable[str], bank: Bank) -> dict[str, ScriptedAnswer]:
    script: dict[str, ScriptedAnswer] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            item = ScriptedAnswer.model_validate(json.loads(line))
        except (json.JSONDecodeError, ValidationError) as exc:
            raise InterviewerError(f"line {number} of the answers is not usable: {str(exc).splitlines()[0]}") from exc
        try:
            bank.get(item.question_id)
        except KeyError:
            raise InterviewerError(f"line {number}: unknown question_id '{item.question_id}'") from None
        script.setdefault(item.question_id, item)
    if not script:
        raise InterviewerError("the answers file has no answers")
    return script


def plan_for(script: dict[str, ScriptedAnswer], bank: Bank) -> Plan:
    rounds = sorted({bank.get(q).round for q in script})
    if rounds == [1, 2, 3]:
        return Plan("full", "all three rounds", [q.id for q in bank.loop_questions()])
    questions = [q.id for q in bank.questions if q.round in rounds]
    kind: PlanKind = "round" if len(rounds) == 1 else "full"
    return Plan(kind, "rounds " + ", ".join(map(str, rounds)), questions)


def run(engine: Engine, script: dict[str, ScriptedAnswer], lang: Lang, max_followups: int, owner: str = LOCAL) -> SessionState:
    state = engine.start(plan_for(script, engine.bank), mode="interview", lang=lang, max_followups=max_followups, owner=owner)
    used: dict[str, int] = {}
    while True:
        prompt = state.prompt
        if prompt.kind == "end":
            return state
        if prompt.kind == "round-summary":
            state = engine.proceed(state.id)
            continue
        assert prompt.question_id is not None
        item = script.get(prompt.question_id)
        if prompt.kind == "question":
            state = (engine.skip(state.id) if item is None else engine.submit(state.id, item.answer)).state
            continue
        index = used.get(prompt.question_id, 0)
        if item is not None and index < len(item.followup_answers):
            used[prompt.question_id] = index + 1
            state = engine.submit(state.id, item.followup_answers[index]).state
        else:
            state = engine.skip(state.id).state


def result(state: SessionState) -> dict[str, Any]:
    scores = state.scores
    return {
        "session_id": state.id,
        "overall": scores.overall,
        "rounds": [{"round": r.round, "score": r.score} for r in scores.rounds],
        "questions": [
            {"id": q.id, "round": q.round, "score": q.score, "main": q.main, "followups": q.followups, "skipped": q.skipped}
            for r in scores.rounds
            for q in r.questions
        ],
    }
