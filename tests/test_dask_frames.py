"""A dask DataFrame audited where its rows are (issue 54): ``autopdp.audit(model, ddf, "y", scheduler=client)`` on a
real LocalCluster of worker processes.  Each partition is computed on a worker from the collection's own graph and
kept there; the calling process never computes one.  The audit equals the local audit of the same table: PDs, ICE
rows, scores, evidence, content hash, skill and permutation importance, with the target and the weights given as
columns or as dask Series of the same partitions, a lazily filtered collection with empty partitions and
categorical levels that differ by partition."""

import dataclasses
import json
import os
import sys

import numpy as np
import pandas as pd
import pytest

import autopdp
from autopdp.errors import InputError, InputTypeError

distributed = pytest.importorskip("distributed", reason="dask[distributed] is the optional 'dask' extra")
dd = pytest.importorskip("dask.dataframe")

from test_part_frames import _table  # noqa: E402 - the same table as the Parquet folder's tests
from clusters import assert_same_scores_and_evidence  # noqa: E402


class _Pieces:
    """Partition ``i`` of a table cut at ``edges``, each with its own categorical levels; every call records the
    process that made it (a file named by its pid in ``where``)."""

    def __init__(self, df, edges, where):
        self.df, self.edges, self.where = df, edges, str(where)

    def __call__(self, i):
        open(os.path.join(self.where, f"{os.getpid()}-{i}-{os.urandom(4).hex()}"), "w").close()
        piece = self.df.iloc[self.edges[i]:self.edges[i + 1]].copy()
        if "c" in piece:
            piece["c"] = piece["c"].cat.remove_unused_categories()
        return piece.reset_index(drop=True)


@pytest.fixture(scope="module")
def cluster():
    from clusters import process_cluster

    with process_cluster(2) as (_, client):
        yield client


@pytest.fixture(scope="module")
def data():
    from sklearn.ensemble import HistGradientBoostingRegressor

    df = _table()
    X = df[["a", "b", "c"]]
    model = HistGradientBoostingRegressor(max_iter=30, categorical_features="from_dtype", random_state=0)
    model.fit(X, df.y, sample_weight=df.w)
    return df, X, model


def _collection(df, where, edges=(0, 1, 700, 700, 1699, 1900, 2400)):
    """A lazy dask DataFrame of ``df`` in partitions cut at ``edges`` (a one-row and an empty one), made by
    :class:`_Pieces`."""
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import this test module
    return dd.from_map(_Pieces(df, list(edges), where), range(len(edges) - 1), meta=df.iloc[:0],
                       enforce_metadata=False)


CFG = dict(grid_resolution=10, grid_resolution_2d=5, noise_draws=50, subsample=300)


@pytest.mark.parametrize("given", ["columns", "series"])
def test_an_audit_of_a_dask_dataframe_equals_the_local_one(cluster, data, tmp_path, given):
    """The target and the weights as columns of the collection (``"y"``, ``"w"``) or as dask Series of its
    partitions: the same audit as the local one, every partition computed on a worker, none here."""
    df, X, model = data
    cfg = autopdp.AuditConfig(**CFG)
    local = autopdp.audit(model, X, df.y, sample_weight=df.w.to_numpy(), config=cfg, progress=False)
    ddf = _collection(df[["a", "b", "c", "w", "y"]], tmp_path)
    if given == "columns":
        y, w, X_remote = "y", "w", ddf
    else:
        y, w, X_remote = ddf["y"], ddf["w"], ddf[["a", "b", "c"]]
    remote = autopdp.audit(model, X_remote, y, sample_weight=w, config=cfg, scheduler=cluster, progress=False)
    made_by = {int(p.name.split("-")[0]) for p in tmp_path.iterdir()}
    assert made_by and os.getpid() not in made_by  # every partition was computed on a worker
    sd = float(np.std(model.predict(X)))
    assert [r.features for r in remote.results] == [r.features for r in local.results]
    for a, b in zip(local.results, remote.results):
        assert b.method == a.method == "tree" and b.n_rows == a.n_rows == len(df)
        np.testing.assert_allclose(b.average, a.average, rtol=0, atol=1e-9 * sd)
        np.testing.assert_allclose(b.std, a.std, rtol=0, atol=1e-9 * sd)
        if a.individual is not None:
            np.testing.assert_array_equal(b.ice_rows, a.ice_rows)
            np.testing.assert_allclose(b.individual, a.individual, rtol=0, atol=1e-9 * sd)
    assert_same_scores_and_evidence(local, remote)
    assert remote.metadata["provenance"]["data_content_sha256"] == local.metadata["provenance"]["data_content_sha256"]
    assert remote.metadata["provenance"]["target"] == "y"
    assert remote.run["self_check"]["status"] == "passed"
    assert remote.metadata["permutation_importance"] == local.metadata["permutation_importance"]
    as_json = [json.loads(a.to_json()) for a in (local, remote)]
    assert as_json[1]["data_summary"] == as_json[0]["data_summary"]
    for key, value in local.metadata["skill"].items():
        if isinstance(value, float):
            assert remote.metadata["skill"][key] == pytest.approx(value, rel=1e-9, abs=1e-12)
    assert any("partitions of a dask DataFrame computed and kept by one worker" in n for n in remote.notes)


