"""``python -m interviewer.grading.fit DEV.jsonl [ZH_ADS.jsonl]``: refit ``calibration.json``.

The rubric calibration is fitted on expert-scored answers to bank questions; the reference
calibration on a reference-answer set (lines with ``reference1..3`` and ``score``). Both report a
leave-one-question-out estimate first, so the figure that reaches the README is not an in-sample one.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from interviewer.grading import metrics
from interviewer.grading.calibration import fit, fit_reference
from interviewer.grading.reading import Answer
from interviewer.services import Services
from interviewer.settings import Settings


def held_out_predictions(groups: list[Any], train: Callable[[list[int]], Any], predict: Callable[[Any, int], float]) -> np.ndarray:
    """Leave-one-group-out: each item predicted by a model fitted without its group (its question)."""
    predicted = np.zeros(len(groups))
    for held_out in sorted(set(groups), key=str):
        model = train([i for i, g in enumerate(groups) if g != held_out])
        for i, g in enumerate(groups):
            if g == held_out:
                predicted[i] = predict(model, i)
    return predicted


def rubric(services: Services, path: Path) -> None:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    features = []
    for row in rows:
        question = services.bank.get(row["question_id"])
        answer = Answer.read(row["answer"], services.segmenter)
        compiled = services.offline_grader._compile(question.id, tuple(question.criteria))
        features.append(services.offline_grader.analyse(answer, compiled)[1])
    scores = [float(r["score"]) for r in rows]
    predicted = held_out_predictions(
        [r["question_id"] for r in rows],
        lambda train: fit([features[i] for i in train], [scores[i] for i in train], "cross-validation"),
        lambda model, i: model.score(features[i]),
    )
    print(
        f"rubric, leave-one-question-out on {path.name}: Spearman {metrics.spearman(predicted, scores):.3f}, "
        f"QWK {metrics.quadratic_weighted_kappa(predicted, scores):.3f}, MAE {metrics.mean_absolute_error(predicted, scores):.2f}"
    )
    model = fit(features, scores, f"{path.name} ({len(rows)} answers)")
    model.save()
    print(
        f"saved: penalty {model.misconception_penalty}, keyword factor {model.keyword_factor}, "
        f"misconception cap {model.misconception_cap}, values {model.values}"
    )


def reference(services: Services, path: Path) -> None:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    vectors, scores, groups = [], [], []
    for row in rows:
        refs = [row[k] for k in ("reference", "reference1", "reference2", "reference3") if str(row.get(k) or "").strip()]
        vectors.append(services.reference_grader.best_features(row["answer"], refs, row.get("question", "")).vector())
        scores.append(float(row["score"]))
        groups.append(row.get("q_id") or row.get("question"))
    x, y = np.array(vectors), np.array(scores)
    predicted = held_out_predictions(
        groups, lambda train: fit_reference(x[train], y[train], "cross-validation"), lambda model, i: model.score(x[i])
    )
    print(
        f"reference, leave-one-question-out on {path.parent.name}: Pearson {metrics.pearson(predicted, y):.3f}, "
        f"Spearman {metrics.spearman(predicted, y):.3f}, QWK {metrics.quadratic_weighted_kappa(predicted, y):.3f}"
    )
    model = fit_reference(x, y, f"{path.parent.name}/{path.name} ({len(y)} answers)")
    model.save()
    print("saved reference calibration")


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    services = Services(Settings())
    rubric(services, Path(argv[0]))
    if len(argv) > 1:
        reference(services, Path(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
