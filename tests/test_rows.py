"""Rows as the unit of work (issue 54): PDs computed on row partitions and merged equal one pass over every row, at
every partition count, on the tree path and by brute force, with weights, missing values, kept ICE rows and 2D
sets; a Dask cluster of worker processes gets one partition per task, and a worker lost mid-audit is replaced."""

import itertools
import os

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestRegressor

import autopdp
from autopdp.pd.options import PDOptions
from autopdp.pd.partial_dependence import run_partition
from autopdp.pd.rows import merge, partitions, row_bounds, splits_by_rows
from autopdp.pd.setup import _Setup
from clusters import process_cluster  # noqa: E402


@pytest.fixture(scope="module")
def case():
    rng = np.random.default_rng(0)
    n = 700
    X = pd.DataFrame(rng.normal(size=(n, 4)), columns=list("abcd"))
    X.loc[rng.random(n) < 0.1, "c"] = np.nan
    y = (X.a * X.b + X.c.fillna(0) + rng.normal(size=n) > 0).astype(int)
    w = rng.exponential(size=n)
    w[:60] = 0.0  # a partition of zero weight at 7 and more partitions
    return HistGradientBoostingClassifier(max_iter=30, random_state=0).fit(X, y), X, w


def _setup(model, X, w, method, subsample):
    setup = _Setup(model, X, response="auto", grid_resolution=7, percentiles=(0.05, 0.95), custom_values=None,
                   categorical_features=None, sample_weight=w, kind="both", method=method,
                   options=PDOptions(subsample=subsample, random_state=1))
    plan = setup.tree_plan()
    if plan is not None:
        plan.prepare(setup.weights, rows=True)
    return setup


JOBS = [((p,), True) for p in range(4)] + [((a, b), False) for a, b in itertools.combinations(range(4), 2)]


@pytest.mark.parametrize("method", ["tree", "brute"])
@pytest.mark.parametrize("subsample", [None, 100])
def test_merged_partitions_equal_one_pass_at_every_partition_count(case, method, subsample):
    model, X, w = case
    one = autopdp.compute_all(model, X, sample_weight=w, method=method, grid_resolution=7,
                              options=PDOptions(subsample=subsample, random_state=1))
    setup = _setup(model, X, w, method, subsample)
    assert splits_by_rows(setup, JOBS)
    for parts in (1, 2, 3, 7, 64, 700):
        bounds = row_bounds(len(X), parts)
        assert bounds[0][0] == 0 and bounds[-1][1] == len(X) and len(bounds) == parts
        merged = merge(setup, [run_partition(p, JOBS) for p in partitions(setup, JOBS, parts)[0]], bounds)
        assert [r.features for r in merged] == [r.features for r in one]
        for a, b in zip(one, merged):
            assert b.method == a.method and b.n_rows == a.n_rows and b.total_weight == pytest.approx(a.total_weight)
            np.testing.assert_allclose(b.average, a.average, rtol=0, atol=1e-12)
            np.testing.assert_allclose(b.std, a.std, rtol=0, atol=1e-12)
            np.testing.assert_allclose(b.stderr, a.stderr, rtol=0, atol=1e-12)
            np.testing.assert_array_equal(b.counts, a.counts)
            assert (a.ice_rows is None) == (b.ice_rows is None)
            if a.ice_rows is not None:
                np.testing.assert_array_equal(a.ice_rows, b.ice_rows)
            if a.individual is not None:  # each kept row's own curve, in the call's order
                np.testing.assert_array_equal(b.individual, a.individual)
            if parts > 1:
                assert any("row partitions" in note for note in b.notes)


def test_a_call_that_cannot_be_split_by_rows_is_not(case):
    model, X, w = case
    assert not splits_by_rows(_setup(model, X, None, "recursion", None), JOBS)


@pytest.fixture(scope="module")
def cluster():
    pytest.importorskip("distributed", reason="dask[distributed] is the optional 'dask' extra")
    with process_cluster(2) as made:
        yield made


