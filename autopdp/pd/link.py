"""One scale per model: the link scale the structure criteria (interaction, ICE variance) read.

Why
    Whether a model is additive depends on the scale: a logistic model additive on the log-odds has
    probability curves whose shapes differ between rows (the sigmoid is steeper near 0.5), and a
    log-linear Poisson model's predictions ``exp(a(x1) + b(x2))`` interact on the prediction scale.
    Judged on the response, such a model gets interaction and heterogeneity findings its own
    structure does not have.  So every criterion about *structure* (interaction, ICE variance) is
    judged on the model's link scale, and every criterion about *levels* (incidence, monotonicity,
    slope, importance, similarity: the materiality of a change of the prediction) on the response.

The rule (from the estimator's type and parameters, never from the data)
    With ``ice_variance_scale="link"`` (the default):

    * ``response="predict_proba"``: the log-odds (the centred log-probability for a multiclass model
      whose classes are all explained) from the model's margin, its ``decision_function``, when its
      probabilities are the sigmoid or softmax of it (:mod:`autopdp.pd.margin`); otherwise of each
      row's probability clipped to ``[2**-53, 1 - 2**-53]``.
    * ``response="predict"`` of a log-link regressor: the log of each row's prediction.  The
      estimator (the last step of a Pipeline) is a log-link regressor when it is scikit-learn's
      PoissonRegressor or GammaRegressor; a TweedieRegressor with ``link="log"``, or ``link="auto"``
      and ``power > 0``; a HistGradientBoostingRegressor with ``loss`` "poisson" or "gamma"; a
      LightGBM LGBMRegressor with ``objective`` "poisson", "gamma" or "tweedie"; an XGBoost
      XGBRegressor with ``objective`` "count:poisson", "reg:gamma" or "reg:tweedie".
    * anything else: the response itself (a regression prediction, a decision function).

    ``ice_variance_scale="response"`` keeps the response for every criterion.

What is computed
    The PD of a link-transformed prediction is the mean of each row's transformed ICE values, never
    the transform of the PD (``mean log f`` is not ``log mean f``), so it is computed from per-row
    predictions only.  For the 1D PDs the ICE curves already kept are transformed (log link; clipped
    log-odds) or the margin's curves are computed on the same rows and grids (:mod:`autopdp.pd.margin`).
    For each 2D PD the link surface is the (Horvitz-Thompson weighted) mean of the link values of the
    ICE surfaces kept for its noise test (``std_rows`` sampled rows; every row with ``std_rows=0``):
    for a margin model ``decision_function``'s ICE surfaces on those rows and grids (one model call of
    ``rows x grid cells`` per pair on brute force), else the kept probability or prediction surfaces
    transformed.  Its Monte-Carlo error is that of a mean over those rows, and the interaction's
    noise test draws from exactly that error.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from .kept import as_kept, derive_kept, map_kept
from .margin import CHECK_TOL, MarginLink, margin_link
from .sampling import ice_row_weights
from .scales import link_scale

__all__ = ["LinkSurface", "log_link_of", "model_link", "with_surfaces", "response_scale_name"]

#: log-link regressors: (module prefix, class name, parameter, values giving a log link); None: always log
_LOG_LINK = (
    ("sklearn", "PoissonRegressor", None, None),
    ("sklearn", "GammaRegressor", None, None),
    ("sklearn", "HistGradientBoostingRegressor", "loss", ("poisson", "gamma")),
    ("lightgbm", "LGBMRegressor", "objective", ("poisson", "gamma", "tweedie")),
    ("xgboost", "XGBRegressor", "objective", ("count:poisson", "reg:gamma", "reg:tweedie")),
)


@dataclass(frozen=True, eq=False)
class LinkSurface:
    """A 2D PD on the link scale: ``result`` (average and ICE surfaces on the link, ``n_rows`` the ICE rows),
    the rows' weights for its noise (None: equal) and the scale's name."""

    result: object
    row_weights: np.ndarray | None
    name: str


def response_scale_name(response: str) -> str:
    """The name of the response's own scale (the level criteria's scale)."""
    return {"predict_proba": "probability", "decision_function": "decision function",
            "crisp": "share of predicted class"}.get(response, "prediction")


def final_estimator(model):
    """The last step of a (nested) Pipeline, else the model."""
    est = model
    for _ in range(20):
        steps = getattr(est, "steps", None)
        if not isinstance(steps, list) or not steps:
            break
        est = steps[-1][1]
    return est


def _is(est, module: str, name: str) -> bool:
    return any(c.__name__ == name and c.__module__.split(".")[0] == module for c in type(est).__mro__)


def log_link_of(model) -> str:
    """Which log-link regressor the model is, by the rule of the module docs ("" when none)."""
    est = final_estimator(model)
    try:
        params = est.get_params(deep=False) if callable(getattr(est, "get_params", None)) else {}
    except Exception:  # noqa: BLE001 - the model's own code: no parameters, no log link from them
        params = {}
    for module, name, key, values in _LOG_LINK:
        if _is(est, module, name) and (key is None or params.get(key) in values):
            return name if key is None else f"{name}({key}={params.get(key)!r})"
    if _is(est, "sklearn", "TweedieRegressor"):
        link, power = params.get("link", "auto"), params.get("power", 0.0)
        try:
            positive = float(power) > 0
        except (TypeError, ValueError):
            positive = False
        if link == "log" or (link == "auto" and positive):
            return f"TweedieRegressor(power={power!r}, link={link!r})"
    return ""


def _log_name(which: str) -> str:
    return f"log (the model's log link, {which}: the log of each row's prediction)"


def _log(values) -> np.ndarray | None:
    v = np.asarray(values, dtype=float)
    finite = v[np.isfinite(v)]
    if finite.size and finite.min() <= 0:
        return None
    return np.log(v)


def model_link(model, adapter, frame, results_1d, pd_kwargs: dict, audit_rows=None) -> MarginLink | None:
    """The model's link scale for the structure criteria (see module docs), or None for its response.

    ``predict_proba``: :func:`autopdp.pd.margin.margin_link` (a :class:`MarginLink` without curves, with its
    ``reason``, when the margin does not apply: the clipped log-odds are used).  A log-link regressor: the log
    of its 1D ICE curves (``transform="log"``; ``predictions`` filled by :func:`log_predictions`).  ``audit_rows``:
    ``(sample_weight, tree plan or None)`` of the audit's row partitions on Dask (:func:`margin_link`).
    """
    if adapter.response == "predict_proba":
        return margin_link(model, adapter, frame, results_1d, pd_kwargs, audit_rows)
    if adapter.response != "predict" or adapter.is_classifier:
        return None
    which = log_link_of(model)
    if not which:
        return None
    curves, bad = {}, []
    for r in results_1d:
        if r.ndim != 1 or r.individual is None:
            continue
        logged = _log(r.individual)
        if logged is None:
            bad.append(r.features[0])
        else:
            curves[r.features] = logged
    if bad:
        return MarginLink(name="", reason=f"{which} predicted a value <= 0 (no log) on the ICE curves of "
                                          f"{', '.join(bad[:5])}: the response scale is kept", transform="")
    return MarginLink(name=_log_name(which), curves=curves, transform="log")


def log_predictions(link: MarginLink | None, predictions) -> MarginLink | None:
    """``link`` with the rows' predictions on its log scale (a log link without them gets them here)."""
    if link is None or link.transform != "log" or link.predictions is not None or predictions is None:
        return link
    kept = as_kept(predictions)  # kept on a cluster's partitions: their logs are made and kept there
    if min(map_kept(_lowest_finite, None, kept)) <= 0:
        return MarginLink(name="", reason="the model predicted a value <= 0 (no log): the response scale is kept")
    return dataclasses.replace(link, predictions=derive_kept(_logged, None, kept))


