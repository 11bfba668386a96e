"""Similarity to the data's incidence (AutoPDP paper, section 2.3, eq. 8-9).

``g`` is what the data says at each grid point: among the rows whose value is
nearest that grid point (the same rows that give the density weights, eq. 5),

* for a classifier, the share of rows whose observed class is the target class
  (eq. 8), compared with the PD of that class's probability (or, for crisp
  labels, the share of rows predicted as that class);
* for a regressor, the mean observed target (the issue's reading of eq. 9, which
  averages over the rows of each category).

Categorical features use the rows of each level; 2D surfaces the rows of each
cell.  A grid point without rows has no incidence (NaN) and weighs nothing.
A decision function is not a rate, so incidence is "n/a" for it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..cells import GridCells, cell_sums

from .base import UtilityScore, gap_score, not_applicable

__all__ = ["incidence_curve", "observed_values", "score_incidence", "KeptObserved", "ObservedOf"]

UTILITY = "incidence"


def incidence_curve(cells: np.ndarray, y_values: np.ndarray, shape: tuple[int, ...], sample_weight=None) -> np.ndarray:
    """Mean of ``y_values`` over the rows of each grid cell (NaN for empty cells); weighted by ``sample_weight`` if given.

    ``cells`` holds each row's flat cell index (-1 for none): an array or a :class:`~autopdp.scores.cells.GridCells`.
    """
    cells = GridCells.of(cells, shape)
    count = cell_sums(cells, weights=sample_weight)  # the rows' counts (or weights) and sums of y, chunk by chunk
    total = cell_sums(cells, values=y_values, weights=sample_weight)
    with np.errstate(invalid="ignore", divide="ignore"):
        curve = np.where(count > 0, total / np.where(count > 0, count, 1.0), np.nan)  # a weight total below 1 too
    return curve.reshape(shape)


@dataclass(frozen=True)
class ObservedOf:
    """What a row partition makes its observed values of: :func:`observed_values` for ``target`` (what travels to a
    worker for :class:`KeptObserved`)."""

    target: object
    is_classifier: bool

    def of(self, values) -> np.ndarray | None:
        """The observed values of a partition's kept target ``values`` ``(rows, 1)``."""
        return observed_values(np.asarray(values)[:, 0], self.target, self.is_classifier)


@dataclass(frozen=True, eq=False)
class KeptObserved:
    """:func:`observed_values` of a target kept on a cluster's row partitions (:class:`~autopdp.pd.kept.KeptValues`
    ``(rows, 1)``): made where the target is, a partition at a time (:attr:`spec`), never as a row-long array here.
    Only ``target`` and ``is_classifier`` travel to the workers."""

    kept: object
    target: object
    is_classifier: bool

    @property
    def spec(self) -> ObservedOf:
        return ObservedOf(self.target, self.is_classifier)


def observed_values(y, target, is_classifier: bool) -> np.ndarray | None:
    """What the incidence averages per row: 1.0/0.0 for "the observed class is ``target``" (classifier),
    else ``y`` as numbers; None when a regressor's ``y`` is not numeric."""
    y = np.asarray(y)
    if is_classifier:  # each distinct label compared once (no text copy of every row's label)
        codes, labels = pd.factorize(y, use_na_sentinel=False)
        labels = np.asarray(labels)
        return ((labels == target) | (labels.astype(str) == str(target))).astype(float)[codes]
    try:
        return np.asarray(y, dtype=float)  # a float target as it is (no copy)
    except (TypeError, ValueError):
        return None


def score_incidence(result, *, target_index: int, weights: np.ndarray, cells: np.ndarray | None, y, is_classifier: bool, loss: str = "l2",
                    sample_weight=None, y_values=None, curve=None) -> UtilityScore:
    """Score how far the PD is from the observed incidence (or mean target).

    ``cells``: flat grid-cell index of every data row (-1 for none); ``y``: the
    observed target of those rows (None when not given); ``y_values``:
    ``observed_values(y, target, is_classifier)`` when the caller has it already; ``curve``: the
    :func:`incidence_curve` when the caller has it already (then ``cells`` is not read).
    """
    target = result.targets[target_index]
    if y is None or (cells is None and curve is None and y_values is not None):
        return not_applicable(UTILITY, "needs the observed target y (pass y to audit).", target)
    if result.response == "decision_function":
        return not_applicable(
            UTILITY, "the response is a decision function, not a rate; use response='predict_proba' to compare with incidence.",
            target,
        )
    if result.centered:
        return not_applicable(UTILITY, "a centred PD cannot be compared with incidence rates.", target)
    if y_values is None:
        y_values = observed_values(y, target, is_classifier)
    if y_values is None:
        return not_applicable(UTILITY, "the target y is not numeric, so it has no mean to compare with.", target)
    g = incidence_curve(cells, y_values, result.grid_shape, sample_weight) if curve is None else curve
    f = np.asarray(result.average[target_index], dtype=float)
    return gap_score(UTILITY, f, g, weights, loss, target, what="share of class" if is_classifier else "mean target")
