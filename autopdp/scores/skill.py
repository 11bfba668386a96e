"""The model's skill on the audit rows' target: what every finding is read against.

A PD finding is a fact about the fitted model.  Whether it says anything about the data depends first on whether
the model predicts the target better than a model that knows nothing.  With a target, the audit measures on its
rows (the same rows the PDs average over; held-out skill when they were not used to fit the model):

* a classifier with one class's score (binary, or one class of several): the AUC of that class against the rest,
  with DeLong's variance (the fast algorithm of Sun and Xu, 2014), tested one-sided against 0.5 (no skill); and,
  for probabilities, the log-loss against predicting the rows' base rate to every row;
* a classifier with every class's probability: the multiclass log-loss against the class shares (the primary
  test: the per-row improvement over the baseline, one-sided, above 0);
* a regressor: R^2 (1 - mean squared error / the target's variance about its mean) with a delta-method interval,
  tested one-sided above 0 by the per-row improvement of the squared error over predicting the mean.

The baseline is fitted to the audit rows themselves, which favours the baseline: a model that beats it shows skill.
With sample weights every mean is weighted (a weighted AUC has no interval here: its point value is given).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from ..pd.kept import KeptValues, beside, kept_here, on_whole
from ..pd.rows import chunked_sum as _chunked

__all__ = ["model_skill", "permutation_importance"]

_EPS = 1e-15


def _mean_and_se(values, w):
    """The weighted mean of per-row values and its standard error (a sandwich over the rows)."""
    w = w / w.sum()
    m = float(w @ values)
    return m, float(np.sqrt(np.sum(w * w * (values - m) ** 2)))


def _delong(score, positive):
    """AUC of ``score`` for ``positive`` rows against the rest, and DeLong's standard error.

    From the placement values (DeLong et al. 1988; Sun and Xu 2014): each positive's share of the negatives below
    it, each negative's share of the positives above it, ties counted half; the AUC is the positives' mean.  Each
    value is counted by binary search in the other class's sorted scores, a chunk of rows at a time
    (:func:`autopdp.pd.rows.chunked_sum`): beside the two sorted copies, no temporary grows with the rows."""
    x, y = score[positive], score[~positive]
    x.sort()
    y.sort()
    m, n = x.size, y.size

    def below(sorted_other, values):  # how many of sorted_other lie below each value, ties half
        return (np.searchsorted(sorted_other, values, "left") + np.searchsorted(sorted_other, values, "right")) / 2.0

    v10 = lambda a, b: below(y, x[a:b]) / n  # noqa: E731 - each positive's placement among the negatives
    v01 = lambda a, b: 1.0 - below(x, y[a:b]) / m  # noqa: E731 - each negative's among the positives
    auc = _chunked(m, lambda a, b: v10(a, b).sum()) / m
    if m < 2 or n < 2:
        return float(auc), float("nan")
    m01 = _chunked(n, lambda a, b: v01(a, b).sum()) / n
    var10 = _chunked(m, lambda a, b: ((v10(a, b) - auc) ** 2).sum()) / (m - 1)
    var01 = _chunked(n, lambda a, b: ((v01(a, b) - m01) ** 2).sum()) / (n - 1)
    return float(auc), float(np.sqrt(var10 / m + var01 / n))


def _one_sided(estimate, null, se):
    if not (np.isfinite(se) and se > 0):
        return np.nan
    return float(stats.norm.sf((estimate - null) / se))


def _interval(estimate, se, lo=-np.inf, hi=np.inf):
    z = stats.norm.ppf(0.975)
    return [float(max(lo, estimate - z * se)), float(min(hi, estimate + z * se))] if np.isfinite(se) else None


def _binary_log_loss(p, positive) -> np.ndarray:
    """Each row's log-loss of probability ``p`` for the ``positive`` rows against the rest."""
    p = np.clip(p, _EPS, 1 - _EPS)
    return -np.where(positive, np.log(p), np.log1p(-p))


def _weights_of(w, a: int, b: int) -> np.ndarray:
    """The rows ``a:b``'s weights (None: every row weighs 1, and no row-long array of ones is made)."""
    return np.ones(b - a) if w is None else w[a:b]


def _total(w, n: int) -> float:
    return float(n) if w is None else float(w.sum())


