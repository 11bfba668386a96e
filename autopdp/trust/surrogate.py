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


def _centred(block: np.ndarray) -> np.ndarray:
    """``block`` minus its column means, in place (one copy of each feature's basis in memory)."""
    block -= block.mean(axis=0)
    return block


def surrogate_width(frame: Frame, kinds: dict, n_knots: int = 6, max_levels: int | None = None) -> int:
    """Columns of the surrogate's design: ``n_knots + 2`` per numeric feature, per categorical feature its
    levels (at most ``max_levels`` kept, one pooled, one missing)."""
    from .ood import support_width

    numeric = sum(1 for k in kinds.values() if k == "numeric")
    return numeric * (n_knots + 2) + support_width(frame, {f: k for f, k in kinds.items() if k != "numeric"},
                                                    max_levels)


#: Bytes per row and design column the fit takes (the blocks, the design, the ridge fit's copy).
BYTES_PER_CELL = 24
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
    from sklearn.linear_model import RidgeCV

    from ..errors import InputError

    if max_mb is not None:
        width = surrogate_width(frame, kinds, n_knots, max_levels)
        max_rows = surrogate_rows(width, max_rows, max_mb)
        if max_rows < min(MIN_ROWS, frame.n_rows):
            raise InputError(f"the surrogate model's design has {width:,} columns: {MIN_ROWS:,} rows of it need "
                             f"{BYTES_PER_CELL * MIN_ROWS * width / 1e6:,.0f} MB, above max_batch_mb ({max_mb:,.0f} MB).")
    n = frame.n_rows
    rows = np.arange(n)
    if n > max_rows:
        rows = np.sort(np.random.default_rng(random_state).choice(n, size=max_rows, replace=False))
    names = [name for name in frame.names if name in kinds]
    blocks = [_centred(_basis(frame.column(frame.names.index(name))[rows], kinds[name], n_knots, max_levels))
              for name in names]
    spans = np.cumsum([0] + [b.shape[1] for b in blocks])
    design = np.hstack(blocks)
    del blocks  # the design alone is kept through the fit
    y = np.asarray(predictions, dtype=float)[rows]
    # leave-one-out errors of every alpha from one SVD of the design (its rows far outnumber its columns; the
    # default for such a design re-multiplies the rows once per alpha)
    model = RidgeCV(alphas=np.logspace(-4, 3, 15), gcv_mode="svd").fit(design, y)
    fitted = model.predict(design)
    ss = float(np.sum((y - y.mean()) ** 2))
    fidelity = 1.0 - float(np.sum((y - fitted) ** 2)) / ss if ss > 0 else 1.0
    importance = {name: float(np.std(design[:, a:e] @ model.coef_[a:e]))
                  for name, a, e in zip(names, spans[:-1], spans[1:])}
    return Surrogate(importance=importance, fidelity=fidelity)
