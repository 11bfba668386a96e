"""Similarity among models (AutoPDP paper, section 2.4, eq. 10).

``g`` is the PD of a comparison model on exactly the same grid and data; the
score is the standard utility between the two PDs, one score per comparison
model, id ``similarity:<name>``.  The details split the difference into a
constant ``level_shift`` (the density-weighted mean of ``f - g``: the models'
overall levels differ, the same for every feature of an additive model) and a
``shape_gap`` (the standard utility of ``f - g`` less that shift: the feature's
learned relationship differs), which is the score: it ranks and selects, so a feature the comparison model
only shifts scores 0 (``total_gap`` keeps the paper's eq. 10 gap of ``f`` and ``g``).  A comparison model
identical to the model scores 0; the feature whose learned relationship differs most ranks first.
"""

from __future__ import annotations

import numpy as np

from .base import UtilityScore, gap_score, not_applicable, standard_utility

__all__ = ["score_similarity", "similarity_id"]


def similarity_id(name: str) -> str:
    return f"similarity:{name}"


def score_similarity(result, other, *, name: str, target_index: int, weights: np.ndarray, loss: str = "l2") -> UtilityScore:
    """Score the gap between ``result`` and the comparison model's PD ``other``."""
    utility = similarity_id(name)
    target = result.targets[target_index]
    if other is None:
        return not_applicable(utility, f"the comparison model {name!r} has no PD for these features.", target)
    try:
        t_other = other.target_index(target)
    except ValueError:
        return not_applicable(utility, f"the comparison model {name!r} has no target {target!r}.", target)
    if other.grid_shape != result.grid_shape:
        return not_applicable(utility, f"the comparison model {name!r} was evaluated on another grid.", target)
    f = np.asarray(result.average[target_index], dtype=float)
    g = np.asarray(other.average[t_other], dtype=float)
    d = (f - g).ravel()
    w = np.asarray(weights, dtype=float).ravel()
    ok = np.isfinite(d) & (w > 0)
    if not ok.any():
        return not_applicable(utility, "no data near any grid point.", target)
    level = float(np.sum(w[ok] * d[ok]) / w[ok].sum())
    total = standard_utility(f, g, weights, loss)
    # the score is the shape gap: the gap once the constant shift is set aside (the same for every feature of an
    # additive model, so it says nothing of this feature); it ranks and selects, the level is stated once
    shape = standard_utility(f - level, g, weights, loss)
    return gap_score(utility, f - level, g, weights, loss, target, model=name, level_shift=level, shape_gap=shape,
                     total_gap=total)