def test_an_audit_on_worker_processes_equals_the_local_one_one_partition_per_task(cluster):
    from distributed import get_task_stream

    _, client = cluster
    rng = np.random.default_rng(2)
    X = pd.DataFrame(rng.uniform(-1, 1, size=(3000, 4)), columns=list("abcd"))
    y = 2 * X.a * np.sign(X.b) + X.c + rng.normal(0, 0.3, 3000)
    model = RandomForestRegressor(30, min_samples_leaf=5, random_state=0).fit(X, y)
    cfg = autopdp.AuditConfig(grid_resolution=8, grid_resolution_2d=5, noise_draws=50)
    local = autopdp.audit(model, X, y, config=cfg, progress=False)
    with get_task_stream(client) as stream:
        remote = autopdp.audit(model, X, y, config=cfg, scheduler=client, progress=False)
    sd = float(np.std(model.predict(X)))
    for a, b in zip(local.results, remote.results):
        assert a.features == b.features and b.method == "tree"
        assert np.max(np.abs(a.average - b.average)) <= 1e-9 * sd
    tasks = [t for t in stream.data if str(t["key"]).startswith("run_partition-")]
    workers = set(client.scheduler_info()["workers"])
    # 1D and 2D: one task per partition each, on the workers (the scheduler places the partitions and may move a
    # task to the other worker, so which worker ran which is not asserted); the PD outside the grid: each
    # partition's moved sums
    assert len(tasks) == 4 and {t["worker"] for t in tasks} <= workers
    assert len([t for t in stream.data if str(t["key"]).startswith("_moved_sums-")]) == 2
    # the exact ALE's row sums ran on the workers too: the same ALE gaps
    assert len([t for t in stream.data if str(t["key"]).startswith("_ale_partition-")]) == 2
    # the held-out permutation importance: one task per feature, the same numbers
    assert len([t for t in stream.data if str(t["key"]).startswith("_increase-")]) == 4
    for name, v in local.metadata["permutation_importance"]["features"].items():
        assert remote.metadata["permutation_importance"]["features"][name] == v
    # the per-row passes over the data frame given here ran there as well, one task per partition each: the
    # scores' associations and cell tables, the self-check's PD on every row, the data summary
    for name in ("_on_frame-", "_tables_part-", "_part_average-", "_summary_part-"):
        ran = [t for t in stream.data if str(t["key"]).startswith(name)]
        assert ran and len(ran) % 2 == 0 and {t["worker"] for t in ran} <= workers, name
    assert remote.run["self_check"]["status"] == local.run["self_check"]["status"] == "passed"
    # each partition's rows were sent once for all of these calls, and stayed on a worker
    assert len([t for t in stream.data if str(t["key"]).startswith("rows-")]) == 2
    # the tree path's check ran there first, and left each partition's raw scores with its rows
    assert len([t for t in stream.data if str(t["key"]).startswith("_check_partition-")]) == 2
    assert len([t for t in stream.data if str(t["key"]).startswith("ownrows-")]) == 2
    np.testing.assert_allclose(remote.scores["ale_divergence"].to_numpy(dtype=float),
                               local.scores["ale_divergence"].to_numpy(dtype=float), rtol=1e-9, atol=1e-12)
    outside = [(o["feature"], o["side"], o["pd_edge"], o["pd_beyond"]) for o in local.metadata["outside_grid"]]
    assert outside and len(outside) == len(remote.metadata["outside_grid"])
    for (f, side, edge, beyond), o in zip(outside, remote.metadata["outside_grid"]):
        assert (f, side) == (o["feature"], o["side"])
        assert abs(edge - o["pd_edge"]) <= 1e-9 * sd and abs(beyond - o["pd_beyond"]) <= 1e-9 * sd
    assert [e.passed for c in local.evidence.values() for e in c.values()] == \
        [e.passed for c in remote.evidence.values() for e in c.values()]
    assert [(r["feature"], r["finding"]) for r in local.regions()] == \
        [(r["feature"], r["finding"]) for r in remote.regions()]