def test_a_dask_dataframe_is_a_part_frame_whose_rows_are_not_here(cluster, data, tmp_path):
    """dask_frame reads the collection's types from its metadata and each partition's row count and levels from the
    workers: the levels are the union over the partitions, empty partitions are left out, the rows are refused
    here, and the rows asked for by position come back in the order asked."""
    from autopdp.pd.daskframe import dask_frame
    from autopdp.pd.distributed import resident_rows
    from autopdp.pd.partframe import RowsElsewhere

    df, X, _ = data
    ddf = _collection(df[["a", "b", "c", "w", "y"]], tmp_path)
    with resident_rows(cluster):
        frame = dask_frame(cluster, ddf, columns=["a", "b", "c"], weight="w")
        assert frame.bounds == ((0, 1), (1, 700), (700, 1699), (1699, 1900), (1900, 2400))
        assert sorted(frame.dtype(2).categories) == sorted(df.c.unique()) and frame.n_rows == len(df)
        with pytest.raises(RowsElsewhere):
            frame.data.iloc
        rows = np.array([2399, 0, 701, 1, 1, 1700, 699])
        pd.testing.assert_frame_equal(frame.take_rows(rows).data, X.iloc[rows].reset_index(drop=True))
        np.testing.assert_array_equal(frame.weights(), df.w.to_numpy())
        np.testing.assert_array_equal(frame.read_column("y").to_numpy(), df.y.to_numpy())
    assert os.getpid() not in {int(p.name.split("-")[0]) for p in tmp_path.iterdir()}


def test_a_worker_lost_mid_audit_of_a_dask_dataframe_is_replaced_and_the_answer_is_the_same(cluster, tmp_path):
    """A worker dies at its first prediction: its partitions are computed again from the collection's graph on the
    other worker, and the PDs are the local ones."""
    from sklearn.ensemble import RandomForestRegressor

    from test_rows import _DiesOnce

    import cloudpickle

    import test_rows

    cloudpickle.register_pickle_by_value(test_rows)
    cluster.wait_for_workers(2, timeout=120)
    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.uniform(-1, 1, size=(400, 3)), columns=list("abc"))
    y = X.a + X.b * X.c + rng.normal(0, 0.1, 400)
    model = _DiesOnce(RandomForestRegressor(10, random_state=0).fit(X, y), tmp_path / "died")
    (tmp_path / "made").mkdir()
    df = X.assign(y=y)
    ddf = dd.from_map(_Plain(df, [0, 150, 400], tmp_path / "made"), range(2), meta=df.iloc[:0])
    cfg = autopdp.AuditConfig(grid_resolution=5, pairs=False, noise_draws=30)
    local = autopdp.audit(model.model, X, y, config=cfg, progress=False)
    remote = autopdp.audit(model, ddf, "y", config=cfg, scheduler=cluster, progress=False)
    assert (tmp_path / "died").exists()  # a worker did die
    for a, b in zip(local.results, remote.results):
        np.testing.assert_allclose(b.average, a.average, rtol=0, atol=1e-12)