def _lowest_finite(values, _payload) -> float:
    v = np.asarray(values, dtype=float)
    finite = v[np.isfinite(v)]
    return float(finite.min()) if finite.size else np.inf


def _logged(values, _payload) -> np.ndarray:
    return np.log(np.asarray(values, dtype=float))


def with_surfaces(link: MarginLink | None, model, adapter, frame_2d, results_2d, pd_kwargs: dict,
                  sample_weight=None) -> MarginLink | None:
    """``link`` with every 2D PD's surface on the link scale (:class:`LinkSurface`, see module docs)."""
    if link is None or not results_2d:
        return link
    surfaces, reasons = {}, []
    margins = _margin_surfaces(model, adapter, frame_2d, results_2d, pd_kwargs) if link.predictions is not None \
        and link.transform == "" and link.name else {}
    for r in results_2d:
        if r.individual is None:
            reasons.append(f"{' x '.join(r.features)}: no ICE surfaces were kept (std_rows=0 on a sample)")
            continue
        ice = np.asarray(r.individual, dtype=float)
        if r.features in margins:
            values, name = margins[r.features], link.name
        elif link.transform == "log":
            values, name = _log(ice), link.name
            if values is None:
                reasons.append(f"{' x '.join(r.features)}: a prediction <= 0 has no log")
                continue
        elif adapter.response == "predict_proba":
            all_classes = bool(ice.shape[0] >= 3 and np.allclose(ice.sum(axis=0), 1.0, atol=1e-6))
            values, name = link_scale(ice, "predict_proba", all_classes=all_classes)
        else:
            continue
        h = ice_row_weights(r, sample_weight)
        m = ice.shape[1]
        hw = np.ones(m) if h is None else np.asarray(h, dtype=float)
        average = np.tensordot(hw / hw.sum(), values, axes=([0], [1]))
        nan = np.full(average.shape, np.nan)
        result = dataclasses.replace(r, average=average, individual=values, std=nan, stderr=nan, ice_rows=None,
                                     n_rows=m, total_weight=float(hw.sum()))
        surfaces[r.features] = LinkSurface(result=result, row_weights=h, name=name)
    reason = "; ".join(reasons)
    return dataclasses.replace(link, surfaces=surfaces,
                               reason="; ".join(x for x in (link.reason, reason) if x))


