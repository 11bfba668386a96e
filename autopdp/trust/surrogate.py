"""Surrogate ("fingerprint") importance, AutoPDP paper section 5.

The model is distilled into an additive model: per numeric feature a cubic
B-spline basis (scikit-learn's SplineTransformer), per categorical feature a
one-hot basis, and a ridge regression (RidgeCV) fitted to the model's own
predictions on the data.  A feature's surrogate importance is the standard
deviation over the rows of its additive component; the fidelity is the R^2 of
the surrogate against the model.  A low fidelity means the model is far from
additive and the surrogate's importances say little.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..pd.data import Frame
from ..pd.kept import KeptColumn

__all__ = ["Surrogate", "fit_surrogate", "surrogate_width"]


@dataclass(frozen=True)
class Surrogate:
    importance: dict  # feature -> importance
    fidelity: float  # R^2 against the model's predictions


def _basis(values, kind, n_knots, max_levels=None):
    if kind == "numeric":
        from sklearn.preprocessing import SplineTransformer

        x = np.asarray(values, dtype=float)
        med = np.nanmedian(x) if np.isfinite(x).any() else 0.0
        x = np.where(np.isfinite(x), x, med)
        if np.unique(x).size < 3:
            return (x - x.mean())[:, None]
        basis = SplineTransformer(n_knots=n_knots, degree=3, knots="quantile").fit_transform(x[:, None])
        if not np.isfinite(basis).all():
            # quantile knots that floating point cannot separate (values a few subnormals apart): a linear term
            return (x - x.mean())[:, None]
        return basis
    from .ood import level_codes

    codes, levels = level_codes(values, max_levels)  # beyond max_levels the rare levels are pooled into one
    onehot = np.zeros((codes.size, len(levels)))
    onehot[np.arange(codes.size), codes] = 1.0
    return onehot


def surrogate_width(frame: Frame, kinds: dict, n_knots: int = 6, max_levels: int | None = None,
                    facts: dict | None = None) -> int:
    """Columns of the surrogate's design: ``n_knots + 2`` per numeric feature, per categorical feature its
    levels (at most ``max_levels`` kept, one pooled, one missing; ``facts``: see
    :func:`autopdp.trust.ood.support_width`)."""
    from .ood import support_width

    numeric = sum(1 for k in kinds.values() if k == "numeric")
    return numeric * (n_knots + 2) + support_width(frame, {f: k for f, k in kinds.items() if k != "numeric"},
                                                    max_levels, facts)


#: Bytes budgeted per row and design column: the design and the block being built take 16 (:func:`_ridge_gcv`
#: keeps no copy of the design); the budget stays at the 24 of scikit-learn's RidgeCV (the design, the blocks and
#: its centred copy), so that ``max_batch_mb`` caps the rows it capped before.
BYTES_PER_CELL = 24
#: The ridge penalties the surrogate chooses from, by generalised cross-validation.
ALPHAS = np.logspace(-4, 3, 15)
#: Rows per chunk of the leave-one-out errors (the chunk's rotated design: rows x columns floats).
_CHUNK = 4096
#: The fewest rows the surrogate is fitted on; a design too wide for this many rows in ``max_mb`` is refused.
MIN_ROWS = 1000


def surrogate_rows(width: int, max_rows: int, max_mb: float | None) -> int:
    """Rows the surrogate is fitted on: ``max_rows``, fewer where the design would not fit in ``max_mb``."""
    if max_mb is None:
        return max_rows
    return min(max_rows, int(float(max_mb) * 1e6 // (BYTES_PER_CELL * max(width, 1))))


def fit_surrogate(predictions: np.ndarray, frame: Frame, kinds: dict, *, n_knots: int = 6, max_rows: int = 20000,
                  random_state: int = 0, max_levels: int | None = None, max_mb: float | None = None) -> Surrogate:
    """Fit the additive surrogate to ``predictions`` (one per row of ``frame``); a categorical feature with more
    than ``max_levels`` levels keeps the most frequent (its grid's rule) and pools the rest.  ``max_mb``: the
    design's memory cap; wider designs are fitted on fewer sampled rows (at least :data:`MIN_ROWS`, else an
    InputError before any work)."""
    from ..errors import InputError

    if max_mb is not None:
        width = surrogate_width(frame, kinds, n_knots, max_levels, _level_facts(frame, kinds))
        max_rows = surrogate_rows(width, max_rows, max_mb)
        if max_rows < min(MIN_ROWS, frame.n_rows):
            raise InputError(f"the surrogate model's design has {width:,} columns: {MIN_ROWS:,} rows of it need "
                             f"{BYTES_PER_CELL * MIN_ROWS * width / 1e6:,.0f} MB, above max_batch_mb ({max_mb:,.0f} MB).")
    n = frame.n_rows
    rows = np.arange(n)
    if n > max_rows:
        rows = np.sort(np.random.default_rng(random_state).choice(n, size=max_rows, replace=False))
    names = [name for name in frame.names if name in kinds]
    sample = frame.take_rows(rows)  # the rows fitted, brought here (a PartFrame's from its workers)
    design, spans = _design(sample, np.arange(rows.size), names, kinds, n_knots, max_levels)
    # an array here, or a column kept on a cluster's partitions (only these rows come here)
    y = np.asarray((predictions if isinstance(predictions, KeptColumn) else np.asarray(predictions))[rows], dtype=float)
    _, coef, _ = _ridge_gcv(design, y, ALPHAS)
    fitted = design @ coef  # centred: the intercept is y's mean
    yc = y - y.mean()
    ss = float(np.sum(yc ** 2))
    fidelity = 1.0 - float(np.sum((yc - fitted) ** 2)) / ss if ss > 0 else 1.0
    importance = {name: float(np.std(design[:, a:e] @ coef[a:e]))
                  for name, a, e in zip(names, spans[:-1], spans[1:])}
    return Surrogate(importance=importance, fidelity=fidelity)


def _level_facts(frame: Frame, kinds: dict) -> dict:
    """``{name: (levels, any missing)}`` of the categorical features over every row (the frame's row partitions)."""
    from ..pd.profiles import one_part
    from .ood import _is_missing, level_order

    cats = [j for j, name in enumerate(frame.names) if kinds.get(name) == "categorical"]
    orders = level_order(one_part(frame), cats) if cats else []
    return {frame.names[j]: (sum(not _is_missing(v) for v, _ in o), any(_is_missing(v) for v, _ in o))
            for j, o in zip(cats, orders)}


def _design(frame: Frame, rows: np.ndarray, names: list, kinds: dict, n_knots: int, max_levels) -> tuple:
    """``(design, spans)``: every feature's basis on ``rows``, side by side, each column minus its mean (the
    surrogate's intercept is then the predictions' mean); feature i owns columns ``spans[i]:spans[i + 1]``.  The
    design is allocated once and filled a feature at a time, so one feature's basis is beside it at most (each
    basis is built twice: first for its width, a few milliseconds)."""
    def basis(name):
        return _basis(frame.column(frame.names.index(name))[rows], kinds[name], n_knots, max_levels)

    spans = np.cumsum([0] + [basis(name).shape[1] for name in names])
    design = np.empty((rows.size, int(spans[-1])))
    for name, lo, hi in zip(names, spans[:-1], spans[1:]):
        design[:, lo:hi] = basis(name)
    design -= design.mean(axis=0)
    return design, spans


def _ridge_gcv(design: np.ndarray, y: np.ndarray, alphas) -> tuple:
    """``(alpha, coef, loo_mse)``: the ridge regression of ``y`` on the centred ``design`` with an unpenalised intercept,
    its penalty chosen among ``alphas`` by the mean squared leave-one-out error (generalised cross-validation) --
    the fit and the choice of scikit-learn's ``RidgeCV(alphas, gcv_mode="svd")``, the first of equal scores kept.

    With ``X'X = V diag(s2) V'`` (the eigenvectors of the design's Gram matrix) and ``Z = X V``, row i's hat value
    is ``1/n + sum_j Z_ij^2 / (s2_j + alpha)`` and its fitted value ``sum_j Z_ij b_j / (s2_j + alpha)``, with
    ``b = V'X'y``; its leave-one-out error is ``(y_i - mean(y) - fitted_i) / (1 - hat_i)``.  ``Z`` is formed
    :data:`_CHUNK` rows at a time: no copy of the design is kept (RidgeCV keeps a centred copy, its SVD's ``U``
    and a squared ``U`` per penalty).  ``coef = V diag(1 / (s2 + alpha)) b``; ``loo_mse``: the mean squared
    leave-one-out error of each penalty."""
    n = design.shape[0]
    yc = np.asarray(y, dtype=float) - float(np.mean(y))
    s2, V = np.linalg.eigh(design.T @ design)
    s2 = np.maximum(s2, 0.0)  # the centred one-hot blocks' null directions: 0, give or take rounding
    b = V.T @ (design.T @ yc)
    inverse = 1.0 / (s2[:, None] + np.asarray(alphas, dtype=float)[None, :])  # (columns, alphas)
    squared = np.zeros(inverse.shape[1])
    for lo in range(0, n, _CHUNK):
        z = design[lo:lo + _CHUNK] @ V
        hat = 1.0 / n + (z * z) @ inverse
        fitted = z @ (b[:, None] * inverse)
        looe = (yc[lo:lo + _CHUNK, None] - fitted) / (1.0 - hat)
        squared += np.sum(looe * looe, axis=0)
    mse = squared / n
    best = 0
    for k in range(1, mse.size):  # RidgeCV's rule: a later penalty replaces the best only when strictly better
        if mse[k] < mse[best]:
            best = k
    return float(alphas[best]), V @ (b * inverse[:, best]), mse
