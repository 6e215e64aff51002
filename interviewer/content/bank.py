"""Loading the question bank from ``rubrics/``: one YAML file a question, plus ``rounds.yaml``.

Loading stops at the first invalid file with its path, the question id and the field at fault,
because a half-loaded bank would silently drop questions from an interview.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from interviewer.content.rubric import Question, Round, RoundsFile
from interviewer.errors import BankError

QUESTION_GLOB = "q[0-9][0-9].yaml"
# libyaml's loader when PyYAML was built with it (about ten times faster on the rubrics), else Python's
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _field_path(loc: Iterable[Any]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        else:
            parts.append(("." if parts else "") + str(item))
    return "".join(parts) or "(file)"


def _read_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BankError(str(path), f"cannot read the file: {exc}") from exc
    try:
        return yaml.load(text, Loader=_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise BankError(str(path), f"invalid YAML{where}: {problem}") from exc


def _validation_error(path: Path, question_id: str | None, exc: ValidationError) -> BankError:
    first = exc.errors()[0]
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return BankError(str(path), first["msg"] + more, question_id, _field_path(first["loc"]))


def load_question(path: Path) -> Question:
    data = _read_yaml(path)
    if not isinstance(data, dict):
        raise BankError(str(path), "expected a mapping of question fields at the top level")
    question_id = data.get("id") if isinstance(data.get("id"), str) else None
    try:
        question = Question.model_validate(data)
    except ValidationError as exc:
        raise _validation_error(path, question_id, exc) from exc
    if path.stem != question.id:
        raise BankError(str(path), f"the file name must be {question.id}.yaml", question.id, "id")
    for index, followup in enumerate(question.followups):
        known = {c.id for c in question.criteria}
        for target in followup.targets:
            if target not in known:
                raise BankError(
                    str(path),
                    f"follow-up '{followup.id}' targets criterion '{target}', which the question does not have",
                    question.id,
                    f"followups[{index}].targets",
                )
    return question


@dataclass(frozen=True)
class Bank:
    """The validated interview: its rounds and its questions in order."""

    rounds: list[Round]
    questions: list[Question]

    def get(self, question_id: str) -> Question:
        for question in self.questions:
            if question.id == question_id:
                return question
        raise KeyError(f"no question '{question_id}' in the bank")

    def in_round(self, number: int) -> list[Question]:
        return [q for q in self.questions if q.round == number]

    def round_plan(self, number: int) -> list[Question]:
        """A round as it is played: the source interview's questions of the round (a round with none,
        such as inference serving, plays all of its own)."""
        questions = self.in_round(number)
        return [q for q in questions if q.source == "seed"] or questions

    def loop_questions(self, every_round: bool = False) -> list[Question]:
        """The full interview's questions: the default loop's rounds as played, or ``every_round``:
        every question of every round, the ones beyond the seed included, round by round."""
        if every_round:
            return sorted(self.questions, key=lambda q: (q.round, q.id))
        return [q for r in self.rounds if r.in_full_loop for q in self.round_plan(r.number)]


def load_bank(directory: Path, passage_ids: set[str] | None = None) -> Bank:
    """Load and validate every question. With ``passage_ids``, every reference must exist."""
    if not directory.is_dir():
        raise BankError(str(directory), "the question bank folder does not exist")
    rounds_path = directory / "rounds.yaml"
    try:
        rounds = RoundsFile.model_validate(_read_yaml(rounds_path)).rounds
    except ValidationError as exc:
        raise _validation_error(rounds_path, None, exc) from exc
    questions = [load_question(path) for path in sorted(directory.glob(QUESTION_GLOB))]
    if not questions:
        raise BankError(str(directory), "no question files (q01.yaml …) found")
    for question in questions:
        if passage_ids is None:
            break
        path = str(directory / f"{question.id}.yaml")
        for index, ref in enumerate(question.references):
            if ref not in passage_ids:
                raise BankError(path, f"reference '{ref}' is not a knowledge passage", question.id, f"references[{index}]")
        for f_index, followup in enumerate(question.followups):
            for index, ref in enumerate(followup.references):
                if ref not in passage_ids:
                    raise BankError(
                        path,
                        f"reference '{ref}' is not a knowledge passage",
                        question.id,
                        f"followups[{f_index}].references[{index}]",
                    )
    return Bank(rounds=rounds, questions=questions)
