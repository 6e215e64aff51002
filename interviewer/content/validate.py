"""``python -m interviewer.content.validate [qNN ...]``: check the shipped bank, knowledge and glossary together.

With question ids, only those rubric files are checked (useful while a bank is being written).
"""

from __future__ import annotations

import sys
from pathlib import Path

from interviewer.content.bank import load_bank, load_question
from interviewer.content.glossary import Glossary
from interviewer.content.knowledge import discover, load_passages
from interviewer.errors import BankError, InterviewerError

ROOT = Path(__file__).resolve().parents[2]


def main(argv: list[str]) -> int:
    try:
        knowledge = ROOT / "knowledge"
        passages = [p for f in discover([knowledge], shipped=knowledge) for p in load_passages(f, True)]
        glossary = Glossary.load(knowledge / "glossary")
        ids = {p.source for p in passages}
        if argv:
            for question_id in argv:
                path = ROOT / "rubrics" / f"{question_id}.yaml"
                question = load_question(path)
                for ref in question.all_references():
                    if ref not in ids:
                        raise BankError(str(path), f"reference '{ref}' is not a knowledge passage", question_id)
            count = len(argv)
        else:
            count = len(load_bank(ROOT / "rubrics", ids).questions)
    except InterviewerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"ok: {count} questions, {len(passages)} passages, {len(glossary.terms)} glossary terms")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
