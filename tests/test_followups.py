from __future__ import annotations

import pytest
import yaml

from interviewer.faces.batch import Graders
from interviewer.grading.grade import CriterionGrade, Grade
from interviewer.interview.followups import choose
from interviewer.settings import PROJECT_ROOT, Settings

ANSWERS = yaml.safe_load((PROJECT_ROOT / "tests" / "data" / "answers.yaml").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def graders() -> Graders:
    return Graders(Settings())


def synthetic_grade(graders: Graders, question_id: str, scores: dict[str, int], flags: list[str] | None = None) -> Grade:
    question = graders.bank.get(question_id)
    criteria = [
        CriterionGrade(id=c.id, description="", weight=c.weight, score=scores.get(c.id, c.max_score), max_score=c.max_score, level="")
        for c in question.criteria
    ]
    return Grade(score=5, criteria=criteria, feedback="", lang="zh", flags=flags or [], grader="test", grader_version="0")


def test_aims_at_the_most_important_missed_criterion(graders: Graders) -> None:
    question = graders.bank.get("q01")
    heaviest = max(question.criteria, key=lambda c: c.weight)
    grade = synthetic_grade(graders, "q01", {heaviest.id: 0})
    decision = choose(question, grade, asked=[], lang="zh")
    assert any(heaviest.id in f.targets for f in question.followups), "the bank gives q01's heaviest criterion a follow-up"
    assert decision.action == "ask" and heaviest.id in decision.aims_at
    assert decision.text == decision.followup.question.zh  # type: ignore[union-attr]


def test_a_real_weak_answer_gets_a_follow_up_on_what_it_missed(graders: Graders) -> None:
    question = graders.bank.get("q02")
    grade = graders.offline.grade(question, ANSWERS["mixed_q02"])
    decision = choose(question, grade, asked=[], lang="en")
    assert decision.action == "ask"
    weakest = {c.id for c in grade.criteria if c.score < c.max_score}
    assert set(decision.aims_at) & weakest or "deeper" in decision.reason
    assert decision.text == decision.followup.question.en  # type: ignore[union-attr]


def test_when_everything_is_covered_it_goes_deeper_starting_with_the_seed_followups(graders: Graders) -> None:
    question = graders.bank.get("q06")
    decision = choose(question, synthetic_grade(graders, "q06", {}), asked=[], lang="zh")
    assert decision.action == "ask" and "deeper" in decision.reason
    assert decision.followup is not None and decision.followup.from_seed


def test_never_repeats_and_respects_the_cap(graders: Graders) -> None:
    question = graders.bank.get("q08")
    grade = synthetic_grade(graders, "q08", {c.id: 0 for c in question.criteria})
    asked: list[str] = []
    for _ in range(len(question.followups)):
        decision = choose(question, grade, asked=asked, lang="zh", max_followups=10)
        assert decision.action == "ask" and decision.followup is not None
        assert decision.followup.id not in asked
        asked.append(decision.followup.id)
    assert choose(question, grade, asked=asked, lang="zh", max_followups=10).action == "move-on"
    capped = choose(question, grade, asked=asked[:2], lang="zh", max_followups=2)
    assert capped.action == "move-on" and "cap" in capped.reason


def test_probed_criteria_are_not_probed_again(graders: Graders) -> None:
    question = graders.bank.get("q01")
    grade = synthetic_grade(graders, "q01", {c.id: 0 for c in question.criteria})
    first = choose(question, grade, asked=[], lang="zh")
    second = choose(question, grade, asked=[first.followup.id], lang="zh")  # type: ignore[union-attr]
    assert second.action == "ask"
    assert not set(second.aims_at) <= set(first.aims_at) or "deeper" in second.reason


@pytest.mark.parametrize("flag", ["empty", "no-knowledge", "gibberish"])
def test_moves_on_after_i_dont_know(graders: Graders, flag: str) -> None:
    question = graders.bank.get("q03")
    grade = synthetic_grade(graders, "q03", {c.id: 0 for c in question.criteria}, flags=[flag])
    assert choose(question, grade, asked=[], lang="zh").action == "move-on"


def test_the_choice_is_deterministic(graders: Graders) -> None:
    question = graders.bank.get("q10")
    grade = graders.offline.grade(question, "用 DDP 的 bucket 在反向时边算边做 all-reduce。")
    decisions = {choose(question, grade, asked=[], lang="zh").followup.id for _ in range(5)}  # type: ignore[union-attr]
    assert len(decisions) == 1
