"""What the candidate reads, in the answer's language (Chinese or English): each criterion's
grade (its anchor, evidence, what is missing, the misconceptions with their corrections), the
feedback prose, and the note on what an offline grade that names no error cannot promise."""

from __future__ import annotations

from interviewer.content.rubric import Lang
from interviewer.grading.grade import CriterionGrade, Grade, MisconceptionFound
from interviewer.grading.offline.caps import criterion_score
from interviewer.grading.offline.matching import EXPLAINED_CREDIT, CriterionResult, Features

# The name and version every grade of the offline grader is signed with; limitation_note knows
# an offline grade by its name.
GRADER_NAME = "offline"
GRADER_VERSION = "1"

_LIMITATION = {
    "zh": "离线评分只认得评分细则里列出的错误说法；没被指出的错误不代表不存在。配置模型后，每个说法都会被逐一判断。",
    "en": "The offline grader only recognises the wrong claims its rubric lists; an error it does not name may still be "
    "there. With a model configured, every claim is judged.",
}


def criterion_grade(result: CriterionResult, lang: Lang) -> CriterionGrade:
    criterion = result.compiled.criterion
    top = criterion.max_score
    score = criterion_score(result)
    level = criterion.levels[score]
    missing = [concept.label for concept in result.compiled.concepts if result.credit.get(concept.id, 0) < EXPLAINED_CREDIT]
    if score < top:
        missing.append(criterion.levels[top].get(lang))
    return CriterionGrade(
        id=criterion.id,
        description=criterion.description.get(lang),
        weight=criterion.weight,
        score=score,
        max_score=top,
        level=level.zh if lang == "zh" else level.en,
        evidence=[u.text for u in result.evidence],
        found=sorted(result.credit),
        missing=missing,
        misconceptions=[
            MisconceptionFound(
                id=m.id,  # type: ignore[attr-defined]
                claim=m.claim.get(lang),  # type: ignore[attr-defined]
                correction=m.correction.get(lang),  # type: ignore[attr-defined]
                evidence=unit.text,
            )
            for m, unit in result.misconceptions
        ],
    )


def feedback(score: float, criteria: list[CriterionGrade], features: Features, lang: Lang) -> str:
    zh = lang == "zh"
    parts: list[str] = []
    if "empty" in features.flags:
        if "steering-attempt" in features.flags:
            return "回答只有对评分者的指令，已被忽略；没有可评分的内容。" if zh else "The answer only addressed the grader: ignored."
        return "没有作答。" if zh else "No answer was given."
    if "no-knowledge" in features.flags:
        return (
            "记为不会。先读下面的参考资料，再来练这道题。"
            if zh
            else "Noted as not known. Read the passages below, then practise this question."
        )
    if "question-echo" in features.flags:
        parts.append("回答基本只是复述了题目，没有自己的内容。" if zh else "The answer mostly repeats the question.")
    if "steering-attempt" in features.flags:
        parts.append("回答中对评分者的指令已被忽略。" if zh else "Instructions addressed to the grader were ignored.")
    for c in criteria:
        for m in c.misconceptions:
            claim = m.claim.rstrip("。.！!；; ")
            correction = m.correction.rstrip("。.！!；; ")
            parts.append(f"错误：{claim}。更正：{correction}。" if zh else f"Wrong: {claim}. In fact: {correction}.")
    strong = [c.description for c in criteria if c.score == c.max_score]
    if strong:
        parts.append(("讲到位的：" if zh else "Covered well: ") + ("；".join(strong) if zh else "; ".join(strong)))
    weak = sorted((c for c in criteria if c.score < c.max_score), key=lambda c: -c.weight * (c.max_score - c.score))
    for c in weak[:2]:
        parts.append(
            f"{c.description}（{c.score}/{c.max_score}）。满分的回答：{c.missing[-1]}"
            if zh
            else f"{c.description} ({c.score}/{c.max_score}). Full marks: {c.missing[-1]}"
        )
    if "keyword-list" in features.flags:
        parts.append("多数术语只是列出，没有解释机制和原因。" if zh else "Most terms are only listed, not explained.")
    if features.filler:
        parts.append(
            "大部分句子没有回答问题，只有一两句讲到了要点：空话不加分，要把要点展开讲机制和原因。"
            if zh
            else "Most sentences say nothing the question asks for; only one or two make a point. "
            "Filler earns nothing: develop the points into mechanisms and reasons."
        )
    elif "padding" in features.flags:
        parts.append("重复的内容不会加分。" if zh else "Repeated content earns nothing twice.")
    if "truncated" in features.flags:
        parts.append("回答过长，只评了前面部分。" if zh else "The answer was too long; only its beginning was graded.")
    return "\n".join(parts)


def limitation_note(grade: Grade) -> str | None:
    """What an offline grade that names no error cannot promise, in the grade's language."""
    if grade.grader != GRADER_NAME or grade.score <= 0 or "llm-fallback" in grade.flags or any(c.misconceptions for c in grade.criteria):
        return None
    return _LIMITATION[grade.lang]
