"""The model's margin: the link scale of the ICE-variance criterion, taken from ``decision_function``.

Why
    The ICE-variance criterion compares the shapes of the rows' ICE curves on the model's link
    scale (:mod:`autopdp.scores.utilities.ice_variance`).  For probabilities that is the log-odds,
    but a probability that rounds to exactly 0 or 1 in float64 (a margin beyond about ±36.7) has
    lost its log-odds: an additive logistic model with steep coefficients then looks non-additive
    however the log-odds are recovered from the rounded probabilities.  A model whose probabilities
    are the sigmoid (binary) or softmax (multiclass) of its ``decision_function`` (scikit-learn's
    LogisticRegression, HistGradientBoosting and GradientBoosting classifiers, Pipelines ending in
    them) keeps the exact margin there, so the criterion reads the margin instead.

What is computed
    When the audited response is ``predict_proba`` and the model has ``decision_function``:

    1. a check on up to :data:`CHECK_ROWS` rows that ``predict_proba`` is the sigmoid (binary) or
       the softmax (multiclass) of ``decision_function`` to :data:`CHECK_TOL`; a model that fails it
       (a one-vs-rest multiclass model, an SVC's Platt scaling) keeps the clipped log-odds;
    2. the margin's ICE curves on the rows and grids of the 1D PDs that kept ICE curves (one more
       set of ICE curves: no model call on the exact tree path, ``ice rows x grid points``
       predictions per feature on brute force), and the margin on every row (the materiality
       threshold's standard deviation);
    3. the margin turned into the same link the probabilities would give without rounding: for a
       binary model the margin itself (the log-odds of the positive class; its negative for the
       other class), for a multiclass model whose every class is explained the class margins
       centred over the classes (the centred log-probability, the softmax's linear scale), and for
       one class of a multiclass model its log-odds against the rest, ``z_k - logsumexp(z_j, j != k)``.

    Each feature's margin curves are checked against its probability curves (the sigmoid or
    softmax of the one must give the other to :data:`CHECK_TOL`); a feature that fails keeps the
    clipped log-odds of its probability curves.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError
from .kept import KeptValues, keep_values

__all__ = ["MarginLink", "margin_link", "CHECK_ROWS", "CHECK_TOL"]

#: rows on which predict_proba is checked to be the sigmoid/softmax of decision_function
CHECK_ROWS = 256
#: largest absolute difference allowed between a probability and the sigmoid/softmax of the margin
CHECK_TOL = 1e-6
#: rows per decision_function call on every row
_BATCH_ROWS = 200_000


@dataclass(frozen=True, eq=False)
class MarginLink:
    """The link scale from the model's margin, for the ICE-variance criterion.

    Attributes
    ----------
    name : str
        The scale's name, as the evidence and the report show it.
    curves : dict
        ``{features: (n_targets, ice rows, *grid_shape)}`` on the link scale, in the PDs' target order,
        for the 1D PDs whose margin curves were computed and checked.
    predictions : KeptValues of shape (n_rows, n_targets)
        Every row on the link scale (the materiality threshold's standard deviation), kept where the rows are
        (:mod:`autopdp.pd.kept`).
    reason : str
        Why a feature has no margin curves (empty when every feature has them).
    surfaces : dict
        ``{pair: LinkSurface}``: the 2D PDs on the link scale (:func:`autopdp.pd.link.with_surfaces`).
    transform : str
        "" for the margin; "log" for a log-link regressor's log of its predictions (:mod:`autopdp.pd.link`).
    """

    name: str
    curves: dict = field(default_factory=dict)
    predictions: KeptValues | None = None
    reason: str = ""
    surfaces: dict = field(default_factory=dict)
    transform: str = ""


def _softmax(z: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(z - z.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    from scipy.special import expit

    return expit(z)


def _as_margin(z, n_classes: int) -> np.ndarray:
    """decision_function's output as ``(n_rows,)`` (binary) or ``(n_rows, n_classes)``; InputError otherwise."""
    z = np.asarray(z, dtype=np.float64)
    if n_classes == 2 and z.ndim == 2 and z.shape[1] == 1:
        z = z[:, 0]
    if (n_classes == 2 and z.ndim != 1) or (n_classes > 2 and (z.ndim != 2 or z.shape[1] != n_classes)):
        raise InputError(f"its decision_function returns shape {z.shape}, not one margin per class")
    return z


def _probabilities(z: np.ndarray, class_axis: int) -> np.ndarray:
    """Every class's probability from the margin (binary: ``(2, ...)``-shaped along ``class_axis``)."""
    if z.shape[class_axis] == 1:
        p1 = _sigmoid(z)
        return np.concatenate([1.0 - p1, p1], axis=class_axis)
    return _softmax(z, class_axis)


def _link(z: np.ndarray, columns: np.ndarray, all_classes: bool) -> np.ndarray:
    """The targets' link values from the class margins ``z`` (classes first; one row for a binary model)."""
    if z.shape[0] == 1:  # binary: the positive class's log-odds; the other class's is its negative
        return np.stack([z[0] if c == 1 else -z[0] for c in columns])
    if all_classes:
        return (z - z.mean(axis=0, keepdims=True))[columns]
    out = []
    for c in columns:
        rest = np.delete(z, c, axis=0)
        top = rest.max(axis=0)
        out.append(z[c] - (top + np.log(np.exp(rest - top).sum(axis=0))))
    return np.stack(out)


def _scale_name(binary: bool, all_classes: bool) -> str:
    if all_classes and not binary:
        return ("centred log-probability (from the model's margin: its decision_function, centred over the "
                "classes, the softmax's linear scale)")
    if binary:
        return "log-odds (from the model's margin: its decision_function, whose sigmoid is its probability)"
    return ("log-odds (from the model's margin: each class's decision_function against the log-sum-exp of the "
            "others', whose softmax is its probability)")


def _check_rows(n: int) -> np.ndarray:
    return np.unique(np.linspace(0, n - 1, num=min(n, CHECK_ROWS)).astype(np.intp))


def _call(method, X, what: str):
    try:
        return method(X)
    except Exception as exc:  # noqa: BLE001 - the model's own code may raise anything: the margin is not used
        raise InputError(f"its {what} failed ({type(exc).__name__}: {exc})") from None


def _margin_on(model, X, n_classes: int) -> np.ndarray:
    return _as_margin(_call(model.decision_function, X, "decision_function"), n_classes)


def _unavailable(adapter, model) -> str:
    """Why the margin does not apply to this probability response ("" when it may)."""
    if not adapter.is_classifier or adapter.columns is None:
        return "the model has no classes_ (its predict_proba columns are outputs, not classes)"
    if not callable(getattr(model, "decision_function", None)):
        return "the model has no decision_function"
    return ""


def _every_margin(frame, payload) -> np.ndarray:
    """The margin of every row of ``frame`` (a row partition), :data:`_BATCH_ROWS` rows per call of the model."""
    model, n_classes = payload
    if frame.n_rows <= _BATCH_ROWS:
        return _margin_on(model, frame.data, n_classes)
    return np.concatenate([_margin_on(model, frame.take_rows(np.arange(a, min(a + _BATCH_ROWS, frame.n_rows))).data,
                                      n_classes) for a in range(0, frame.n_rows, _BATCH_ROWS)])


def _every_link(frame, payload) -> np.ndarray:
    """Every row of ``frame`` (a row partition) on the link scale ``(rows, targets)``: each row's own margin."""
    model, n_classes, columns, all_classes = payload
    every = _every_margin(frame, (model, n_classes))
    return _link(every[None, :] if n_classes == 2 else every.T, columns, all_classes).T


def margin_link(model, adapter, frame, results_1d, pd_kwargs: dict, audit_rows=None) -> MarginLink | None:
    """The margin's link scale for the ICE-variance criterion, or None when the model has none.

    ``frame``: the audit's rows (:class:`~autopdp.pd.data.Frame`); ``results_1d``: the 1D PDs;
    ``pd_kwargs``: the options the PDs were computed with (grids, categorical features, method, batch
    size, n_jobs), passed on to :func:`~autopdp.pd.partial_dependence.partial_dependence`; with its ``scheduler``
    the margin of every row is computed and kept on the row partitions (:func:`autopdp.pd.kept.keep_values`), ``audit_rows`` being
    ``(sample_weight, tree plan or None)`` of the audit's partitions.
    Returns None when the response is not ``predict_proba``; a :class:`MarginLink` without curves, with
    its ``reason``, when the model has no ``decision_function`` (no model call) or fails the check.
    """
    if adapter.response != "predict_proba":
        return None
    reason = _unavailable(adapter, model)
    if reason:
        return MarginLink(name="", reason=reason)
    n_classes = len(adapter.classes)  # classes_, or the inferred classes of a model without it
    columns = np.asarray(adapter.columns, dtype=np.intp)
    binary = n_classes == 2
    all_classes = (not binary) and set(columns.tolist()) == set(range(n_classes))
    name = _scale_name(binary, all_classes)
    try:
        rows = _check_rows(frame.n_rows)
        X = frame.take_rows(rows).data
        z = _margin_on(model, X, n_classes)
        p = np.asarray(_call(model.predict_proba, X, "predict_proba"), dtype=np.float64)
        zc = z[None, :] if binary else z.T
        if p.shape != (rows.size, n_classes) or not np.allclose(_probabilities(zc, 0).T, p, rtol=0, atol=CHECK_TOL):
            how = "sigmoid" if binary else "softmax"
            raise InputError(f"its predict_proba is not the {how} of its decision_function (to {CHECK_TOL:g})")
        weights, plan = audit_rows if audit_rows is not None else (None, None)
        # every row on the link scale, kept where the rows are (on a cluster nothing row-long comes here)
        predictions = keep_values(_every_link, (model, n_classes, columns, all_classes), frame, sample_weight=weights,
                                  plan=plan, scheduler=pd_kwargs.get("scheduler"))
    except InputError as exc:
        return MarginLink(name=name, reason=str(exc))
    curves, failed = _margin_curves(model, frame, results_1d, pd_kwargs, columns, binary, all_classes)
    reason = ""
    if failed:
        shown = ", ".join(failed[:5]) + (f" and {len(failed) - 5} more" if len(failed) > 5 else "")
        reason = f"the margin's ICE curves did not reproduce the probability curves of {shown}"
    return MarginLink(name=name, curves=curves, predictions=predictions, reason=reason)


def _margin_curves(model, frame, results_1d, pd_kwargs, columns, binary, all_classes) -> tuple[dict, list]:
    """``({features: link curves}, [features that failed the check])`` for the 1D PDs with ICE curves."""
    from .options import keywords
    from .partial_dependence import partial_dependence

    by_rows: dict = {}
    for r in results_1d:
        if r.ndim != 1 or r.individual is None:
            continue
        rows = np.arange(frame.n_rows) if r.ice_rows is None else np.asarray(r.ice_rows, dtype=np.intp)
        by_rows.setdefault(rows.tobytes(), (rows, []))[1].append(r)
    curves, failed = {}, []
    for rows, group in by_rows.values():
        sub = frame if rows.size == frame.n_rows and np.array_equal(rows, np.arange(frame.n_rows)) \
            else frame.take_rows(rows)
        custom = {r.features[0]: list(r.grid[0]) if r.kinds[0] == "categorical" else r.grid[0] for r in group}
        categorical = [r.features[0] for r in group if r.kinds[0] == "categorical"] or None
        try:
            # a PartFrame's every row stays on its workers: the frame itself, not its (absent) data
            X = sub if getattr(sub, "parts", None) is not None else sub.data
            margins = partial_dependence(model, X, [r.features[0] for r in group], **keywords(
                response="decision_function", target=None, kind="individual", std=False, subsample=None,
                custom_values=custom, categorical_features=categorical, **pd_kwargs))
        except InputError:
            failed.extend(r.features[0] for r in group)
            continue
        for r, m in zip(group, margins):
            z = np.asarray(m.individual, dtype=np.float64)  # (classes or 1, rows, grid)
            link = _link(z, columns, all_classes)
            expected = np.asarray(r.individual, dtype=np.float64)
            probs = _probabilities(z, 0)[columns]
            if link.shape != expected.shape or not np.allclose(probs, expected, rtol=0, atol=CHECK_TOL):
                failed.append(r.features[0])
                continue
            curves[r.features] = link
    return curves, failed