def _ale_case():
    from sklearn.ensemble import HistGradientBoostingRegressor

    rng = np.random.default_rng(5)
    X = pd.DataFrame(rng.normal(size=(900, 3)), columns=list("abc"))
    X.loc[rng.random(900) < 0.1, "b"] = np.nan
    y = X.a * X.b.fillna(0) + X.c + 0.1 * rng.normal(size=900)
    return HistGradientBoostingRegressor(max_iter=40, random_state=0).fit(X, y), X


def test_ale_row_sums_on_partitions_add_up_to_one_pass(cluster):
    """ALE's per-interval and per-cell sums (autopdp.trust.ale.ale_sums) of row partitions add up to those of all
    the rows, 1D and 2D, with missing values, at every partition count; on worker processes the curves are the
    one-pass curves."""
    from autopdp.pd.tree.exact_ice import ExactICE
    from autopdp.trust.ale import _edges, _lower, ale_curves_exact, ale_sums

    model, X = _ale_case()
    source = ExactICE(model, X)
    frame = source.setup.frame
    ea, eb = _edges(X.a.to_numpy(), 8), _edges(X.b.to_numpy(), 5)
    okb = np.isfinite(X.b.to_numpy())
    work = [((0,), (ea,)), ((1,), (eb,)), ((0, 1), (ea, eb))]
    whole = ale_sums(source, work, 0)
    assert [int(c.sum()) for c, _ in whole] == [len(X), int(okb.sum()), int(okb.sum())]
    # known answer: the rows per interval and cell from each row's own interval, counted directly
    la, lb = _lower(ea, X.a.to_numpy()), _lower(eb, X.b.to_numpy())
    np.testing.assert_array_equal(whole[0][0], np.bincount(la, minlength=ea.size - 1))
    np.testing.assert_array_equal(whole[2][0].ravel(), np.bincount((la * (eb.size - 1) + lb)[okb],
                                                                   minlength=(ea.size - 1) * (eb.size - 1)))
    for parts in (2, 3, 11, 900):
        per = [ale_sums(source.for_rows(a, b), work, 0) for a, b in row_bounds(len(X), parts)]
        for i, (counts, sums) in enumerate(whole):
            np.testing.assert_array_equal(sum(p[i][0] for p in per), counts)
            np.testing.assert_allclose(sum(p[i][1] for p in per), sums, rtol=0, atol=1e-10)
    _, client = cluster
    kwargs = dict(bins_1d={"a": 8, "b": 5}, bins_2d={("a", "b"): 5})
    one = ale_curves_exact(source, frame, ["a", "b"], [("a", "b")], **kwargs)
    from autopdp.pd import distributed as dist

    sent = []
    original = dist.run_partitions_on_dask

    def spy(scheduler, fn, parts, payloads, refresh=False):
        sent.extend(payloads)
        return original(scheduler, fn, parts, payloads, refresh)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(dist, "run_partitions_on_dask", spy)
        split = ale_curves_exact(source, frame, ["a", "b"], [("a", "b")], scheduler=client, **kwargs)
    # each partition finds its own rows' intervals: what is sent is the edges, no row-long array
    arrays = [a for payload in sent for positions, edges in payload[0] for a in edges]
    assert len(sent) == 2 and arrays and max(a.size for a in arrays) <= 9 < len(X) // 2
    assert set(one) == set(split) == {"a", "b", ("a", "b")}
    for key in one:
        np.testing.assert_array_equal(split[key].counts, one[key].counts)
        np.testing.assert_allclose(split[key].pd, one[key].pd, rtol=0, atol=1e-12)