def _binary(score, positive, w, probabilities: bool) -> dict:
    out: dict = {"kind": "binary", "rows": int(score.size), "positives": int(positive.sum())}
    if positive.all() or not positive.any():
        return {**out, "reason": "the target has one class only on these rows"}
    if w is None or max(w.max() - w[0], w[0] - w.min()) <= 1e-8 + 1e-5 * abs(w[0]):  # np.allclose(w, w[0])
        auc, se = _delong(score, positive)
        out.update(auc=auc, auc_interval=_interval(auc, se, 0.0, 1.0), p_value=_one_sided(auc, 0.5, se),
                   test="AUC against 0.5 (DeLong's variance), one-sided")
    else:
        from sklearn.metrics import roc_auc_score

        out.update(auc=float(roc_auc_score(positive, score, sample_weight=w)), auc_interval=None)
    if probabilities:
        share = int(positive.sum()) / score.size if w is None else w @ positive / w.sum()
        rate = float(np.clip(share, _EPS, 1 - _EPS))
        out.update(_improvement(lambda a, b: (_binary_log_loss(score[a:b], positive[a:b]),
                                              _binary_log_loss(np.full(b - a, rate), positive[a:b])), w, "log_loss",
                                score.size), base_rate=rate)
        if "p_value" not in out:  # weighted: the log-loss improvement is the test
            out.update(p_value=out["improvement_p"], test="log-loss improvement over the base rate, one-sided")
    return out


def _improvement(losses, w, name: str, n: int) -> dict:
    """The model's mean loss and the baseline's, and the one-sided test of the per-row improvement above 0:
    ``losses(a, b)`` gives the rows ``a:b``'s losses (the model's, the baseline's), taken a chunk at a time; ``n``
    rows, weighted by ``w`` (None: unweighted)."""
    total = _total(w, n)

    def weighted(fn) -> float:
        return _chunked(n, lambda a, b: np.sum(fn(_weights_of(w, a, b) / total, *losses(a, b))))

    m = weighted(lambda wn, loss, base: wn * loss)
    b = weighted(lambda wn, loss, base: wn * base)
    d = weighted(lambda wn, loss, base: wn * (base - loss))
    se_m = np.sqrt(weighted(lambda wn, loss, base: wn * wn * (loss - m) ** 2))
    se_d = np.sqrt(weighted(lambda wn, loss, base: wn * wn * ((base - loss) - d) ** 2))
    return {name: m, f"{name}_interval": _interval(m, se_m, 0.0), f"baseline_{name}": b,
            "improvement": d, "improvement_p": _one_sided(d, 0.0, se_d)}


def _multiclass(proba, labels, classes, w) -> dict:
    index = {c: i for i, c in enumerate(classes)}
    known = np.array([v in index for v in labels.tolist()])
    if not known.all():
        return {"kind": "multiclass", "reason": "the target has labels the model's classes do not name"}
    col = np.array([index[v] for v in labels.tolist()])
    p = np.clip(proba[np.arange(col.size), col], _EPS, 1.0)
    share = np.bincount(col, weights=w, minlength=len(classes)) / _total(w, col.size)
    base = -np.log(np.clip(share[col], _EPS, 1.0))
    out = {"kind": "multiclass", "rows": int(col.size),
           **_improvement(lambda a, b: (-np.log(p[a:b]), base[a:b]), w, "log_loss", col.size)}
    out.update(p_value=out["improvement_p"], test="log-loss improvement over the class shares, one-sided")
    return out


def _regression(pred, y, w) -> dict:
    total = _total(w, y.size)

    def weighted(fn) -> float:  # a weighted sum over the rows, a chunk at a time
        return _chunked(y.size, lambda a, b: np.sum(_weights_of(w, a, b) / total * fn(a, b)))

    mean = weighted(lambda a, b: y[a:b])

    def losses(a, b):  # each row's squared error, and the mean's
        return (y[a:b] - pred[a:b]) ** 2, (y[a:b] - mean) ** 2
    e_bar, s_bar = weighted(lambda a, b: losses(a, b)[0]), weighted(lambda a, b: losses(a, b)[1])
    if not s_bar > 0:
        return {"kind": "regression", "reason": "the target is constant on these rows"}
    r2 = 1.0 - e_bar / s_bar

    def phi_sq(a, b):  # the delta method's influence of each row, squared, times its weight's share
        e, s = losses(a, b)
        return _weights_of(w, a, b) / total * (-(e - e_bar) / s_bar + e_bar * (s - s_bar) / s_bar ** 2) ** 2
    se = float(np.sqrt(weighted(phi_sq)))
    out = {"kind": "regression", "rows": int(y.size), "r2": r2, "r2_interval": _interval(r2, se, hi=1.0),
           **_improvement(losses, w, "mse", y.size)}
    out.update(p_value=out["improvement_p"], test="squared-error improvement over the mean, one-sided")
    return out


