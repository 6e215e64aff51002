from __future__ import annotations

import pytest
import yaml

from interviewer.grading.grade import CriterionGrade, Grade
from interviewer.interview.followups import choose
from interviewer.services import Services
from interviewer.settings import PROJECT_ROOT

ANSWERS = yaml.safe_load((PROJECT_ROOT / "tests" / "data" / "answers.yaml").read_text(encoding="utf-8"))


def synthetic_grade(services: Services, question_id: str, scores: dict[str, int], flags: list[str] | None = None) -> Grade:
    question = services.bank.get(question_id)
    criteria = [
        CriterionGrade(id=c.id, description="", weight=c.weight, score=scores.get(c.id, c.max_score), max_score=c.max_score, level="")
        for c in question.criteria
    ]
    return Grade(score=5, criteria=criteria, feedback="", lang="zh", flags=flags or [], grader="test", grader_version="0")


def test_aims_at_the_most_important_missed_criterion(services: Services) -> None:
    question = services.bank.get("q01")
    heaviest = max(question.criteria, key=lambda c: c.weight)
    grade = synthetic_grade(services, "q01", {heaviest.id: 0})
    decision = choose(question, grade, asked=[])
    assert any(heaviest.id in f.targets for f in question.followups), "the bank gives q01's heaviest criterion a follow-up"
    assert decision.action == "ask" and heaviest.id in decision.aims_at
    followup = decision.followup_of(question)
    assert followup is not None and heaviest.id in followup.targets and decision.wording is None


def test_a_real_weak_answer_gets_a_follow_up_on_what_it_missed(services: Services) -> None:
    question = services.bank.get("q02")
    grade = services.offline_grader.grade(question, ANSWERS["mixed_q02"])
    decision = choose(question, grade, asked=[])
    assert decision.action == "ask" and "missed or got wrong" in decision.reason
    # it aims at the criterion with the largest weighted shortfall that has a follow-up
    gaps = {c.id: c.weight * (1.0 if c.misconceptions else 1 - c.score / c.max_score) for c in grade.criteria}
    reachable = [cid for cid in gaps if gaps[cid] > 0 and any(cid in f.targets for f in question.followups)]
    assert reachable, "the weak answer leaves a criterion a follow-up can probe"
    assert decision.aims_at and max(gaps[cid] for cid in decision.aims_at) == max(gaps[cid] for cid in reachable)


def test_when_everything_is_covered_no_follow_up_re_asks_it(services: Services) -> None:
    question = services.bank.get("q06")
    decision = choose(question, synthetic_grade(services, "q06", {}), asked=[])
    assert decision.action == "move-on" and "already covers" in decision.reason


def test_a_follow_up_whose_targets_are_all_evidenced_is_never_chosen(services: Services) -> None:
    """Each follow-up in turn: its targets at full marks, everything else at zero: it is never the choice."""
    for question in services.bank.questions:
        for followup in question.followups:
            scores = {c.id: (c.max_score if c.id in followup.targets else 0) for c in question.criteria}
            decision = choose(question, synthetic_grade(services, question.id, scores), asked=[], max_followups=4)
            assert decision.followup != followup.id, (question.id, followup.id)


def test_never_repeats_and_respects_the_cap(services: Services) -> None:
    question = services.bank.get("q08")
    grade = synthetic_grade(services, "q08", {c.id: 0 for c in question.criteria})
    asked: list[str] = []
    for _ in range(len(question.followups)):
        decision = choose(question, grade, asked=asked, max_followups=10)
        assert decision.action == "ask" and decision.followup is not None
        assert decision.followup not in asked
        asked.append(decision.followup)
    assert choose(question, grade, asked=asked, max_followups=10).action == "move-on"
    capped = choose(question, grade, asked=asked[:2], max_followups=2)
    assert capped.action == "move-on" and "cap" in capped.reason


def test_probed_criteria_are_not_probed_again(services: Services) -> None:
    question = services.bank.get("q01")
    grade = synthetic_grade(services, "q01", {c.id: 0 for c in question.criteria})
    first = choose(question, grade, asked=[])
    second = choose(question, grade, asked=[first.followup or ""])
    assert second.action == "ask"
    assert not set(second.aims_at) <= set(first.aims_at) or "deeper" in second.reason


@pytest.mark.parametrize("flag", ["empty", "no-knowledge", "gibberish"])
def test_moves_on_after_i_dont_know(services: Services, flag: str) -> None:
    question = services.bank.get("q03")
    grade = synthetic_grade(services, "q03", {c.id: 0 for c in question.criteria}, flags=[flag])
    assert choose(question, grade, asked=[]).action == "move-on"


def test_the_choice_is_deterministic(services: Services) -> None:
    question = services.bank.get("q10")
    grade = services.offline_grader.grade(question, "用 DDP 的 bucket 在反向时边算边做 all-reduce。")
    decisions = {choose(question, grade, asked=[]).followup for _ in range(5)}
    assert len(decisions) == 1
