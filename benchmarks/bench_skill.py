"""A pure-noise model read as that (issue 53): how often the summary leads with "no skill", and its findings.

    python benchmarks/bench_skill.py [--seeds 50]

Each seed: 20 features ~ N(0, 1), a binary target drawn independently of them (pure noise); a default
HistGradientBoostingClassifier fitted on 1,000 rows and audited on 1,000 other rows (pairs off, default settings).
Prints, with 95% Clopper-Pearson intervals: the share of seeds whose summary leads with "The model shows no
skill" (nominal: at least 95%, the skill test being one-sided at 5%), the 1D findings per seed (true of the fitted
model), and the findings on features the held-out permutation importance shows to matter (nominal: about 5% of
features by chance, before Benjamini-Hochberg).  `uptime`'s load is printed beside the figures.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.ensemble import HistGradientBoostingClassifier

sys.path.insert(0, str(Path(__file__).resolve().parent))
from calibration_cases import clopper_pearson  # noqa: E402
from autopdp import AuditConfig, audit
from autopdp.report.overview import skill


def _ci(k: int, n: int) -> str:
    lo, hi = clopper_pearson(k, n)
    return f"{k}/{n} {k / n:6.1%} [{lo:5.1%}, {hi:5.1%}]"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=50)
    args = ap.parse_args(argv)
    print(f"load at start: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    started = time.perf_counter()
    no_skill, findings, supported, features = 0, [], 0, 0
    for seed in range(args.seeds):
        rng = np.random.default_rng(seed)
        X = pd.DataFrame(rng.normal(size=(2000, 20)), columns=[f"x{i}" for i in range(20)])
        y = pd.Series(rng.integers(0, 2, 2000), name="y")
        model = HistGradientBoostingClassifier(random_state=seed).fit(X[:1000], y[:1000])
        a = audit(model, X[1000:].reset_index(drop=True), y[1000:].reset_index(drop=True),
                  config=AuditConfig(pairs=False), random_state=seed)
        no_skill += skill(a)["sentence"].startswith("The model shows no skill")
        passed = [(c, f) for c, by in a.evidence.items() for f, e in by.items() if e.passed]
        findings.append(len(passed))
        pfi = a.metadata["permutation_importance"]["features"]
        supported += sum(pfi[f[0]]["shown"] for c, f in passed if len(f) == 1)
        features += len(pfi)
    print(f"summary leads with 'no skill'                 {_ci(no_skill, args.seeds)}")
    print(f"1D findings per seed (of the fitted model)    median {np.median(findings):.0f}, "
          f"range {min(findings)}-{max(findings)}")
    print(f"findings on features the held-out data show   {supported} of {sum(findings)}")
    print(f"({time.perf_counter() - started:.0f} s; load at end: "
          f"{subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
