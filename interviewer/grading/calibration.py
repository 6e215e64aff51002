"""Mapping the offline grader's features onto the 0-10 scale of a senior interviewer.

The method (fitted by ``python -m interviewer.grading.fit``, stored in ``calibration.json`` beside this file):

1. ``adjusted = raw × (1 − m·min(misconceptions, 2)) × (k if keyword-list else 1)``, where ``raw``
   is the weighted share of the rubric the answer covers (0-1), ``m`` the penalty per
   misconception and ``k`` the factor for an answer that only lists terms.
2. ``score = g(adjusted)``, a monotone piecewise-linear function through fixed knots on 0-1 whose
   values are fitted by least squares and then made non-decreasing (pool-adjacent-violators).
3. An answer with a misconception scores at most ``c``: a core error is what a strict interviewer
   remembers, however much else the answer covers.

``m``, ``k`` and ``c`` are chosen by grid search to maximise agreement on the development answers. No
feature depends on the answer's length, so a long shallow answer cannot buy score with words.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

CALIBRATION_FILE = Path(__file__).with_name("calibration.json")
KNOTS = (0.0, 0.15, 0.3, 0.45, 0.6, 0.75, 1.0)
CAPS = (10.0, 5.0, 4.5, 4.0, 3.5, 3.0, 2.5)  # the score's ceiling with a misconception; 10 is none


class HasFeatures(Protocol):
    raw: float
    misconceptions: int
    flags: list[str]


@dataclass
class Calibration:
    misconception_penalty: float = 0.3
    keyword_factor: float = 0.6
    misconception_cap: float = 10.0
    knots: list[float] = field(default_factory=lambda: list(KNOTS))
    values: list[float] = field(default_factory=lambda: [10 * k for k in KNOTS])
    fitted_on: str = "default (identity)"

    def adjusted(self, features: HasFeatures) -> float:
        value = features.raw * (1 - self.misconception_penalty * min(features.misconceptions, 2))
        if "keyword-list" in features.flags:
            value *= self.keyword_factor
        return max(0.0, min(1.0, value))

    def score(self, features: HasFeatures) -> float:
        mapped = float(np.interp(self.adjusted(features), self.knots, self.values))
        if features.misconceptions:
            mapped = min(mapped, self.misconception_cap)
        return round(max(0.0, min(10.0, mapped)), 1)

    @classmethod
    def load(cls, path: Path = CALIBRATION_FILE, section: str = "rubric") -> Calibration:
        """The offline grader's calibration (``rubric``), or the model grader's (``model``: the
        same form over the model's criterion levels); the identity when the file has none."""
        data = _read(path).get(section)
        if data:
            return cls(**data)
        return cls.identity() if section == "model" else cls()

    @classmethod
    def identity(cls) -> Calibration:
        """Ten times the raw share, no penalty, no cap: the model grader before any fit."""
        return cls(misconception_penalty=0.0, keyword_factor=1.0, fitted_on="identity")

    def save(self, path: Path = CALIBRATION_FILE, section: str = "rubric") -> None:
        _write(path, section, asdict(self))


@dataclass
class LevelFeatures:
    """A graded answer as a calibration reads it: the weighted share of full marks its criterion
    levels give (0-1), the misconceptions named, and the reader's flags."""

    raw: float
    misconceptions: int
    flags: list[str]

    @classmethod
    def of(cls, criteria: Sequence[Any], flags: Sequence[str]) -> LevelFeatures:
        total = sum(c.weight for c in criteria) or 1.0
        raw = sum(c.weight * c.score / c.max_score for c in criteria) / total
        return cls(raw, sum(len(c.misconceptions) for c in criteria), list(flags))


def _read(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def _write(path: Path, section: str, value: dict[str, Any]) -> None:
    data = _read(path)
    data[section] = value
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _monotone(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Pool-adjacent-violators: the closest non-decreasing sequence (weighted least squares)."""
    blocks: list[list[float]] = []  # [value, weight, count]
    for v, w in zip(values, weights, strict=True):
        blocks.append([float(v), float(w), 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            v2, w2, n2 = blocks.pop()
            v1, w1, n1 = blocks.pop()
            total = w1 + w2 or 1.0
            blocks.append([(v1 * w1 + v2 * w2) / total, w1 + w2, n1 + n2])
    out: list[float] = []
    for value, _, count in blocks:
        out.extend([value] * int(count))
    return np.array(out)


def _fit_values(x: np.ndarray, y: np.ndarray, knots: Sequence[float]) -> list[float]:
    """Least-squares values at the knots of a piecewise-linear interpolant, made monotone."""
    k = np.asarray(knots)
    basis = np.zeros((len(x), len(k)))
    for i, xi in enumerate(x):
        j = min(max(int(np.searchsorted(k, xi, side="right")) - 1, 0), len(k) - 2)
        t = (xi - k[j]) / (k[j + 1] - k[j])
        basis[i, j] = 1 - t
        basis[i, j + 1] = t
    ridge = 0.5  # keeps knots with few points near a straight line instead of wild
    prior = 10 * k
    a = basis.T @ basis + ridge * np.eye(len(k))
    b = basis.T @ y + ridge * prior
    values = np.linalg.solve(a, b)
    support = basis.sum(axis=0) + ridge
    return [round(float(v), 3) for v in np.clip(_monotone(values, support), 0, 10)]


def fit(features: Sequence[HasFeatures], scores: Sequence[float], label: str) -> Calibration:
    """Grid-search the penalties and the cap, fit the knot values, keep the best by squared error."""
    y = np.asarray(scores, dtype=float)
    best: tuple[float, Calibration] | None = None
    for penalty in np.arange(0.0, 0.46, 0.05):
        for factor in np.arange(0.3, 1.01, 0.1):
            trial = Calibration(misconception_penalty=round(float(penalty), 2), keyword_factor=round(float(factor), 2))
            x = np.array([trial.adjusted(f) for f in features])
            trial.values = _fit_values(x, y, trial.knots)
            for cap in CAPS:
                capped = Calibration(**{**asdict(trial), "misconception_cap": cap})
                error = float(np.mean([(capped.score(f) - t) ** 2 for f, t in zip(features, y, strict=True)]))
                if best is None or error < best[0] - 1e-9:
                    best = (error, capped)
    assert best is not None
    calibration = best[1]
    calibration.fitted_on = label
    return calibration


@dataclass
class ReferenceCalibration:
    """Reference-only grading: a ridge regression ``linear = bias + Σ coef·x`` over the reference
    features, then ``score = g((linear - low) / (high - low))`` with ``g`` monotone piecewise-linear
    through :data:`KNOTS` (fitted like the rubric calibration)."""

    coefficients: list[float] = field(default_factory=lambda: [10.0] + [0.0] * 20)
    bias: float = 0.0
    low: float = 0.0
    high: float = 10.0
    values: list[float] = field(default_factory=lambda: [10 * k for k in KNOTS])
    fitted_on: str = "default"

    def linear(self, vector: Sequence[float]) -> float:
        return self.bias + float(np.dot(self.coefficients, vector))

    def score(self, vector: Sequence[float]) -> float:
        z = (min(max(self.linear(vector), self.low), self.high) - self.low) / ((self.high - self.low) or 1.0)
        return round(max(0.0, min(10.0, float(np.interp(z, KNOTS, self.values)))), 1)

    @classmethod
    def load(cls, path: Path = CALIBRATION_FILE) -> ReferenceCalibration:
        data = _read(path).get("reference")
        return cls(**data) if data else cls()

    def save(self, path: Path = CALIBRATION_FILE) -> None:
        _write(path, "reference", asdict(self))


def fit_reference(vectors: npt.ArrayLike, scores: npt.ArrayLike, label: str) -> ReferenceCalibration:
    x = np.asarray(vectors, dtype=float)
    y = np.asarray(scores, dtype=float)
    design = np.hstack([x, np.ones((len(x), 1))])
    ridge = 0.1 * np.eye(design.shape[1])
    ridge[-1, -1] = 0.0  # the bias is not shrunk
    solution = np.linalg.solve(design.T @ design + ridge, design.T @ y)
    linear = design @ solution
    low, high = float(np.percentile(linear, 1)), float(np.percentile(linear, 99))
    z = (np.clip(linear, low, high) - low) / ((high - low) or 1.0)
    return ReferenceCalibration(
        coefficients=[round(float(c), 5) for c in solution[:-1]],
        bias=round(float(solution[-1]), 5),
        low=round(low, 5),
        high=round(high, 5),
        values=_fit_values(z, y, KNOTS),
        fitted_on=label,
    )
