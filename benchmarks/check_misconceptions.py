"""Check the rubrics' misconception patterns: do they fire where they should, and only there?

    python benchmarks/check_misconceptions.py                 # every question
    python benchmarks/check_misconceptions.py --question q03  # one question
    python benchmarks/check_misconceptions.py --question q03 --text "反向不需要通信……"

Both the question's misconceptions and its follow-ups' are checked. False alarms are looked for in
the question's own reference answers, the top score anchors of its criteria and its follow-ups'
criteria, the corrections of all their misconceptions, the correct answers of the two held-out sets under benchmarks/
and (when ../shared/eval is present) the development set's expert and solid answers; hits are
listed for the development set's misconception and weak answers. With --text, prints what fires.
"""

from __future__ import annotations

import json

import typer

from interviewer.grading.reading import Answer
from interviewer.services import Services
from interviewer.settings import PROJECT_ROOT, Settings

DEV = PROJECT_ROOT.parent / "shared" / "eval" / "dev-answers.jsonl"
HELD_OUT = [PROJECT_ROOT / "benchmarks" / "challenge-answers.jsonl", PROJECT_ROOT / "benchmarks" / "holdout-answers.jsonl"]
CORRECT_KINDS = {"expert", "solid", "short-expert", "plain-words", "mixed-language", "tricky-correct"}


def fired(services: Services, question_id: str, text: str) -> list[tuple[str, str]]:
    """What fires on the text: the question's misconceptions, then its follow-ups' (as "f1/id")."""
    question = services.bank.get(question_id)
    answer = Answer.read(text, services.segmenter)
    found = []
    groups = [("", question.id, question.criteria)] + [(f"{f.id}/", f"{question.id}/{f.id}", f.criteria) for f in question.followups]
    for prefix, key, criteria in groups:
        results, _ = services.offline_grader.analyse(answer, services.offline_grader._compile(key, tuple(criteria)))
        found += [(prefix + m.id, unit.text) for r in results for m, unit in r.misconceptions]  # type: ignore[attr-defined]
    return found


def main(question: str | None = None, text: str | None = None) -> None:
    services = Services(Settings())
    if text is not None:
        assert question, "--text needs --question"
        for mid, span in fired(services, question, text) or [("(none)", "")]:
            print(f"{mid}: {span}")
        return
    dev = [json.loads(line) for line in DEV.read_text(encoding="utf-8").splitlines()] if DEV.exists() else []
    held_out = [json.loads(line) for path in HELD_OUT for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    false_alarms = 0
    for q in services.bank.questions:
        if question and q.id != question:
            continue
        clean = [("reference_answer.zh", q.reference_answer.zh), ("reference_answer.en", q.reference_answer.en)]
        clean += [(f"{c.id}.level3.{lang}", getattr(c.levels[-1], lang)) for c in q.criteria for lang in ("zh", "en")]
        criteria = [*q.criteria, *(c for f in q.followups for c in f.criteria)]
        clean += [(f"{c.id}.level3.{lang}", getattr(c.levels[-1], lang)) for f in q.followups for c in f.criteria for lang in ("zh", "en")]
        corrections = [m.correction for c in criteria for m in c.misconceptions]
        clean += [(f"correction.{lang}", getattr(correction, lang)) for correction in corrections for lang in ("zh", "en")]
        clean += [(f"{r['id']} ({r['kind']})", r["answer"]) for r in held_out if r["question_id"] == q.id and r["kind"] in CORRECT_KINDS]
        clean += [
            (f"dev {r['id']} ({r['kind']})", r["answer"]) for r in dev if r["question_id"] == q.id and r["kind"] in {"expert", "solid"}
        ]
        for where, body in clean:
            for mid, span in fired(services, q.id, body):
                false_alarms += 1
                print(f"FALSE ALARM {q.id} {mid} in {where}: {span[:100]}")
        for r in dev:
            if r["question_id"] == q.id and r["kind"] in {"misconception", "weak"}:
                hits = fired(services, q.id, r["answer"])
                print(f"{q.id} dev {r['id']} ({r['kind']}, expert {r['score']}): {[m for m, _ in hits] or 'nothing found'}")
    print(f"false alarms: {false_alarms}")


if __name__ == "__main__":
    typer.run(main)