def _margin_surfaces(model, adapter, frame, results_2d, pd_kwargs) -> dict:
    """``{pair: link surfaces (targets, rows, k1, k2)}`` from ``decision_function`` on each 2D PD's ICE rows
    and grids, for the pairs whose margin reproduces their probability surfaces (to :data:`CHECK_TOL`)."""
    from .margin import _link, _probabilities
    from .options import keywords
    from .partial_dependence import partial_dependence

    n_classes = len(np.asarray(model.classes_))
    columns = np.asarray(adapter.columns, dtype=np.intp)
    binary = n_classes == 2
    all_classes = (not binary) and set(columns.tolist()) == set(range(n_classes))
    by_rows: dict = {}  # one call per set of ICE rows (the 2D PDs share them): the tree plan is built once
    for r in results_2d:
        if r.individual is None:
            continue
        rows = np.arange(frame.n_rows) if r.ice_rows is None else np.asarray(r.ice_rows, dtype=np.intp)
        by_rows.setdefault(rows.tobytes(), (rows, []))[1].append(r)
    out = {}
    for rows, group in by_rows.values():
        sub = frame.take_rows(rows)
        custom, categorical = {}, set()
        for r in group:
            for f, k, g in zip(r.features, r.kinds, r.grid):
                custom[f] = list(g) if k == "categorical" else g
                if k == "categorical":
                    categorical.add(f)
        try:
            margins = partial_dependence(model, sub.data, [r.features for r in group], **keywords(
                response="decision_function", target=None, kind="individual", std=False, subsample=None,
                custom_values=custom, categorical_features=sorted(categorical) or None, **pd_kwargs))
        except (InputError, ValueError, TypeError):
            continue
        for r, m in zip(group, margins):
            z = np.asarray(m.individual, dtype=np.float64)
            link = _link(z, columns, all_classes)
            probs = _probabilities(z, 0)[columns]
            expected = np.asarray(r.individual, dtype=np.float64)
            if link.shape == expected.shape and np.allclose(probs, expected, rtol=0, atol=CHECK_TOL):
                out[r.features] = link
    return out
