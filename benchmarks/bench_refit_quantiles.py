"""The learner-level test's quantiles: normal, t on K - 1 degrees of freedom, or the cheap subsampling bootstrap
(issue 53, item 5: "whichever holds the level with more power; measure both").

    python benchmarks/bench_refit_quantiles.py [--seeds 200] [--train 400] [--refits 10]

Data: x1..x4 ~ U(-1, 1), y = 2 x1 + b x2 + N(0, 1) with b = 0.41, so x2's population PD importance (density-weighted
sd, 0.41 / sqrt 3) is 4.0x the materiality threshold (0.05 x the sd of the true predictions); x3 and x4 are pure
noise.  Each seed draws ``train`` training rows and 400 audit rows, fits a gradient boosting regressor (100 trees,
depth 3) and audits it with ``refits`` refits on half-samples (pairs off, importance only).  Per feature, three
one-sided 5% tests of "the importance is at most the threshold" at the learner level, from the same refits (no
multiple-testing adjustment, so the three compare as tests):

* ``normal``: the learner-PD's (the refits' mean PD's) importance against Monte-Carlo draws of the importance of
  that PD shrunk to the threshold plus the PD's noise over the audit rows plus normal draws of the refits'
  Nadeau-Bengio corrected spread (``(1/K + 1) S``): the audit's learner-level test without its studentizing;
* ``t (K-1)``: the same, the refits' part a multivariate t on K - 1 degrees of freedom (its scale is estimated
  from K refits);
* ``subsampling``: the cheap subsampling bootstrap (Ohlendorff et al. 2025): the *full fit's* importance, its
  PD shrunk to the threshold plus the rows' noise plus the refits' spread around the full fit's PD
  (``m / (n - m) x mean_k (PD_k - PD)(PD_k - PD)^T``, ``m = n / 2``: factor 1) as a multivariate t on K degrees of
  freedom.

Also printed: x2's learner-PD importance's variance over the seeds against the mean of its estimated variance (the
Nadeau-Bengio corrected refits' part plus the rows' part, linearised), their ratio (issue 53: 1.25-1.5).
Beside them, the audit's own decision (``robust``, its Monte-Carlo learner-level test, Benjamini-Hochberg across the
four features).  Printed: the share of noise features (2 per seed) each test calls robust (level) and the share of
seeds in which x2 is (power at 4x the threshold), with 95% Clopper-Pearson intervals and ``uptime``'s load.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.ensemble import GradientBoostingRegressor

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scale import _load  # noqa: E402 - the load average, as every benchmark prints it
from calibration_cases import clopper_pearson  # noqa: E402
from autopdp import AuditConfig, audit  # noqa: E402
from autopdp.findings.null_draws import at_threshold  # noqa: E402
from autopdp.findings.significance import pd_noise_model  # noqa: E402
from autopdp.scores.importance import flatness, marginal_weights  # noqa: E402

B = 0.41
COLUMNS = ("x1", "x2", "x3", "x4")
NOISE = ("x3", "x4")
METHODS = ("normal", "t (K-1)", "subsampling", "audit (robust)")



def _data(rng, n):
    X = pd.DataFrame(rng.uniform(-1, 1, size=(n, 4)), columns=list(COLUMNS))
    return X, 2 * X.x1.to_numpy() + B * X.x2.to_numpy() + rng.standard_normal(n)


DRAWS = 2000


def _p(observed, centre, rows, spread, kind, w, rng, dof=None) -> float:
    """Monte-Carlo p of "importance <= threshold": the importance of the least favourable curve ``centre`` plus
    the rows' noise (factor ``rows``) plus the refits' part (factor ``spread``), that part a multivariate t on
    ``dof`` degrees of freedom (its scale estimated from the refits) or normal (``dof`` None)."""
    e = rng.standard_normal((DRAWS, rows.shape[0])) @ rows if rows is not None else 0.0
    part = rng.standard_normal((DRAWS, spread.shape[0])) @ spread
    if dof is not None:
        part = part * np.sqrt(dof / rng.chisquare(dof, DRAWS))[:, None]
    null = flatness(centre[None] + e + part, kind, axis=-1, weights=w)
    return float((1 + np.sum(null >= observed)) / (DRAWS + 1))


def _decisions(a, r, k: int, correction: float, rng) -> dict:
    """The three tests' decisions at 5% for PD ``r`` (one target), and the audit's."""
    curves = np.asarray(a.refit_curves[r.features], dtype=float)[:, 0, :]
    w, kind = marginal_weights(r)[0], r.kinds[0]
    thr = float(a.evidence["importance_1d"][r.features].threshold)
    noise = pd_noise_model(r, 0)
    rows = None if noise is None else noise.factor
    out = {"audit (robust)": bool(a.evidence["importance_1d"][r.features].robust)}
    mean = curves.mean(axis=0)
    learner = float(flatness(mean[None], kind, axis=-1, weights=w)[0])
    spread = np.sqrt(correction / (k - 1)) * (curves - mean)
    flat = np.full(mean.size, float(np.sum(w * mean) / np.sum(w)))
    centre = at_threshold(mean, flat, learner, thr)
    out["normal"] = learner >= thr and _p(learner, centre, rows, spread, kind, w, rng) <= 0.05
    # the learner-PD importance and its estimated variance (Nadeau-Bengio corrected refits' part + the rows' part,
    # linearised through the importance's gradient), to set against the variance measured over seeds
    wn = np.asarray(w, dtype=float) / np.sum(w)
    g = wn * (mean - wn @ mean) / learner if learner > 0 else np.zeros_like(mean)
    out["importance"] = learner
    out["variance"] = float(np.sum((spread @ g) ** 2) + (np.sum((rows @ g) ** 2) if rows is not None else 0.0))
    out["t (K-1)"] = learner >= thr and _p(learner, centre, rows, spread, kind, w, rng, dof=k - 1) <= 0.05
    full_curve = np.asarray(r.average[0], dtype=float).ravel()
    full = float(flatness(full_curve[None], kind, axis=-1, weights=w)[0])
    sub = np.sqrt(1.0 / k) * (curves - full_curve)  # m / (n - m) = 1 for half-samples
    centre = at_threshold(full_curve, np.full(mean.size, float(np.sum(w * full_curve) / np.sum(w))), full, thr)
    out["subsampling"] = full >= thr and _p(full, centre, rows, sub, kind, w, rng, dof=k) <= 0.05
    return out


def run(seed: int, n_train: int, k: int) -> dict:
    rng = np.random.default_rng(seed)
    Xt, yt = _data(rng, n_train)
    Xa, ya = _data(rng, 400)
    model = GradientBoostingRegressor(n_estimators=100, max_depth=3, random_state=seed).fit(Xt, yt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = audit(model, Xa, ya, train=(Xt, yt), random_state=seed, progress=False,
                  config=AuditConfig(refits=k, pairs=False, utilities=("slope",)))
    return {r.features[0]: _decisions(a, r, k, float(a.refits.correction), rng) for r in a.results
            if r.ndim == 1 and r.features in a.refit_curves}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--train", type=int, default=400)
    ap.add_argument("--refits", type=int, default=10)
    args = ap.parse_args(argv)
    started = time.perf_counter()
    runs = [run(s, args.train, args.refits) for s in range(args.seeds)]
    print(f"{args.seeds} seeds, {args.train} training rows, K = {args.refits} refits on half-samples "
          f"(load {_load()}, {time.perf_counter() - started:.0f} s)")
    imp = np.array([r["x2"]["importance"] for r in runs if "x2" in r])
    est = np.array([r["x2"]["variance"] for r in runs if "x2" in r])
    print(f"  x2's learner-PD importance over seeds: variance {imp.var(ddof=1):.3g}; the mean estimate (Nadeau-Bengio "
          f"+ rows) {est.mean():.3g}: ratio {est.mean() / imp.var(ddof=1):.2f}")
    for m in METHODS:
        level = [bool(r[f][m]) for r in runs for f in NOISE if f in r]
        power = [bool(r["x2"][m]) for r in runs if "x2" in r]
        lo, hi = clopper_pearson(sum(level), len(level))
        plo, phi = clopper_pearson(sum(power), len(power))
        print(f"  {m:15s} level {sum(level):4d}/{len(level)} = {np.mean(level):6.1%} [{lo:.1%}, {hi:.1%}]   "
              f"power at 4x {sum(power):4d}/{len(power)} = {np.mean(power):6.1%} [{plo:.1%}, {phi:.1%}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
