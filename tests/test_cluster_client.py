"""On a Dask cluster the calling process coordinates: it runs no compiled kernel and never imports numba (about
130 MB of its memory, issue 54).  The trees' check, the trees' constant, the OOD check and StratPD's trees run on
the workers; every score equals the local audit's.

The cluster's audits run in a child process whose imports of numba fail (a meta-path finder that refuses it), with
a real LocalCluster of worker processes (spawned: they import numba as usual)."""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import autopdp

distributed = pytest.importorskip("distributed", reason="dask[distributed] is the optional 'dask' extra")

TESTS = Path(__file__).resolve().parent
TRUST = ["ood_share", "stratpd", "ale_divergence"]


def _table(n=1500, seed=3):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"a": rng.normal(size=n), "b": rng.integers(0, 6, n).astype(float),
                       "c": pd.Categorical(rng.choice(list("xyz"), n))})
    df.loc[rng.random(n) < 0.05, "a"] = np.nan
    eta = np.nan_to_num(df.a) * (df.c == "x") + np.sin(df.b)
    df["y"] = (rng.random(n) < 1 / (1 + np.exp(-eta.to_numpy()))).astype(int)
    return df


def _model(df):
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(max_iter=25, categorical_features="from_dtype", random_state=0).fit(
        df[["a", "b", "c"]], df.y)


CONFIG = dict(grid_resolution=8, grid_resolution_2d=4, noise_draws=30, subsample=200)

CHILD = textwrap.dedent("""
    import json, sys
    from pathlib import Path

    class NoNumba:  # the calling process must not need numba: importing it fails here
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] in ("numba", "llvmlite"):
                raise ImportError("numba is refused in this calling process")

    sys.meta_path.insert(0, NoNumba())
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    import autopdp
    from clusters import process_cluster
    from test_cluster_client import CONFIG, TRUST, _model, _table
    from autopdp.pd.distributed import resident_rows
    from autopdp.pd.partframe import parquet_frame

    df = _table()
    model = _model(df)
    folder = Path(sys.argv[2])
    folder.mkdir()
    for i, (a, b) in enumerate([(0, 400), (400, 401), (401, 1500)]):
        df.iloc[a:b].to_parquet(folder / f"part-{i}.parquet", index=False)
    cfg = autopdp.AuditConfig(**CONFIG)
    out = {}
    with process_cluster(2) as (_, client):
        with resident_rows(client):
            frame = parquet_frame(client, sorted(folder.glob("*.parquet")), columns=["a", "b", "c"])
            parts = autopdp.audit(model, frame, "y", config=cfg, scheduler=client, progress=False)
        here = autopdp.audit(model, df[["a", "b", "c"]], df.y, config=cfg, scheduler=client, progress=False)
    for name, a in (("parts", parts), ("frame", here)):
        out[name] = {"methods": sorted({r.method for r in a.results}),
                     "features": [list(f) for f in a.scores["features"]],
                     "trust": a.scores[TRUST].to_numpy(dtype=float).tolist()}
    out["numba"] = sorted(m for m in sys.modules if m.split(".")[0] in ("numba", "llvmlite"))
    print(json.dumps(out))
""")


def test_an_audit_on_a_cluster_runs_no_compiled_kernel_here_and_equals_the_local_one(tmp_path):
    child = subprocess.run([sys.executable, "-c", CHILD, str(TESTS), str(tmp_path / "parts")],
                           capture_output=True, text=True, timeout=900)
    assert child.returncode == 0, child.stderr[-3000:]
    got = json.loads(child.stdout.strip().splitlines()[-1])
    assert got["numba"] == []  # never imported (an import would have failed the audit)
    df = _table()
    local = autopdp.audit(_model(df), df[["a", "b", "c"]], df.y, config=autopdp.AuditConfig(**CONFIG),
                          progress=False)
    want = local.scores[TRUST].to_numpy(dtype=float)
    assert np.isfinite(want).any(axis=0).all()  # each trust check measured something
    for name in ("parts", "frame"):
        assert got[name]["methods"] == ["tree"]
        assert got[name]["features"] == [list(f) for f in local.scores["features"]]
        np.testing.assert_allclose(np.array(got[name]["trust"], dtype=float), want, rtol=1e-7, atol=1e-9)