def model_skill(predictions, y, adapter, weights=None, classes=None, significance: float = 0.05) -> dict | None:
    """The model's skill on the rows' target (None without a target): the measures of the module's docstring, the
    primary test's ``p_value`` and ``shows_skill`` (that p-value at most ``significance``)."""
    if y is None:
        return None
    spec = (list(getattr(adapter, "targets", ())), getattr(adapter, "response", ""),
            bool(getattr(adapter, "is_classifier", False)))
    payload = (spec, weights, classes, significance)
    # a rank statistic of every row: where the response and the target are kept (one task on a worker), else here
    response = predictions if isinstance(predictions, KeptValues) else kept_here(np.asarray(predictions, dtype=float))
    y = beside(y, response) if isinstance(y, KeptValues) else kept_here(np.asarray(y))
    return on_whole(_skill_of, payload, response, y)


def _skill_of(payload, predictions, y) -> dict:
    """:func:`model_skill` of ``predictions`` and ``y`` (every row's response and target, arrays ``(rows, k)``)
    and ``payload``: the model's facts ``(targets, response, is_classifier)``, the weights, classes and
    significance."""
    (targets, response, is_classifier), weights, classes, significance = payload
    y = np.asarray(y).reshape(-1)
    pred = np.asarray(predictions, dtype=float).reshape(y.shape[0], -1)
    ok = ~_isna(y) & np.isfinite(pred).all(axis=1)
    w = None if weights is None else np.asarray(weights, dtype=float)  # None: every row weighs 1
    if w is not None:
        ok &= np.isfinite(w) & (w > 0)
    if not ok.all():  # the usable rows' copies, only when some are not
        y, pred, w = y[ok], pred[ok], (None if w is None else w[ok])
    if y.size < 3:
        return {"reason": "fewer than 3 rows with a target", "shows_skill": None}
    if is_classifier:
        if classes is not None and len(targets) == len(classes) >= 3 and response == "predict_proba":
            out = _multiclass(pred, y, list(classes), w)
        elif pred.shape[1] == 1 and targets:
            out = _binary(pred[:, 0], y == targets[0], w, response == "predict_proba")
            out["target"] = targets[0]
        else:
            out = {"reason": "the model's scores do not give one class against the rest"}
    else:
        if pred.shape[1] != 1 or not np.issubdtype(y.dtype, np.number):
            return {"reason": "a regressor with one numeric target is needed", "shows_skill": None}
        out = _regression(pred[:, 0], np.asarray(y, dtype=float), w)
    p = out.get("p_value", np.nan)
    out["shows_skill"] = None if not np.isfinite(p) else bool(p <= significance)
    out["significance"] = significance
    return out


def _isna(values) -> np.ndarray:
    return np.asarray(pd.isna(values), dtype=bool)


def _row_loss(adapter, y, classes):
    """``loss(pred) -> per-row loss`` on the target (None where no proper per-row loss applies): squared error for a
    regressor, log-loss for a classifier's probabilities (one class against the rest, or every class)."""
    targets = list(getattr(adapter, "targets", ()))
    if not getattr(adapter, "is_classifier", False):
        y = np.asarray(y, dtype=float)
        return lambda pred: (y - pred[:, 0]) ** 2
    if getattr(adapter, "response", "") != "predict_proba":
        return None
    if classes is not None and len(targets) == len(classes) >= 3:
        index = {c: i for i, c in enumerate(classes)}
        if not all(v in index for v in np.asarray(y).tolist()):
            return None
        col = np.array([index[v] for v in np.asarray(y).tolist()])
        return lambda pred: -np.log(np.clip(pred[np.arange(col.size), col], _EPS, 1.0))
    positive = np.asarray(y) == targets[0]
    return lambda pred: _binary_log_loss(pred[:, 0], positive)


def _permuted(data, position: int, order):
    """``data`` with one column's values in ``order`` (a DataFrame keeps the column's dtype, categories included)."""
    if hasattr(data, "iloc"):
        out = data.copy()
        col = data.columns[position]
        out[col] = pd.Series(data[col].iloc[order].array, index=data.index)
        return out
    out = np.array(data, copy=True)
    out[:, position] = out[order, position]
    return out


