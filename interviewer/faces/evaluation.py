"""``interviewer eval``: grade a labelled JSONL and measure agreement with the expert scores."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from interviewer.faces.batch import grade_line, read_lines
from interviewer.grading import metrics
from interviewer.grading.grade import RubricGrader
from interviewer.services import Services

NO_SCORE = "no expert 'score' to compare with"


@dataclass
class EvalReport:
    n: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)
    predicted: list[float] = field(default_factory=list)
    expert: list[float] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    named: list[bool] = field(default_factory=list)  # the grade names a misconception

    def why_nothing_compared(self) -> str | None:
        """Why no grade could be set against an expert score, or None when some were: figures of
        nothing print as zeros, which read as a grader that agrees with no one."""
        if self.predicted:
            return None
        if not self.n:
            return "no answers to compare: the file has no non-blank line"
        if all(e["error"] == NO_SCORE for e in self.errors):
            return (
                "no line has an expert 'score' to compare the grades with: eval needs labelled lines "
                "(answer, question_id or question, score, kind); `interviewer grade` grades unlabelled answers"
            )
        first = self.errors[0]
        return f"none of the {self.n} line(s) could be compared; line {first['line']}: {first['error']}"

    def summary(self) -> dict[str, Any]:
        by_kind: dict[str, list[tuple[float, float, bool]]] = defaultdict(list)
        for kind, p, e, named in zip(self.kinds, self.predicted, self.expert, self.named, strict=True):
            by_kind[kind].append((p, e, named))
        return {
            "n": self.n,
            "graded": len(self.predicted),
            "errors": len(self.errors),
            "pearson": round(metrics.pearson(self.predicted, self.expert), 3),
            "spearman": round(metrics.spearman(self.predicted, self.expert), 3),
            "qwk": round(metrics.quadratic_weighted_kappa(self.predicted, self.expert), 3),
            "mae": round(metrics.mean_absolute_error(self.predicted, self.expert), 2),
            "spearman_length_partialled": round(metrics.partial_spearman(self.predicted, self.expert, self.lengths), 3),
            "by_kind": {
                kind: {
                    "n": len(pairs),
                    "mean_score": round(sum(p for p, _, _ in pairs) / len(pairs), 2),
                    "mean_expert": round(sum(e for _, e, _ in pairs) / len(pairs), 2),
                    "max_score": max(p for p, _, _ in pairs),
                    "misconception_named": sum(named for *_, named in pairs),
                }
                for kind, pairs in sorted(by_kind.items())
            },
        }


def evaluate(services: Services, grader: RubricGrader, lines: Iterable[bytes | str], progress: Any = None) -> EvalReport:
    report = EvalReport()
    for number, value, error in read_lines(lines):
        report.n += 1
        if progress is not None:
            progress()
        if value is None:
            report.errors.append({"line": number, "error": error})
            continue
        if "score" not in value:
            report.errors.append({"line": number, "error": NO_SCORE})
            continue
        result = grade_line(services, grader, number, value)
        if "error" in result:
            report.errors.append({"line": number, "error": result["error"]})
            continue
        try:
            expert = float(value["score"])
        except (TypeError, ValueError):
            report.errors.append({"line": number, "error": f"score is not a number: {value['score']!r}"})
            continue
        report.predicted.append(result["grade"]["score"])
        report.expert.append(expert)
        report.lengths.append(len(str(value.get("answer", ""))))
        report.kinds.append(str(value.get("kind", "all")))
        report.named.append(any(c["misconceptions"] for c in result["grade"]["criteria"]))
    return report