class _Plain(_Pieces):
    def __call__(self, i):
        open(os.path.join(self.where, f"{os.getpid()}-{i}-{os.urandom(4).hex()}"), "w").close()
        return self.df.iloc[self.edges[i]:self.edges[i + 1]].reset_index(drop=True)


def test_a_dask_target_or_weights_that_do_not_match_the_rows_are_one_line(cluster, data, tmp_path):
    df, _, model = data
    ddf = _collection(df[["a", "b", "c", "w", "y"]], tmp_path)
    other = dd.from_pandas(df.y, npartitions=2)
    cases = [
        (dict(y=other), InputError, "y is a dask Series of 2 partitions but X has 6; the target is matched"),
        (dict(y="y", sample_weight=other), InputError, "sample_weight is a dask Series of 2 partitions but X has 6"),
        (dict(y="nope"), InputError, "the data has no column 'nope' for the target"),
        (dict(y="y", sample_weight="nope"), InputError, "sample_weight 'nope' is not a column of X"),
        (dict(y="y", sample_weight=np.ones(len(df))), InputTypeError, "give its sample weights as the name of one"),
    ]
    for kwargs, error, text in cases:
        with pytest.raises(error) as exc:
            autopdp.audit(model, ddf[["a", "b", "c", "w", "y"]], kwargs.pop("y"), scheduler=cluster, progress=False,
                          **kwargs)
        assert "\n" not in str(exc.value) and text in str(exc.value)
    short = _collection(df[["y"]].assign(y=df.y), tmp_path, edges=(0, 1, 700, 700, 1699, 1900, 2399))
    with pytest.raises(InputError, match="partition 5 of y has 499 values but X's has 500 rows"):
        autopdp.audit(model, ddf[["a", "b", "c"]], short["y"], scheduler=cluster, progress=False)


def test_the_pds_of_a_dask_read_parquet_collection_equal_the_local_ones(cluster, data, tmp_path):
    """dd.read_parquet of a folder whose parts have their own categorical levels (dask reads them as unknown
    categories): partial_dependence and compute_all take the collection, its weights a column's name, and give the
    local PDs, spread and ICE curves."""
    from test_part_frames import _write

    df, X, model = data
    _write(tmp_path / "parts", df, [1, 700, 999, 200, 500])
    lazy = dd.read_parquet(str(tmp_path / "parts"))
    opts = autopdp.PDOptions(subsample=150, random_state=4, scheduler=cluster)
    features = ["a", ("a", "c"), "c"]
    remote = autopdp.partial_dependence(model, lazy[["a", "b", "c", "w"]], features, sample_weight="w", options=opts)
    local = autopdp.partial_dependence(model, X, features, sample_weight=df.w, options=dataclasses.replace(
        opts, scheduler=None))
    sd = float(np.std(model.predict(X)))
    for r, z in zip(remote, local):
        assert r.method == z.method == "tree" and r.n_rows == z.n_rows == len(df)
        np.testing.assert_allclose(r.average, z.average, rtol=0, atol=1e-9 * sd)
        np.testing.assert_allclose(r.std, z.std, rtol=0, atol=1e-9 * sd)
        np.testing.assert_array_equal(r.ice_rows, z.ice_rows)
        np.testing.assert_allclose(r.individual, z.individual, rtol=0, atol=1e-9 * sd)
    every = autopdp.compute_all(model, lazy[["a", "b", "c"]], options=autopdp.PDOptions(scheduler=cluster))
    alone = autopdp.compute_all(model, X)
    assert [r.features for r in every] == [r.features for r in alone]
    for r, z in zip(every, alone):
        np.testing.assert_allclose(r.average, z.average, rtol=0, atol=1e-9 * sd)


def test_a_dask_dataframe_without_a_cluster_is_one_line(data, monkeypatch):
    """No scheduler given and no default client: one line naming what to pass, before anything is computed."""
    import distributed as dist

    def none():
        raise ValueError("No clients found")

    df, _, model = data
    monkeypatch.setattr(dist, "default_client", none)
    lazy = dd.from_pandas(df[["a", "b", "c", "y"]], npartitions=2)
    with pytest.raises(InputError) as exc:
        autopdp.audit(model, lazy, "y", progress=False)
    assert "\n" not in str(exc.value) and "pass scheduler= (its scheduler's address or a distributed.Client)" in \
        str(exc.value)
