"""The Dask engine: an in-process LocalCluster gives the same results as the local run (to floating-point rounding:
the cluster computes on row partitions and merges them, :mod:`autopdp.pd.rows`; tests/test_rows.py has worker
processes)."""

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import GradientBoostingClassifier, RandomForestRegressor

import autopdp

distributed = pytest.importorskip("distributed", reason="dask[distributed] is the optional 'dask' extra")


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None)
    c = Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(300, 4)), columns=list("abcd")).assign(k=rng.choice(["x", "y"], 300))
    y = X.a * X.b + (X.k == "x") + rng.normal(0, 0.1, 300)
    return X, y


def _pd_tasks(stream) -> list:
    """The PD tasks (autopdp's row-partition runner) among a task stream's records."""
    return [t for t in stream.data if str(t["key"]).startswith("run_partition-")]


def test_brute_force_on_cluster_equals_local(client, data):
    from distributed import get_task_stream

    X, y = data
    model = GradientBoostingClassifier(n_estimators=20, random_state=0).fit(X[list("abcd")], y > 0.5)
    Xn = X[list("abcd")]
    with get_task_stream(client) as local_stream:
        local = autopdp.compute_all(model, Xn, grid_resolution=6, method="brute")
    with get_task_stream(client) as remote_stream:
        remote = autopdp.compute_all(model, Xn, grid_resolution=6, method="brute",
                                     options=autopdp.PDOptions(subsample=1000, scheduler=client))
    assert [r.features for r in local] == [r.features for r in remote]
    for a, b in zip(local, remote):
        np.testing.assert_allclose(b.average, a.average, rtol=0, atol=1e-12)
        np.testing.assert_allclose(b.std, a.std, rtol=0, atol=1e-12)
    # the remote work ran as tasks on the cluster's workers, every task done; the local run sent none
    assert _pd_tasks(local_stream) == []
    tasks = _pd_tasks(remote_stream)
    workers = set(client.scheduler_info()["workers"])
    assert len(tasks) >= 2 and {t["worker"] for t in tasks} <= workers
    assert all(t["status"] == "OK" for t in tasks)
    # 4 features: 4 1D + 6 2D PDs, each merged from the two workers' row partitions
    assert len(remote) == 10


def test_audit_on_cluster_equals_local(client, data):
    X, y = data
    Xn = X[list("abcd")]
    model = RandomForestRegressor(n_estimators=10, random_state=0).fit(Xn, y)
    cfg = autopdp.AuditConfig(grid_resolution=6, grid_resolution_2d=4)
    from distributed import get_task_stream

    local = autopdp.audit(model, Xn, y, config=cfg)
    with get_task_stream(client) as stream:
        remote = autopdp.audit(model, Xn, y, config=cfg, scheduler=client)
    pd.testing.assert_frame_equal(local.scores, remote.scores)
    tasks = _pd_tasks(stream)
    assert tasks and {t["worker"] for t in tasks} <= set(client.scheduler_info()["workers"])
    assert local.results_2d[0].method == "tree" and remote.results_2d[0].method == "tree"


def test_scheduler_address_string_and_bad_address(client, data):
    X, y = data
    Xn = X[list("abcd")]
    model = RandomForestRegressor(n_estimators=5, random_state=0).fit(Xn, y)
    addr = client.scheduler.address
    (r,) = autopdp.partial_dependence(model, Xn, [("a", "b")], kind="average", scheduler=addr)
    (l,) = autopdp.partial_dependence(model, Xn, [("a", "b")], kind="average")
    np.testing.assert_allclose(r.average, l.average, rtol=0, atol=1e-12)
    with pytest.raises(TypeError, match="scheduler must be an address"):
        autopdp.partial_dependence(model, Xn, ["a"], scheduler=42)


def test_refits_run_one_dask_task_each_and_match_the_local_run(client):
    """Issue 31: with a scheduler each refit is one task (fit + its PDs); the learner-level decisions are the
    local run's."""
    from distributed import get_task_stream
    from sklearn.ensemble import HistGradientBoostingRegressor

    rng = np.random.default_rng(1)
    X = pd.DataFrame(rng.uniform(-1, 1, size=(400, 3)), columns=list("abz"))
    y = 2 * X.a + X.a * X.b + rng.normal(0, 0.3, 400)
    model = HistGradientBoostingRegressor(max_iter=30, random_state=0).fit(X, y)
    cfg = autopdp.AuditConfig(refits=3, pairs=(("a", "b"),), grid_resolution=6, grid_resolution_2d=4,
                              utilities=("slope",))
    local = autopdp.audit(model, X, y, train=(X, y), config=cfg, progress=False)
    with get_task_stream(client) as ts:
        remote = autopdp.audit(model, X, y, train=(X, y), config=cfg, scheduler=client, progress=False)
    refit_tasks = {str(t["key"]) for t in ts.data if str(t["key"]).startswith("_one_refit-")}
    assert len(refit_tasks) == 3
    assert remote.refits.fitted == 3 and remote.refits.seeds == local.refits.seeds
    for crit, by in local.evidence.items():
        for key, e in by.items():
            assert remote.evidence[crit][key].robust == e.robust, (crit, key)
    assert np.allclose(remote.refit_curves[("a",)], local.refit_curves[("a",)])
