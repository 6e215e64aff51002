"""Agreement between a grader and expert scores: Pearson, Spearman, quadratic-weighted kappa, MAE."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


def pearson(x: npt.ArrayLike, y: npt.ArrayLike) -> float:
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.size < 2 or a.std() == 0 or b.std() == 0:
        return 0.0
    return float(np.corrcoef(a, b)[0, 1])


def _ranks(values: np.ndarray) -> np.ndarray:
    """Average ranks, ties sharing the mean of their positions."""
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values))
    sorted_values = values[order]
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and sorted_values[j + 1] == sorted_values[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman(x: npt.ArrayLike, y: npt.ArrayLike) -> float:
    return pearson(_ranks(np.asarray(x, dtype=float)), _ranks(np.asarray(y, dtype=float)))


def partial_spearman(x: npt.ArrayLike, y: npt.ArrayLike, control: npt.ArrayLike) -> float:
    """Spearman of x and y with the control (e.g. answer length) partialled out."""
    rx, ry, rz = (_ranks(np.asarray(v, dtype=float)) for v in (x, y, control))
    r_xy, r_xz, r_yz = pearson(rx, ry), pearson(rx, rz), pearson(ry, rz)
    denominator = np.sqrt(max(1e-12, (1 - r_xz**2) * (1 - r_yz**2)))
    return float((r_xy - r_xz * r_yz) / denominator)


def quadratic_weighted_kappa(x: npt.ArrayLike, y: npt.ArrayLike, low: int = 0, high: int = 10) -> float:
    a = np.clip(np.rint(np.asarray(x, dtype=float)), low, high).astype(int) - low
    b = np.clip(np.rint(np.asarray(y, dtype=float)), low, high).astype(int) - low
    n = high - low + 1
    observed = np.zeros((n, n))
    for i, j in zip(a, b, strict=True):
        observed[i, j] += 1
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / max(1, len(a))
    weights = np.array([[(i - j) ** 2 for j in range(n)] for i in range(n)]) / (n - 1) ** 2
    denominator = (weights * expected).sum()
    return float(1 - (weights * observed).sum() / denominator) if denominator else 0.0


def mean_absolute_error(x: npt.ArrayLike, y: npt.ArrayLike) -> float:
    return float(np.mean(np.abs(np.asarray(x, dtype=float) - np.asarray(y, dtype=float)))) if np.size(x) else 0.0