class _DiesOnce:
    """A model whose first prediction inside a Dask worker ends that worker's process (a machine lost mid-audit);
    every other prediction is the fitted model's."""

    def __init__(self, model, flag, each_worker: bool = False):
        self.model, self.flag, self.each_worker = model, str(flag), each_worker
        self.n_features_in_ = model.n_features_in_

    def predict(self, X):
        try:
            from distributed import get_worker

            worker = get_worker()
        except ValueError:
            return self.model.predict(X)  # not in a worker
        flag = f"{self.flag}-{worker.name}" if self.each_worker else self.flag  # a name outlives its restarts
        try:  # created atomically: of two workers predicting at once, only one dies (one each: each_worker)
            os.close(os.open(flag, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return self.model.predict(X)
        os._exit(1)


def test_a_worker_lost_mid_audit_is_replaced_and_the_answer_is_the_same(cluster, tmp_path):
    import sys

    import cloudpickle

    _, client = cluster
    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.uniform(-1, 1, size=(400, 3)), columns=list("abc"))
    y = X.a + X.b * X.c + rng.normal(0, 0.1, 400)
    model = _DiesOnce(RandomForestRegressor(10, random_state=0).fit(X, y), tmp_path / "died")
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import this test module
    local = autopdp.compute_all(model.model, X, grid_resolution=5, method="brute")
    remote = autopdp.compute_all(model, X, grid_resolution=5, method="brute",
                                 options=autopdp.PDOptions(subsample=1000, scheduler=client))
    assert (tmp_path / "died").exists()  # a worker did die
    for a, b in zip(local, remote):
        np.testing.assert_allclose(b.average, a.average, rtol=0, atol=1e-12)


def test_every_worker_lost_at_once_mid_audit_is_replaced_and_the_answer_is_the_same(cluster, tmp_path):
    """Both workers die at their first prediction, at about the same time, so for a moment no worker is alive. The
    rows' partitions were once pinned to their workers' addresses: the restarted workers have new addresses, and
    the audit waited for the old ones for ever (a fresh-clone test run hung 13 minutes). Now the scheduler places
    them again and the answer is the same, within a bound."""
    import sys
    import threading

    import cloudpickle

    _, client = cluster
    client.wait_for_workers(2, timeout=120)
    rng = np.random.default_rng(5)
    X = pd.DataFrame(rng.uniform(-1, 1, size=(400, 3)), columns=list("abc"))
    y = X.a - X.b * X.c + rng.normal(0, 0.1, 400)
    model = _DiesOnce(RandomForestRegressor(10, random_state=0).fit(X, y), tmp_path / "died", each_worker=True)
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    local = autopdp.compute_all(model.model, X, grid_resolution=5, method="brute")
    got = []
    run = threading.Thread(target=lambda: got.append(autopdp.compute_all(
        model, X, grid_resolution=5, method="brute", options=autopdp.PDOptions(subsample=1000, scheduler=client))),
        daemon=True)
    run.start()
    run.join(timeout=240)
    assert got, "the audit did not finish within 240 s after every worker died"
    assert len(list(tmp_path.glob("died-*"))) == 2  # both workers did die
    for a, b in zip(local, got[0]):
        np.testing.assert_allclose(b.average, a.average, rtol=0, atol=1e-12)


class _Shifted(RandomForestRegressor):
    """A forest whose predictions are not its trees' (its trees, read off, miss the shift): the check must refuse
    the tree path, wherever it runs."""

    def predict(self, X):
        return super().predict(X) + 1.0


def test_the_trees_check_on_worker_partitions_gives_the_one_pass_verdict(cluster):
    """On Dask every row is checked against the model on its worker (autopdp.pd.tree.parts.check_on_dask): the same
    model responses and offset as the one-pass check of a boosted classifier (whose constant is read off the first
    row; the rows' raw scores stay on the workers), and the same refusal, with the same reason, of trees that do not reproduce the model."""
    import sys

    import cloudpickle
    from distributed import get_task_stream
    from sklearn.ensemble import HistGradientBoostingClassifier

    from autopdp.auditing.pipeline import _tree_reason
    from autopdp.pd.data import as_frame
    from autopdp.pd.response import make_adapter
    from autopdp.pd.tree.parts import check_on_dask
    from autopdp.pd.tree.fastpath import plan_tree_path

    _, client = cluster
    client.wait_for_workers(2, timeout=120)  # a worker killed by an earlier test is back
    rng = np.random.default_rng(4)
    X = pd.DataFrame(rng.normal(size=(2500, 3)), columns=list("abc"))
    X.loc[rng.random(2500) < 0.05, "c"] = np.nan
    y = (X.a + X.b * X.c.fillna(0) + rng.normal(0, 0.5, 2500) > 0).astype(int)
    model = HistGradientBoostingClassifier(max_iter=30, random_state=0).fit(X, y)
    frame = as_frame(X)
    adapter = make_adapter(model, "auto", None, probe=X.iloc[:5])
    one = plan_tree_path(model, adapter, frame, 256e6)
    kernel = one.kernel(np.ones(len(X)))
    split = plan_tree_path(model, adapter, frame, 256e6)
    with get_task_stream(client) as stream:
        check_on_dask(split, frame, None, client)
    assert len([t for t in stream.data if str(t["key"]).startswith("_check_partition-")]) == 2
    np.testing.assert_array_equal(split.model_response, one.model_response)
    np.testing.assert_array_equal(split._checked_offset, kernel.offset)
    assert split._own_raw_rows is None  # the raw scores stay with the rows on the workers; walked again here if asked
    np.testing.assert_allclose(split.kernel(np.ones(len(X))).own_raw(), kernel._own_raw, rtol=0, atol=1e-12)

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import this test module
    Xr = X.fillna(0.0)
    shifted = _Shifted(10, random_state=0).fit(Xr, X.a)
    fr, ad = as_frame(Xr), make_adapter(shifted, "auto", None, probe=Xr.iloc[:5])
    local, remote = plan_tree_path(shifted, ad, fr, 256e6), plan_tree_path(shifted, ad, fr, 256e6)
    local.prepare(np.ones(len(Xr)))
    check_on_dask(remote, fr, None, client)
    assert local.forest is None and remote.forest is None and remote.model_response is None
    assert "do not reproduce the model's predictions" in local.rows_unavailable
    assert remote.rows_unavailable == local.rows_unavailable
    # the audit's verdict on the tree path is the same either way (leaf counting, which needs no per-row check)
    cfg = autopdp.AuditConfig()
    assert _tree_reason(shifted, ad, fr, cfg, scheduler=client) == _tree_reason(shifted, ad, fr, cfg)


def test_a_classifiers_margin_on_every_row_is_computed_on_the_resident_partitions(cluster, monkeypatch):
    """The margin of every row (the link scale's materiality threshold) is one task per partition on the rows the PDs
    left there (no row is sent again), kept there beside the rows (autopdp.pd.kept: the threshold's spread is summed
    there, in passes of one task per partition), and the link scale's scores are those of the local audit.  The rows' model
    matrix for the trees is made on the workers, from their rows: the calling process encodes a few rows only."""
    from distributed import get_task_stream

    from autopdp.pd.tree.fastpath import TreePlan

    _, client = cluster
    client.wait_for_workers(2, timeout=120)
    rng = np.random.default_rng(6)
    X = pd.DataFrame(rng.normal(size=(3000, 3)), columns=list("abc"))
    y = (X.a * X.b + X.c + rng.normal(0, 0.5, 3000) > 0).astype(int)
    model = HistGradientBoostingClassifier(max_iter=20, random_state=0).fit(X, y)
    cfg = autopdp.AuditConfig(grid_resolution=8, grid_resolution_2d=5, noise_draws=50)
    local = autopdp.audit(model, X, y, config=cfg, progress=False)
    encoded = []  # the rows each encoding in this (the calling) process took: every one goes through _pre
    pre = TreePlan._pre
    monkeypatch.setattr(TreePlan, "_pre", lambda self, rows: encoded.append(len(rows)) or pre(self, rows))
    with get_task_stream(client) as stream:
        remote = autopdp.audit(model, X, y, config=cfg, scheduler=client, progress=False)
    assert encoded and max(encoded) <= 1000 < len(X), encoded  # the plan's checks read the first 1,000 rows
    keys = [str(t["key"]) for t in stream.data]
    assert len([k for k in keys if k.startswith("keep_values-")]) == 2
    assert len([k for k in keys if k.startswith("_pass-")]) % 2 == 0 and any(k.startswith("_pass-") for k in keys)
    # rows sent before the margin: the audit's 2 partitions (checked, then read by the 1D PDs), none more for it
    first_margin = min(i for i, k in enumerate(keys) if k.startswith("keep_values-"))
    assert len([k for k in keys[:first_margin] if k.startswith("rows-")]) == 2
    assert len([k for k in keys[:first_margin] if k.startswith("_check_partition-")]) == 2
    assert local.evidence["ice_variance"]  # read on the margin's log-odds
    for column in ("ice_variance", "interaction"):
        np.testing.assert_allclose(remote.scores[column].to_numpy(dtype=float),
                                   local.scores[column].to_numpy(dtype=float), rtol=1e-9, atol=1e-12)
    assert [e.passed for c in local.evidence.values() for e in c.values()] == \
        [e.passed for c in remote.evidence.values() for e in c.values()]


def test_grids_from_worker_partitions_equal_the_local_ones(cluster, monkeypatch):
    """Every feature's grid and missing count built from the profiles of the workers' row partitions
    (autopdp.pd.profiles through map_rows), its order statistics narrowed over them, equal the grid built here from
    every row; the limits shrunk so the narrowing takes several passes."""
    from autopdp.pd import profiles
    from autopdp.pd.data import as_frame
    from autopdp.pd.grids import build_spec
    from autopdp.pd.rows import map_rows

    _, client = cluster
    client.wait_for_workers(2, timeout=120)  # a worker killed by an earlier test is back
    monkeypatch.setattr(profiles, "BINS", 4)
    monkeypatch.setattr(profiles, "COLLECT_AT", 10)
    rng = np.random.default_rng(5)
    n = 3000
    X = pd.DataFrame({"skewed": rng.lognormal(0, 2, n), "atom": np.where(rng.random(n) < 0.9, 0.0, rng.normal(size=n)),
                      "ints": rng.integers(0, 500, n), "level": rng.choice(["a", "b", "c"], n)})
    X.loc[rng.random(n) < 0.1, "skewed"] = np.nan
    frame = as_frame(X)
    calls = []

    def on_workers(fn, payload):
        calls.append(fn.__name__)
        return map_rows(fn, payload, frame, scheduler=client)

    for position in range(4):
        kw = dict(categorical=position == 3, grid_resolution=20, percentiles=(0.05, 0.95), grid_method="quantile")
        remote = build_spec(frame, position, mapper=on_workers, **kw)
        local = build_spec(frame, position, **kw)
        np.testing.assert_array_equal(remote.grid, local.grid)
        assert remote.n_missing == local.n_missing and remote.grid.dtype == local.grid.dtype
    assert calls.count("_interval_part") >= 6  # the numeric columns were narrowed on the workers, pass by pass


def test_a_brute_force_audit_on_workers_ranks_the_pairs_as_the_local_one(cluster):
    """A Pipeline of a linear model (brute force, additive): its pairs' interactions are rounding noise, which the
    row partitions sum in another order; the pairs' ranks (the intersection score) do not turn on it."""
    from sklearn.compose import make_column_transformer
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    _, client = cluster
    rng = np.random.default_rng(7)
    X = pd.DataFrame({"a": rng.normal(size=1500), "b": rng.uniform(0, 5, 1500),
                      "c": pd.Categorical(rng.choice(list("xyz"), 1500))})
    y = 2 * X.a + X.b + (X.c == "x") + rng.normal(size=1500)
    model = make_pipeline(make_column_transformer((StandardScaler(), ["a", "b"]), (OneHotEncoder(), ["c"])),
                          Ridge()).fit(X, y)
    cfg = autopdp.AuditConfig(noise_draws=50, grid_resolution=10)
    local = autopdp.audit(model, X, y, config=cfg, progress=False)
    remote = autopdp.audit(model, X, y, config=cfg, scheduler=client, progress=False)
    two = local.scores["kind"] == "2d"
    assert (local.scores.loc[two, "interaction"] == 0).all()
    np.testing.assert_array_equal(remote.scores.loc[two, "intersection"], local.scores.loc[two, "intersection"])
    assert [(s.features, s.reasons) for s in local.selection] == [(s.features, s.reasons) for s in remote.selection]
