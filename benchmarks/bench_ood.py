"""The out-of-distribution check alone on 5,000 x p (default 60) normal features: SupportModel build + every share
(p 1D PDs at 20 points, p(p-1)/2 2D PDs at 10 x 10), as in bench_boosted case C.  python benchmarks/bench_ood.py [p]"""
import sys, time, itertools
import numpy as np, pandas as pd
from autopdp.pd.data import as_frame
from autopdp.trust.ood import SupportModel
p = int(sys.argv[1]) if len(sys.argv) > 1 else 60
rng = np.random.default_rng(0)
X = pd.DataFrame(rng.normal(size=(5000, p)), columns=[f"x{i}" for i in range(p)])
kinds = {c: "numeric" for c in X.columns}
g1 = {c: np.quantile(X[c], np.linspace(0.05, 0.95, 20)) for c in X.columns}
g2 = {c: np.quantile(X[c], np.linspace(0.05, 0.95, 10)) for c in X.columns}
frame = as_frame(X)
SupportModel(as_frame(X.iloc[:300]), kinds).share(("x0", "x1"), (g2["x0"], g2["x1"]))  # JIT warm-up
t0 = time.perf_counter(); sm = SupportModel(frame, kinds); tb = time.perf_counter() - t0
t0 = time.perf_counter(); s1 = [sm.share((c,), (g1[c],)).mean() for c in X.columns]; t1 = time.perf_counter() - t0
t0 = time.perf_counter(); s2 = [sm.share((a, b), (g2[a], g2[b])).mean() for a, b in itertools.combinations(X.columns, 2)]
t2 = time.perf_counter() - t0
print(f"p={p}: build {tb:.2f} s, 1D shares {t1:.2f} s, 2D shares {t2:.2f} s, total {tb+t1+t2:.2f} s; "
      f"mean share 1D {np.mean(s1):.4f} 2D {np.mean(s2):.4f}")
