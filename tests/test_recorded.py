"""The model grader on recorded replies of a real model (benchmarks/recorded_model.py): the checks
applied after the model (each score kept to its scale, quotes checked against the answer, a score
with nothing quoted cut to 1, the overall mapped from the levels by the fitted calibration) pinned
on the five q01 answers of the development set. A change to a prompt, a rubric or a passage
changes the requests' keys: this test then names the command that lists what to record again."""

from __future__ import annotations

import json
import sys
from itertools import islice
from pathlib import Path
from types import SimpleNamespace

import pytest

from interviewer.grading.calibration import Calibration, LevelFeatures
from interviewer.settings import PROJECT_ROOT
from tests.conftest import DEV

sys.path.insert(0, str(PROJECT_ROOT / "benchmarks"))
import recorded_model  # the benchmark's own module, found on the path just set

PINNED = Path(__file__).parent / "data" / "recorded-grades.json"


def test_recorded_replies_replay_into_the_same_grades(tmp_path: Path) -> None:
    if not DEV.exists():
        pytest.fail(f"this test needs the development set at {DEV}", pytrace=False)
    lines = [json.loads(line) for line in islice(DEV.read_text(encoding="utf-8").splitlines(), 5)]
    source = tmp_path / "q01.jsonl"
    source.write_text("\n".join(json.dumps(line, ensure_ascii=False) for line in lines) + "\n", encoding="utf-8")
    model = recorded_model.Model(replies=recorded_model.load_replies("dev"))
    grades = []
    with recorded_model.serve(model) as base_url:
        services = recorded_model.Services(recorded_model.grading_settings(base_url, tmp_path / "home"))
        grader = services.rubric_grader("llm")
        for number, line in enumerate(lines, start=1):
            grades.append(recorded_model.grade_line(services, grader, number, line)["grade"])
    assert not model.missing, (
        "the grader's requests changed (a prompt, a rubric or a passage): "
        "`python benchmarks/recorded_model.py pending ../shared/eval/dev-answers.jsonl --name dev` lists what to record"
    )
    calibration = Calibration.load(section="model")
    assert calibration.fitted_on.startswith("dev-answers.jsonl")
    for line, grade in zip(lines, grades, strict=True):
        assert grade["grader"] == "llm" and grade["second_opinion"] is not None
        for c in grade["criteria"]:
            assert 0 <= c["score"] <= c["max_score"]
            assert all(
                quote in line["answer"] or quote.casefold() in " ".join(line["answer"].split()).casefold() for quote in c["evidence"]
            )
            assert c["evidence"] or c["score"] <= 1  # a score with nothing in the answer to show for it
        features = LevelFeatures.of([SimpleNamespace(**c) for c in grade["criteria"]], grade["flags"])
        assert grade["score"] == calibration.score(features)
    got = [
        {"kind": line["kind"], "score": g["score"], "levels": {c["id"]: c["score"] for c in g["criteria"]}}
        for line, g in zip(lines, grades, strict=True)
    ]
    assert got == json.loads(PINNED.read_text(encoding="utf-8"))
    by_kind = {g["kind"]: g["score"] for g in got}
    assert by_kind["expert"] > by_kind["solid"] > by_kind["partial"] and by_kind["misconception"] <= calibration.misconception_cap
