"""The noise of a comparison with another model (:mod:`autopdp.findings.evidence`'s similarity criteria): the
difference of two PDs, paired on their common ICE rows where both kept curves, and the paired z-test of the two
models' mean predictions."""

from __future__ import annotations

import numpy as np
from scipy import stats

from .words import _finish, _item
from .significance import (
    ANALYTIC_P_FLOOR, NoiseModel, analytic_p, noise_gap_reason, pd_noise_model, weighted_noise_factor,
)


def _other_curve(other, target, r) -> np.ndarray:
    """The comparison model's PD for ``target`` on ``r``'s grid (NaN when it has none)."""
    try:
        return np.asarray(other.average[other.target_index(target)], dtype=float).ravel()
    except (AttributeError, ValueError, TypeError):
        return np.full(int(np.prod(r.grid_shape)), np.nan)


def _paired_noise(r, t, other, target, sample_weight):
    """The noise of the difference of two PDs: paired on their common ICE rows when both kept curves."""
    if other is None:
        return None, ""
    try:
        t2 = other.target_index(target)
    except ValueError:
        return None, ""
    if r.individual is not None and other.individual is not None:
        rows_a = np.arange(np.asarray(r.individual).shape[1]) if r.ice_rows is None else np.asarray(r.ice_rows)
        rows_b = np.arange(np.asarray(other.individual).shape[1]) if other.ice_rows is None else np.asarray(other.ice_rows)
        common, ia, ib = np.intersect1d(rows_a, rows_b, return_indices=True)
        if common.size >= 2:
            a = np.asarray(r.individual[t], dtype=float).reshape(rows_a.size, -1)[ia]
            b = np.asarray(other.individual[t2], dtype=float).reshape(rows_b.size, -1)[ib]
            from .significance import _effective_rows, _ice_design, gaussian_gap
            design = _ice_design(r, sample_weight)
            if design is None:
                factor = weighted_noise_factor(a - b, None, _effective_rows(r, t, sample_weight))
            else:
                w, pi, total = design[0][ia], design[1][ia], design[2]
                h = np.where(pi > 0, w / np.where(pi > 0, pi, 1.0), 0.0)
                gap = gaussian_gap(_effective_rows(r, t, sample_weight), a - b, h, weighted=sample_weight is not None)
                if gap:
                    return None, gap
                factor = weighted_noise_factor(a - b, w, pi=pi, total=total)
            return NoiseModel(factor=factor, shape=tuple(r.grid_shape),
                              source=f"paired on {common.size:,} rows"), f"paired on {common.size:,} rows"
    na, nb = pd_noise_model(r, t, sample_weight), pd_noise_model(other, t2, sample_weight)
    if na is None or nb is None:
        return None, noise_gap_reason(r, t, sample_weight) or noise_gap_reason(other, t2, sample_weight)
    # unpaired: the two PDs' noise added as if independent
    return NoiseModel(factor=np.vstack([na.factor, nb.factor]), shape=tuple(r.grid_shape),
                      source="unpaired"), "unpaired: the two PDs' noise taken as independent"


def _level_difference(inputs, name, other_pred, threshold, cfg):
    """The mean difference of the two models' predictions over the rows, with a paired z-test."""
    pred = inputs.predictions
    if pred is None or other_pred is None or np.asarray(other_pred).shape != pred.shape:
        return None
    diff = pred - np.asarray(other_pred, dtype=float)
    sw = np.ones(diff.shape[0]) if inputs.sample_weight is None else np.asarray(inputs.sample_weight, dtype=float)
    W = sw.sum()
    means = (sw @ diff) / W
    t = int(np.nanargmax(np.abs(means)))
    dev = diff[:, t] - means[t]
    n_eff = W * W / float(np.sum(sw * sw))
    se = float(np.sqrt(np.sum(sw * sw * dev * dev)) / W * np.sqrt(n_eff / max(n_eff - 1, 1)))
    value = float(abs(means[t]))
    if value <= 1e-12 * max(1.0, float(np.nanstd(pred))):
        p = 1.0
    elif se <= 0:
        p = ANALYTIC_P_FLOOR
    else:
        p = analytic_p(2 * stats.norm.sf(value / se))
    item = _item(f"similarity_level:{name}", (), value, threshold(t), p=p,
                 statistic="mean difference of the two models' predictions over the rows",
                 test=f"paired z-test over {diff.shape[0]:,} rows",
                 details={"mean_difference": float(means[t]), "target_index": t, "standard_error": se})
    return _finish({(): item}, cfg)[()]
