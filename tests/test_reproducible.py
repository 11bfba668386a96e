"""results.json is byte-identical whatever n_jobs: every reduction runs in a fixed order.

Each audit runs in its own Python process (fresh thread pools, fresh hashing
seeds), with n_jobs=1 and n_jobs=2, on a tree model (exact tree path) and on a
model that goes through the brute-force engine; the JSON of the audit, minus
its ``run`` block (date and timings), must be the same bytes.
"""

import hashlib
import subprocess
import sys
import tempfile

import pytest

SCRIPT = r"""
import hashlib, json, sys
import numpy as np, pandas as pd
import autopdp
from autopdp.auditing.record import RUN_KEY

kind, n_jobs = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(5)
n = 240
X = pd.DataFrame(rng.normal(size=(n, 4)), columns=["a", "b", "c", "d"])
X["e"] = pd.Categorical(rng.choice(["p", "q", "r"], n))
y = ((X.a * X.b + (X.e == "q") + 0.3 * rng.normal(size=n)) > 0.2).astype(int)
if kind == "tree":
    from sklearn.ensemble import HistGradientBoostingClassifier
    model = HistGradientBoostingClassifier(max_iter=20, categorical_features="from_dtype", random_state=0).fit(X, y)
else:
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, PolynomialFeatures
    model = make_pipeline(
        make_column_transformer((OneHotEncoder(), ["e"]), (PolynomialFeatures(2), ["a", "b", "c", "d"])),
        LogisticRegression(max_iter=2000),
    ).fit(X, y)
cfg = autopdp.AuditConfig(grid_resolution=8, grid_resolution_2d=5, max_batch_mb=1)
audit = autopdp.audit(model, X, y, config=cfg, n_jobs=n_jobs, random_state=0, progress=False)
d = json.loads(audit.to_json())
d.pop(RUN_KEY)
print(audit.metadata["pd_method"], hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest())
"""


def _run(kind, n_jobs):
    # run outside the repository: `python -c` puts the working directory first on sys.path, and the
    # source tree there must not shadow the installed package
    out = subprocess.run([sys.executable, "-c", SCRIPT, kind, str(n_jobs)], capture_output=True, text=True,
                         timeout=900, cwd=tempfile.gettempdir())
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.split()


@pytest.mark.parametrize("kind,method", [("tree", "tree"), ("brute", "brute")])
def test_results_json_identical_across_n_jobs_and_processes(kind, method):
    one = _run(kind, 1)
    two = _run(kind, 2)
    assert one[0] == two[0] == method
    assert one[1] == two[1]
    assert len(one[1]) == len(hashlib.sha256().hexdigest())
