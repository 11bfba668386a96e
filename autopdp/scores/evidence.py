"""Stage: scores -> evidence (noise test + materiality) for every PDP under every selection criterion.

See :mod:`autopdp.scores.significance` for the tests and their null distributions.
The result, ``{criterion: {features: Evidence}}``, is what the curated
selection filters on (:func:`autopdp.scores.selection.curate`) and what the report
prints beside every finding.
"""

from __future__ import annotations

import zlib

import numpy as np
from scipy.optimize import lsq_linear

from .importance import flatness, interaction_statistic, marginal_weights
from .scoring import _slopes, _weights, grid_cells
from .significance import Evidence, adjust_p_values, monte_carlo_p, noise_level, pd_noise
from .utilities import TRUST_IDS
from .utilities.base import axis_positions
from .utilities.incidence import incidence_curve
from .utilities.monotonicity import isotonic_fit

__all__ = ["assess", "fast_lipschitz_fit_1d"]

PAIR_ONLY = ("correlation", "importance", "interaction", "intersection", "surrogate_importance")


def _rng(features, salt: str = ""):
    return np.random.default_rng(zlib.crc32(("\x1f".join(features) + "|" + salt).encode()))


def _gap(diff: np.ndarray, w: np.ndarray, loss: str) -> np.ndarray:
    """Vectorised standard utility of ``diff`` (B, k) with weights ``w`` (k,), NaN-safe."""
    diff = np.asarray(diff, dtype=float)
    ok = np.isfinite(diff) & (w > 0)
    ww = np.where(ok, w, 0.0)
    total = ww.sum(axis=-1)
    d = np.where(ok, diff, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        if loss == "l1":
            return np.sum(ww * np.abs(d), axis=-1) / total
        return np.sqrt(np.sum(ww * d * d, axis=-1) / total)


def fast_lipschitz_fit_1d(f: np.ndarray, x: np.ndarray, bound: float) -> np.ndarray:
    """Least-squares fit of a 1D curve with |g_{i+1} - g_i| <= bound (x_{i+1} - x_i).

    The same problem as :func:`autopdp.scores.utilities.lipschitz_fit` (eq. 7) written
    as bounded least squares in the first value and the increments, solved by
    ``scipy.optimize.lsq_linear``; used for the many refits of the noise test.
    """
    f = np.asarray(f, dtype=float)
    k = f.size
    lim = bound * np.diff(np.asarray(x, dtype=float))
    if np.all(np.abs(np.diff(f)) <= lim * (1 + 1e-12) + 1e-15):
        return f.copy()
    A = np.tril(np.ones((k, k)))
    lb = np.concatenate([[-np.inf], -lim])
    ub = np.concatenate([[np.inf], lim])
    z = lsq_linear(A, f, bounds=(lb, ub), method="bvls").x
    return A @ z


# ------------------------------------------------------------------ null draws per utility (1D)
def _null_monotonicity(score, noise, w, loss, declared):
    g = np.asarray(score.comparison, dtype=float)
    out = np.empty(noise.shape[0])
    dirs = [score.details.get("direction")] if declared else ["increasing", "decreasing"]
    for b in range(noise.shape[0]):
        h = g + noise[b]
        best = None
        for d in dirs:
            fit = isotonic_fit(h, d == "increasing")
            sse = float(np.sum((fit - h) ** 2))
            if best is None or sse < best[0]:
                best = (sse, fit)
        out[b] = _gap((h - best[1])[None], w, loss)[0]
    return out


def _null_lipschitz(score, noise, result, w, loss):
    g = np.asarray(score.comparison, dtype=float)
    x = axis_positions(result, 0)
    bound = float(score.details["bound"][0])
    out = np.empty(noise.shape[0])
    for b in range(noise.shape[0]):
        h = g + noise[b]
        out[b] = _gap((h - fast_lipschitz_fit_1d(h, x, bound))[None], w, loss)[0]
    return out


def _null_slope(noise, result):
    x = axis_positions(result, 0)
    if x is None or x.size < 2 or x[-1] == x[0]:
        return None
    du = np.diff((x - x[0]) / (x[-1] - x[0]))
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.abs(np.diff(noise, axis=-1)) / du
    return np.max(np.where(np.isfinite(s), s, 0.0), axis=-1)


def _null_incidence(f, noise, cells, y_values, shape, w, loss, is_classifier, rng, draws):
    size = int(np.prod(shape))
    ok = cells >= 0
    n = np.bincount(cells[ok], minlength=size).astype(float)
    fl = np.asarray(f, dtype=float).ravel()
    if is_classifier:
        p = np.clip(fl, 0.0, 1.0)
        sim = rng.binomial(n.astype(np.int64), p, size=(draws, size)) / np.maximum(n, 1)
    else:
        yv = np.asarray(y_values, dtype=float)[ok]
        c = cells[ok]
        mean = np.bincount(c, weights=yv, minlength=size) / np.maximum(n, 1)
        sq = np.bincount(c, weights=(yv - mean[c]) ** 2, minlength=size)
        pooled = np.sqrt(sq.sum() / max(n.sum() - np.count_nonzero(n), 1))
        sd = np.where(n >= 2, np.sqrt(sq / np.maximum(n - 1, 1)), pooled)
        sd = np.where(sd > 0, sd, pooled)
        sim = fl + rng.standard_normal((draws, size)) * sd / np.sqrt(np.maximum(n, 1))
    sim = np.where(n > 0, sim, np.nan)
    return _gap(fl + noise.reshape(draws, -1) - sim, w.ravel(), loss)


def _weighted_sd(values: np.ndarray, w: np.ndarray) -> np.ndarray:
    w = w / w.sum()
    m = np.sum(values * w, axis=-1, keepdims=True)
    return np.sqrt(np.sum(w * (values - m) ** 2, axis=-1))


def _interaction_stat(avg: np.ndarray, kinds, weights) -> np.ndarray:
    """The interaction of surfaces ``(..., k1, k2)`` (the statistic of :mod:`autopdp.scores.importance`)."""
    return interaction_statistic(avg, kinds, weights)[0]


def _additive_fit(f2: np.ndarray, w1, w2) -> np.ndarray:
    """The additive part of a surface: weighted row means + column means - grand mean."""
    a = np.full(f2.shape[0], 1.0 / f2.shape[0]) if w1 is None else np.asarray(w1, dtype=float)
    b = np.full(f2.shape[1], 1.0 / f2.shape[1]) if w2 is None else np.asarray(w2, dtype=float)
    rows = f2 @ b
    cols = a @ f2
    return rows[:, None] + cols[None, :] - a @ f2 @ b


# ------------------------------------------------------------------ assembling the evidence
def _make(criterion, features, value, p, noise_lvl, threshold, *, material_word, adjusted=np.nan, reason_na=""):
    material = bool(np.isfinite(value) and np.isfinite(threshold) and value >= threshold)
    return Evidence(criterion=criterion, features=tuple(features), value=float(value), p_value=float(p),
                    adjusted_p=float(adjusted), noise_level=float(noise_lvl), threshold=float(threshold),
                    material=material, significant=False, why=reason_na or material_word)


def _finish(items: dict, config) -> dict:
    """Adjust the p-values of one criterion across its PDPs and write the 'why' of each."""
    keys = list(items)
    p = np.array([items[k].p_value if items[k].material else (1.0 if np.isfinite(items[k].p_value) else np.nan)
                  for k in keys])
    adj = adjust_p_values(p, config.multiple_testing)
    label = "Benjamini-Hochberg" if config.multiple_testing == "bh" else "Holm"
    out = {}
    for k, q in zip(keys, adj):
        e = items[k]
        significant = bool(np.isfinite(q) and q <= config.significance)
        if not np.isfinite(e.value):
            why = "not scored."
        elif not np.isfinite(e.p_value) and e.why:
            why = e.why
        elif not e.material:
            why = f"not material: {_num(e.value)} is below the materiality threshold {_num(e.threshold)}."
        elif not significant:
            why = (f"not distinguishable from noise: p = {_p(e.p_value)}, {label}-adjusted {_p(q)} > "
                   f"{config.significance:g} (noise level {_num(e.noise_level)}).")
        else:
            why = (f"material ({_num(e.value)} >= threshold {_num(e.threshold)}) and clear of noise "
                   f"(p = {_p(e.p_value)}, {label}-adjusted {_p(q)} <= {config.significance:g}"
                   + (f"; noise level {_num(e.noise_level)}" if np.isfinite(e.noise_level) else "") + ").")
        out[k] = Evidence(criterion=e.criterion, features=e.features, value=e.value, p_value=e.p_value,
                          adjusted_p=float(q), noise_level=e.noise_level, threshold=e.threshold,
                          material=e.material, significant=significant, why=why)
    return out


def _num(v) -> str:
    from .._format import fmt

    return fmt(v)


def _p(p) -> str:
    if not np.isfinite(p):
        return "n/a"
    if p < 1e-4:
        return f"{p:.1e}"
    return f"{p:.4f}".rstrip("0").rstrip(".") if p < 0.01 else f"{p:.3f}"


def assess(inputs, results, utility_scores, scores, *, surrogate=None) -> dict:
    """``{criterion: {features: Evidence}}`` for every ranked utility and 2D criterion.

    Parameters
    ----------
    inputs : ScoringInputs
    results : list of PDResult
    utility_scores : {features: {utility id: UtilityScore}}
    scores : DataFrame
        The audit's score table (for the 2D criteria's values).
    surrogate : Surrogate, optional
    """
    cfg = inputs.config
    draws = int(cfg.noise_draws)
    sd = np.asarray(inputs.prediction_std, dtype=float)
    sd = np.where(np.isfinite(sd) & (sd > 0), sd, np.nan)
    raw: dict[str, dict] = {}
    noises: dict[tuple, dict] = {}
    imp_ev: dict[str, Evidence] = {}
    one_d = [r for r in results if r.ndim == 1]
    two_d = [r for r in results if r.ndim == 2]

    def noise_of(r, t):
        key = (r.features, t)
        if key not in noises:
            noises[key] = pd_noise(r, t, draws, _rng(r.features, f"pd{t}"))
        return noises[key]

    def threshold(t):
        return float(cfg.materiality * sd[t]) if t < sd.size else float("nan")

    for r in one_d:
        cells = grid_cells(inputs, r)
        w = _weights(cells, r.grid_shape, getattr(inputs, "sample_weight", None)).ravel()
        # importance (for the pair criteria and the 'low' ice_variance criterion)
        wimp = marginal_weights(r)[0]
        imp = flatness(np.asarray(r.average, dtype=float), r.kinds[0], axis=-1, weights=wimp)
        t = int(np.nanargmax(imp)) if np.isfinite(imp).any() else 0
        e = noise_of(r, t)
        if e is None:
            imp_ev[r.features[0]] = _make("importance", r.features, imp[t], np.nan, np.nan, threshold(t),
                                          material_word="", reason_na="noise not estimated (no ICE curves or standard errors).")
        else:
            null = flatness(e, r.kinds[0], axis=-1, weights=wimp)
            imp_ev[r.features[0]] = _make("importance", r.features, imp[t], monte_carlo_p(imp[t], null, tol=1e-12 * (sd[t] if np.isfinite(sd[t]) else 1)),
                                          noise_level(null), threshold(t), material_word="")
        for uid, s in utility_scores[r.features].items():
            if uid in TRUST_IDS:
                continue
            if uid == "ice_variance" and cfg.ice_variance == "low":
                continue
            if not s.available:
                raw.setdefault(uid, {})[r.features] = _make(uid, r.features, np.nan, np.nan, np.nan, np.nan, material_word="")
                continue
            t = r.target_index(s.target)
            thr = threshold(t)
            if not (np.isfinite(thr) and s.value >= thr):  # not material: no need to draw its null
                raw.setdefault(uid, {})[r.features] = _make(uid, r.features, s.value, np.nan if not np.isfinite(thr) else 1.0,
                                                            np.nan, thr, material_word="")
                continue
            p, lvl, why = _test_1d(uid, s, r, t, w, cells, inputs, noise_of, draws, sd)
            raw.setdefault(uid, {})[r.features] = _make(uid, r.features, s.value, p, lvl, thr, material_word="", reason_na=why)
    if cfg.ice_variance == "low" and "ice_variance" in cfg.utilities:
        raw["ice_variance"] = {
            r.features: Evidence("ice_variance", r.features, float(utility_scores[r.features]["ice_variance"].value),
                                 imp_ev[r.features[0]].p_value, np.nan, imp_ev[r.features[0]].noise_level,
                                 imp_ev[r.features[0]].threshold, imp_ev[r.features[0]].material, False,
                                 "with ice_variance='low' a PDP qualifies when its feature's importance is material and clear of noise.")
            for r in one_d if "ice_variance" in utility_scores[r.features]
        }
    evidence = {uid: _finish(items, cfg) for uid, items in raw.items()}
    imp_final = _finish({(k,): v for k, v in imp_ev.items()}, cfg) if imp_ev else {}

    # ---- 2D criteria
    if two_d:
        two = scores[scores["kind"] == "2d"].set_index(scores.loc[scores["kind"] == "2d", "features"].map(tuple))
        two_importance = dict(zip(two.index, two["importance"])) if "importance" in two else {}
        two_intersection = dict(zip(two.index, two["intersection"])) if "intersection" in two else {}
        crit: dict[str, dict] = {c: {} for c in ("correlation", "importance", "interaction", "surrogate_importance")}
        associations = inputs.associations(two_d)
        for r in two_d:
            a, b = r.features
            # correlation: the data's association test
            value, p = associations[r.features]
            crit["correlation"][r.features] = _make("correlation", r.features, value, p, np.nan, cfg.min_association,
                                                    material_word="")
            # importance: both features' importance tests (intersection-union: the larger p)
            ea, eb = imp_final.get((a,)), imp_final.get((b,))
            if ea is not None and eb is not None:
                value = float(two_importance.get(r.features, np.nan))
                material = ea.material and eb.material
                p = max(ea.p_value, eb.p_value) if material else 1.0
                crit["importance"][r.features] = Evidence(
                    "importance", r.features, value, p, np.nan, max(ea.noise_level, eb.noise_level),
                    max(ea.threshold, eb.threshold), material, False,
                    "" if material else "")
                if surrogate is not None:
                    sa = float(surrogate.importance.get(a, np.nan))
                    sb = float(surrogate.importance.get(b, np.nan))
                    thr = max(ea.threshold, eb.threshold)
                    smat = bool(np.isfinite(sa) and np.isfinite(sb) and min(sa, sb) >= thr)
                    crit["surrogate_importance"][r.features] = Evidence(
                        "surrogate_importance", r.features, float(np.sqrt(sa * sb)), p if smat else 1.0, np.nan,
                        np.nan, thr, smat, False, "")
            # interaction: the additive part of the surface plus noise
            avg = np.asarray(r.average, dtype=float)
            mw = marginal_weights(r)
            stat = _interaction_stat(avg, r.kinds, mw)
            t = int(np.nanargmax(stat)) if np.isfinite(stat).any() else 0
            thr = threshold(t)
            if np.isfinite(thr) and stat[t] >= thr:
                e = noise_of(r, t)
                if e is None:
                    p, lvl = np.nan, np.nan
                else:
                    null = _interaction_stat(_additive_fit(avg[t], *mw)[None] + e, r.kinds, mw)
                    p, lvl = monte_carlo_p(stat[t], null, tol=1e-9 * sd[t]), noise_level(null)
            else:
                p, lvl = 1.0, np.nan
            crit["interaction"][r.features] = _make("interaction", r.features, stat[t], p, lvl, thr, material_word="",
                                                    reason_na="" if np.isfinite(p) else "noise not estimated (std_rows=0).")
        for c, items in crit.items():
            if items and c in cfg.criteria_2d:
                evidence[c] = _finish(items, cfg)
        if "intersection" in cfg.criteria_2d:
            inter = {}
            for r in two_d:
                passed = [c for c in ("correlation", "importance", "interaction", "surrogate_importance")
                          if c in evidence and r.features in evidence[c] and evidence[c][r.features].passed]
                if "importance" in passed and "surrogate_importance" in passed:
                    passed.remove("surrogate_importance")  # two readings of one fact: both features matter
                value = float(two_intersection.get(r.features, np.nan))
                ok = len(passed) >= 2
                why = (f"a finding under {len(passed)} criteria at once ({', '.join(passed)})." if ok else
                       f"a finding under {len(passed)} criteria" + (f" ({', '.join(passed)})" if passed else "")
                       + "; intersection needs at least two.")
                inter[r.features] = Evidence("intersection", r.features, value, np.nan, np.nan, np.nan, 2.0, ok, ok, why)
            evidence["intersection"] = inter
    evidence["importance_1d"] = imp_final
    return evidence


def _test_1d(uid, s, r, t, w, cells, inputs, noise_of, draws, sd):
    """(p-value, noise level, reason when untestable) of one material 1D utility score."""
    cfg = inputs.config
    tol = 1e-9 * (sd[t] if np.isfinite(sd[t]) else 1.0)
    if uid == "ice_variance":
        # without heterogeneity the centred curves coincide and the score is exactly 0 in any sample
        return (0.0 if s.value > tol else 1.0), np.nan, ""
    e = noise_of(r, t)
    if e is None:
        return np.nan, np.nan, "noise not estimated (no ICE curves or standard errors for this PD)."
    if uid == "monotonicity":
        null = _null_monotonicity(s, e, w, cfg.loss, bool(s.details.get("declared")))
    elif uid == "lipschitz":
        # each draw is a bounded least-squares refit: half the draws keep the cost of this test near the others'
        null = _null_lipschitz(s, e[: max(20, draws // 2)], r, w, cfg.loss)
    elif uid == "slope":
        null = _null_slope(e, r)
    elif uid == "incidence":
        yv = inputs.observed(s.target)
        null = _null_incidence(r.average[t], e, cells, yv, r.grid_shape, w, cfg.loss, inputs.is_classifier,
                               _rng(r.features, "incidence"), draws)
    elif uid.startswith("similarity:"):
        name = uid.split(":", 1)[1]
        other = inputs.comparisons.get(name, {}).get(r.features)
        e2 = None
        if other is not None:
            try:
                e2 = pd_noise(other, other.target_index(s.target), draws, _rng(r.features, uid))
            except ValueError:
                e2 = None
        if e2 is None:  # the comparison PD kept no spread: take its noise to be as large as this PD's (independent)
            e2 = pd_noise(r, t, draws, _rng(r.features, uid + "|proxy"))
        null = _gap(e - (0 if e2 is None else e2), w, cfg.loss)
    else:
        return np.nan, np.nan, f"no noise test for {uid}."
    if null is None:
        return np.nan, np.nan, "noise not estimated."
    return monte_carlo_p(s.value, null, tol=tol), noise_level(null), ""