#: the most rows the held-out permutation importance predicts on (a seeded sample above it, stated in the record)
MAX_PFI_ROWS = 50_000


def _increase(shared, position: int) -> np.ndarray:
    """Each row's mean increase of the loss over ``repeats`` permutations of column ``position`` (its own seeded
    permutations: the same whether the features run here one after another or as tasks on a Dask cluster).
    ``shared``: ``(adapter, data, loss, base, seed, repeats)``."""
    adapter, data, loss, base, seed, repeats = shared
    rng = np.random.default_rng([seed, 54, position])
    n = base.size
    increase = np.zeros(n)
    for _ in range(repeats):
        pred = np.asarray(adapter(_permuted(data, position, rng.permutation(n))), dtype=float)
        increase += (loss(pred.reshape(n, -1)) - base) / repeats
    return increase


def permutation_importance(adapter, frame, y, predictions, features, weights=None, classes=None, repeats: int = 5,
                           seed: int = 0, significance: float = 0.05, max_rows: int = MAX_PFI_ROWS,
                           scheduler=None) -> dict | None:
    """Held-out permutation importance of each feature on the rows' target, the data's evidence beside the PD
    importance: the mean increase of the per-row loss (squared error, or log-loss) when the feature's column is
    permuted (``repeats`` times, averaged per row), its 95% interval (a sandwich over the rows), a one-sided p-value
    of "no increase" and the Benjamini-Hochberg-adjusted one across the features.  None without a target or a
    per-row loss.  Above ``max_rows`` rows it is computed on a seeded uniform sample of that many rows (its
    interval is that sample's; ``rows`` and ``of`` in the record say so): each feature costs ``repeats`` predictions
    of every row used, and at 50,000 rows the interval is already far narrower than any materiality threshold.
    With a Dask ``scheduler`` each feature is one task on the cluster (the same numbers: each feature's
    permutations have their own seed)."""
    if y is None:
        return None
    of = frame.n_rows
    if of > max_rows:
        rows = np.sort(np.random.default_rng([seed, 54]).choice(of, size=max_rows, replace=False))
        frame, y = frame.take_rows(rows), (y.at(rows)[:, 0] if isinstance(y, KeptValues) else np.asarray(y)[rows])
        predictions = predictions.at(rows) if isinstance(predictions, KeptValues) else \
            np.asarray(predictions).reshape(of, -1)[rows]
        weights = None if weights is None else np.asarray(weights, dtype=float)[rows]
    else:  # every row, brought here (a frame on a cluster's workers holds them there)
        frame = frame.take_rows(np.arange(of))
        predictions = predictions.whole() if isinstance(predictions, KeptValues) else predictions
        y = y.whole()[:, 0] if isinstance(y, KeptValues) else y
    loss = _row_loss(adapter, y, classes)
    if loss is None:
        return None
    w = np.ones(frame.n_rows) if weights is None else np.asarray(weights, dtype=float)
    base = loss(np.asarray(predictions, dtype=float).reshape(frame.n_rows, -1))
    if not np.isfinite(base).all():
        return None
    shared = (adapter, frame.data, loss, base, seed, repeats)
    positions = [frame.names.index(name) for name in features]
    if scheduler is None:
        increases = [_increase(shared, p) for p in positions]
    else:  # one task per feature, the rows sent once (autopdp.pd.distributed.run_items_on_dask)
        from ..pd.distributed import run_items_on_dask

        increases = run_items_on_dask(scheduler, _increase, shared, positions)
    out = {}
    for name, increase in zip(features, increases):
        m, se = _mean_and_se(increase, w)
        out[name] = {"value": m, "interval": _interval(m, se), "p_value": _one_sided(m, 0.0, se)}
    ps = np.array([v["p_value"] for v in out.values()], dtype=float)
    ok = np.isfinite(ps)
    adjusted = np.full(ps.shape, np.nan)
    if ok.any():
        adjusted[ok] = stats.false_discovery_control(ps[ok], method="bh")
    for v, a in zip(out.values(), adjusted):
        v["adjusted_p"] = float(a)
        v["shown"] = bool(np.isfinite(a) and a <= significance)
    kind = "squared error" if not getattr(adapter, "is_classifier", False) else "log-loss"
    return {"loss": kind, "repeats": repeats, "rows": frame.n_rows, "of": of, "features": out}
