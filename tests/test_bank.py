from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from interviewer.content.bank import load_bank
from interviewer.content.knowledge import discover, load_passages
from interviewer.errors import BankError
from tests.conftest import KNOWLEDGE, RUBRICS

SEED_FOLLOWUPS = {  # question id -> follow-ups the source write-up records ("面试官追问了…")
    "q01": 1, "q02": 1, "q03": 1, "q04": 1, "q06": 2, "q07": 1, "q08": 1, "q09": 1, "q11": 1, "q13": 1, "q15": 1,
}  # fmt: skip


@pytest.fixture(scope="module")
def passage_ids() -> set[str]:
    return {p.source for f in discover([KNOWLEDGE], shipped=KNOWLEDGE) for p in load_passages(f, True)}


def test_the_bank_is_complete(passage_ids: set[str]) -> None:
    bank = load_bank(RUBRICS, passage_ids)
    assert [q.id for q in bank.questions] == [f"q{n:02d}" for n in range(1, 23)]
    assert [q.round for q in bank.questions] == [1] * 5 + [2] * 5 + [3] * 6 + [4] * 3 + [1, 2, 3]
    assert [q.source for q in bank.questions] == ["seed"] * 16 + ["beyond"] * 6
    assert [r.minutes for r in bank.rounds] == [120, 120, 90, 60]
    assert [r.in_full_loop for r in bank.rounds] == [True, True, True, False]  # inference serving: on request
    for q in bank.questions:
        assert 4 <= len(q.criteria) <= 7, q.id
        assert 2 <= len(q.followups) <= 4, q.id
        assert q.references and all(ref in passage_ids for ref in q.all_references()), q.id
        assert sum(f.from_seed for f in q.followups) >= SEED_FOLLOWUPS.get(q.id, 0), f"{q.id} lacks seed follow-ups"
        for criterion in q.criteria:
            assert len({level.zh for level in criterion.levels}) == len(criterion.levels), (q.id, criterion.id)
            assert all(concept.terms for concept in criterion.concepts)
        assert sum(len(c.misconceptions) for c in q.criteria) >= 2, f"{q.id} names too few misconceptions"
    assert bank.get("q08").answer_format == "code"


def test_the_full_loop_is_the_seeds_three_rounds_and_the_fourth_comes_on_request() -> None:
    from interviewer.interview.plan import PlanError, make_plan

    bank = load_bank(RUBRICS)
    default = make_plan(bank, "full")
    assert default.questions == [f"q{n:02d}" for n in range(1, 17)] and default.label == "all three rounds"
    every = make_plan(bank, "full", "all")  # every question, round by round
    seed = [f"q{n:02d}" for n in range(1, 17)]
    assert every.questions == [*seed[:5], "q20", *seed[5:10], "q21", *seed[10:], "q22", "q17", "q18", "q19"]
    assert every.label == "all four rounds"
    assert make_plan(bank, "round", 4).questions == ["q17", "q18", "q19"]
    assert make_plan(bank, "round", 1).questions == seed[:5]  # the source interview's round as it was
    assert "q20" in make_plan(bank, "topic", "expert-parallel").questions and make_plan(bank, "question", "q21").questions == ["q21"]
    with pytest.raises(PlanError, match=r"no round 5: rounds are 1, 2, 3 and 4"):
        make_plan(bank, "round", 5)
    with pytest.raises(PlanError, match=r"\(q01\.\.q22\)"):
        make_plan(bank, "question", "q99")


def test_every_seed_question_is_asked_in_both_languages() -> None:
    bank = load_bank(RUBRICS)
    for q in bank.questions:
        assert q.question.zh != q.question.en
        assert q.reference_answer.zh and q.reference_answer.en


def _mutate(bank: Path, question_id: str, change: Callable[[dict[str, Any]], None]) -> Path:
    path = bank / f"{question_id}.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def _unknown_field(d: dict[str, Any]) -> None:
    d["criteria"][1]["wieght"] = 0.2


def _bad_weights(d: dict[str, Any]) -> None:
    d["criteria"][0]["weight"] = d["criteria"][0]["weight"] + 0.3


def _bad_target(d: dict[str, Any]) -> None:
    d["followups"][1]["targets"] = ["no-such-criterion"]


def _bad_reference(d: dict[str, Any]) -> None:
    d["references"][0] = "zero.md#no-such-section"


def _bad_levels(d: dict[str, Any]) -> None:
    d["criteria"][2]["levels"][1]["score"] = 5


def _no_chinese(d: dict[str, Any]) -> None:
    d["question"]["zh"] = "only English here"


def _too_few_criteria(d: dict[str, Any]) -> None:
    d["criteria"] = d["criteria"][:3]


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (_unknown_field, "criteria[1].wieght", "Extra inputs are not permitted"),
        (_bad_weights, "criteria", "add up to"),
        (_bad_target, "followups[1].targets", "no-such-criterion"),
        (_bad_reference, "references[0]", "zero.md#no-such-section"),
        (_bad_levels, "criteria[2].levels", "0..3"),
        (_no_chinese, "question.zh", "no Chinese"),
        (_too_few_criteria, "criteria", "at least 4"),
    ],
    ids=["unknown-field", "weights", "followup-target", "reference", "levels", "language", "too-few"],
)
def test_a_broken_rubric_names_file_question_and_field(
    bank_copy: Path, passage_ids: set[str], change: Callable[[dict[str, Any]], None], field: str, message: str
) -> None:
    path = _mutate(bank_copy, "q02", change)
    with pytest.raises(BankError) as caught:
        load_bank(bank_copy, passage_ids)
    error = caught.value
    assert error.path == str(path)
    assert error.question_id == "q02"
    assert error.field is not None and error.field.startswith(field)
    assert message in str(error)


def test_broken_yaml_names_the_line(bank_copy: Path) -> None:
    path = bank_copy / "q05.yaml"
    path.write_text(path.read_text(encoding="utf-8") + "\n  bad: [unclosed\n", encoding="utf-8")
    with pytest.raises(BankError, match=r"q05\.yaml: invalid YAML \(line \d+"):
        load_bank(bank_copy)


def test_a_file_named_after_another_question_is_rejected(bank_copy: Path) -> None:
    (bank_copy / "q03.yaml").rename(bank_copy / "q17.yaml")
    with pytest.raises(BankError, match=r"must be q03\.yaml"):
        load_bank(bank_copy)


def test_a_missing_bank_folder_says_so(tmp_path: Path) -> None:
    with pytest.raises(BankError, match="does not exist"):
        load_bank(tmp_path / "nowhere")
