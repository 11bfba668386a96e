"""Partial dependence of data no single process holds (issue 54): a Parquet folder as a PartFrame, its rows read
and kept by a real LocalCluster's worker processes.  Every PD, spread, standard error and ICE curve equals the
one computed here on the same table read as one frame, weighted by its weight column; the calling process
gathers only the few rows it asks for (probes, the trees' first rows), never the table."""

import dataclasses

import json

import numpy as np
import pandas as pd
import pytest

import autopdp
from autopdp.errors import InputError
from clusters import assert_same_scores_and_evidence

distributed = pytest.importorskip("distributed", reason="dask[distributed] is the optional 'dask' extra")


def _table(n=2400, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"a": rng.normal(size=n), "b": rng.integers(0, 6, n).astype(float),
                       "w": rng.lognormal(0, 1.5, n)})
    df.loc[rng.random(n) < 0.05, "a"] = np.nan
    df["c"] = pd.Categorical(rng.choice(list("xyz"), n))
    df["y"] = np.nan_to_num(df.a) * 2 + np.sin(df.b) + (df.c == "x") + rng.normal(size=n)
    return df


def _write(folder, df, sizes):
    """The table in parts of these sizes (each part's categorical levels are its own)."""
    folder.mkdir()
    edges = np.concatenate([[0], np.cumsum(sizes)])
    for i, (a, b) in enumerate(zip(edges[:-1], edges[1:])):
        piece = df.iloc[a:b].copy()
        piece["c"] = piece["c"].cat.remove_unused_categories()
        piece.to_parquet(folder / f"part-{i:03d}.parquet", index=False)
    return sorted(folder.glob("*.parquet"))


@pytest.fixture(scope="module")
def cluster():
    from clusters import process_cluster

    with process_cluster(2) as (_, client):
        yield client


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    from sklearn.ensemble import HistGradientBoostingRegressor

    df = _table()
    X = df[["a", "b", "c"]]
    model = HistGradientBoostingRegressor(max_iter=30, categorical_features="from_dtype", random_state=0)
    model.fit(X, df.y, sample_weight=df.w)
    files = _write(tmp_path_factory.mktemp("pf") / "parts", df, [1, 700, 999, 200, 500])  # uneven, a 1-row part
    return df, X, model, files


@pytest.mark.parametrize("weighted", [True, False])
@pytest.mark.parametrize("options", [dict(), dict(subsample=150, random_state=4), dict(kind="average", std_rows=300)],
                         ids=["every-row", "ice-sample", "spread-sample"])
def test_the_pd_of_a_part_frame_equals_the_local_one(cluster, data, weighted, options):
    from autopdp.pd.distributed import resident_rows
    from autopdp.pd.partframe import parquet_frame

    df, X, model, files = data
    kind = options.pop("kind", "both")
    opts = autopdp.PDOptions(**options)
    features = ["a", ("a", "c"), "c", ("b", "a")]
    with resident_rows(cluster):
        frame = parquet_frame(cluster, files, columns=["a", "b", "c"], weight="w" if weighted else None)
        remote = autopdp.partial_dependence(model, frame, features, kind=kind, options=opts)
    local = autopdp.partial_dependence(model, X, features, kind=kind, sample_weight=df.w if weighted else None,
                                       options=opts)
    sd = float(np.std(model.predict(X)))
    for r, z in zip(remote, local):
        assert r.method == z.method == "tree" and r.n_rows == z.n_rows == len(df)
        for g, h in zip(r.grid, z.grid):
            np.testing.assert_array_equal(g, h)
        np.testing.assert_allclose(r.average, z.average, rtol=0, atol=1e-9 * sd)
        np.testing.assert_allclose(r.std, z.std, rtol=0, atol=1e-9 * sd)
        np.testing.assert_allclose(r.stderr, z.stderr, rtol=1e-9, atol=1e-12 * sd)
        np.testing.assert_allclose(r.total_weight, z.total_weight, rtol=1e-12)
        np.testing.assert_array_equal(r.counts, z.counts)
        assert (r.individual is None) == (z.individual is None)
        if z.individual is not None:
            np.testing.assert_array_equal(r.ice_rows, z.ice_rows)  # the same rows, drawn by one rule
            np.testing.assert_allclose(r.individual, z.individual, rtol=0, atol=1e-9 * sd)


def test_a_part_frame_gathers_only_the_rows_asked_for(cluster, data, monkeypatch):
    """take_rows brings the rows asked for, in the order asked (across parts, repeated); more than the bound is
    the data itself and is refused; select keeps the parts' recipes to the columns chosen."""
    from autopdp.pd import partframe
    from autopdp.pd.distributed import resident_rows
    from autopdp.pd.partframe import RowsElsewhere, parquet_frame

    df, X, _, files = data
    with resident_rows(cluster):
        frame = parquet_frame(cluster, files, columns=["a", "b", "c"], weight="w")
        rows = np.array([2399, 0, 701, 1, 1, 1700, 702])
        got = frame.take_rows(rows).data
        pd.testing.assert_frame_equal(got, X.iloc[rows].reset_index(drop=True))
        assert frame.take_rows(np.array([], dtype=int)).data.columns.tolist() == ["a", "b", "c"]
        monkeypatch.setattr(partframe, "MAX_GATHER_ROWS", 5)
        with pytest.raises(RowsElsewhere, match="asked for 7 of this frame's rows"):
            frame.take_rows(rows)
        small = frame.select(["c", "a"])
        assert small.names == ("c", "a") and [str(t) for t in small.dtypes] == ["category", "float64"]
        assert small.parts[2].read_block()["frame"].data.columns.tolist() == ["c", "a"]


def test_bad_weights_of_a_part_frame_are_one_line(cluster, data, tmp_path):
    from autopdp.pd.distributed import resident_rows
    from autopdp.pd.partframe import parquet_frame

    df, X, model, _ = data
    bad = df.copy()
    bad.loc[1500, "w"] = -1.0
    files = _write(tmp_path / "bad", bad, [1200, 1200])
    with resident_rows(cluster):
        frame = parquet_frame(cluster, files, columns=["a", "b", "c"], weight="w")
        with pytest.raises(InputError, match="the weight column 'w' must be finite and non-negative"):
            autopdp.partial_dependence(model, frame, ["a"])
        with pytest.raises(InputError, match="its sample weights are a column of its parts"):
            autopdp.partial_dependence(model, frame, ["a"], sample_weight=np.ones(len(df)))


def test_an_audit_of_a_part_frame_equals_the_local_one(cluster, data, monkeypatch):
    """autopdp.audit of a Parquet folder whose rows stay on the workers (the target a column of its files, the
    weights its weight column): the same PDs, ICE rows, scores, evidence, regions, permutation importance and
    content hash as the audit of the same table read here as one frame, and the self-check passes.  The model's
    response and the target on every row, which the scores, the incidence test and the skill read, stayed on the
    workers."""
    from autopdp.auditing import pipeline
    from autopdp.pd.distributed import resident_rows
    from autopdp.pd.partframe import parquet_frame

    seen = []

    class Recorded(pipeline.ScoringInputs):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            seen.append((self.response, self.y))

    monkeypatch.setattr(pipeline, "ScoringInputs", Recorded)
    df, X, model, files = data
    cfg = autopdp.AuditConfig(grid_resolution=10, grid_resolution_2d=5, noise_draws=50, subsample=300)
    local = autopdp.audit(model, X, df.y, sample_weight=df.w.to_numpy(), config=cfg, progress=False)
    with resident_rows(cluster):
        frame = parquet_frame(cluster, files, columns=["a", "b", "c"], weight="w")
        remote = autopdp.audit(model, frame, "y", config=cfg, scheduler=cluster, progress=False)
    (response_here, y_here), (response_there, y_there) = seen
    assert response_here.here is not None and response_there.here is None
    assert response_there.shape == response_here.shape
    assert isinstance(y_here, np.ndarray) and y_there.here is None and y_there.shape == (len(df), 1)
    sd = float(np.std(model.predict(X)))
    assert [r.features for r in remote.results] == [r.features for r in local.results]
    for a, b in zip(local.results, remote.results):
        assert b.method == a.method == "tree"
        np.testing.assert_allclose(b.average, a.average, rtol=0, atol=1e-9 * sd)
        if a.individual is not None:
            np.testing.assert_array_equal(b.ice_rows, a.ice_rows)
    numbers = local.scores.select_dtypes("number").columns
    np.testing.assert_allclose(remote.scores[numbers].to_numpy(dtype=float), local.scores[numbers].to_numpy(dtype=float),
                               rtol=1e-7, atol=1e-9)
    assert [(k, e.passed) for k, c in local.evidence.items() for e in c.values()] == \
        [(k, e.passed) for k, c in remote.evidence.items() for e in c.values()]
    assert [(r["feature"], r["finding"]) for r in local.regions()] == \
        [(r["feature"], r["finding"]) for r in remote.regions()]
    for key in ("data_content_sha256", "target"):
        assert remote.metadata["provenance"][key] == local.metadata["provenance"][key]
    assert remote.run["self_check"]["status"] == local.run["self_check"]["status"] == "passed"
    assert remote.metadata["permutation_importance"] == local.metadata["permutation_importance"]
    # the data summary's counts summed over the parts, the skill and the PD outside the grid found there
    as_json = [json.loads(a.to_json()) for a in (local, remote)]
    assert as_json[1]["data_summary"] == as_json[0]["data_summary"]
    beyond = [a["metadata"]["outside_grid"] for a in as_json]
    assert [{k: v for k, v in o.items() if k not in ("pd_edge", "pd_beyond")} for o in beyond[1]] == \
        [{k: v for k, v in o.items() if k not in ("pd_edge", "pd_beyond")} for o in beyond[0]]
    for o_remote, o_local in zip(*beyond[::-1]):  # the PDs there, summed over the parts
        assert o_remote["pd_beyond"] == pytest.approx(o_local["pd_beyond"], abs=1e-9 * sd)
    for key, value in local.metadata["skill"].items():
        if isinstance(value, float):
            assert remote.metadata["skill"][key] == pytest.approx(value, rel=1e-9, abs=1e-12)


def test_a_classifier_with_text_labels_and_a_row_sample_equals_the_local_audit(cluster, tmp_path):
    """A text target read from the parts' files, and max_rows: the sampled rows are brought here by position (the
    same rows as the local audit's sample), every later stage runs on them."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    from autopdp.pd.distributed import resident_rows
    from autopdp.pd.partframe import parquet_frame

    df = _table(900, seed=3)
    df["label"] = np.where(df.y > df.y.median(), "high", "low")
    X = df[["a", "b", "c"]]
    model = HistGradientBoostingClassifier(max_iter=20, categorical_features="from_dtype", random_state=0)
    model.fit(X, df.label)
    files = _write(tmp_path / "parts", df[["a", "b", "c", "label", "w"]], [300, 300, 300])
    cfg = autopdp.AuditConfig(grid_resolution=8, pairs=False, noise_draws=50, max_rows=600)
    local = autopdp.audit(model, X, df.label, sample_weight=df.w.to_numpy(), config=cfg, progress=False)
    with resident_rows(cluster):
        frame = parquet_frame(cluster, files, columns=["a", "b", "c"], weight="w")
        remote = autopdp.audit(model, frame, "label", config=cfg, scheduler=cluster, progress=False)
    assert remote.metadata["provenance"]["target"] == "label" and remote.metadata["targets"] == local.metadata["targets"]
    for a, b in zip(local.results, remote.results):
        assert a.n_rows == b.n_rows == 600
        np.testing.assert_allclose(b.average, a.average, rtol=0, atol=1e-12)
    numbers = local.scores.select_dtypes("number").columns
    np.testing.assert_allclose(remote.scores[numbers].to_numpy(dtype=float), local.scores[numbers].to_numpy(dtype=float),
                               rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("key, value", [("cohort", "c"), ("groups", {"ab": ["a", "b"]})])
def test_config_keys_that_need_every_row_here_are_refused_in_one_line(cluster, data, key, value):
    from autopdp.pd.distributed import resident_rows
    from autopdp.pd.partframe import parquet_frame

    _, _, model, files = data
    with resident_rows(cluster):
        frame = parquet_frame(cluster, files, columns=["a", "b", "c"])
        with pytest.raises(InputError, match=f"config key '{key}' is not available for data whose rows stay on the"):
            autopdp.audit(model, frame, "y", config={key: value}, scheduler=cluster, progress=False)
        with pytest.raises(InputError, match="the data has no column 'nope' for the target"):
            autopdp.audit(model, frame, "nope", scheduler=cluster, progress=False)
        with pytest.raises(InputError, match="at most 200,000 rows; lower max_rows"):
            big = dataclasses.replace(frame, bounds=frame.bounds[:-1] + ((frame.bounds[-1][0], 10**6),))  # 1M rows
            autopdp.audit(model, big, "y", config={"max_rows": 300_000}, scheduler=cluster, progress=False)


def test_a_pipeline_that_is_not_trees_audits_a_part_frame_by_brute_force(cluster, data):
    """A Pipeline of a linear model: no leaf counting and no preprocessing of every row in the calling process;
    each part computes its brute-force PDs, and the audit equals the local one."""
    from sklearn.compose import make_column_transformer
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    from autopdp.pd.distributed import resident_rows
    from autopdp.pd.partframe import parquet_frame

    df, X, _, files = data
    pipe = make_pipeline(make_column_transformer((make_pipeline(SimpleImputer(), StandardScaler()), ["a", "b"]),
                                                 (OneHotEncoder(), ["c"])), Ridge()).fit(X, df.y)
    cfg = autopdp.AuditConfig(grid_resolution=10, grid_resolution_2d=5, noise_draws=50)
    local = autopdp.audit(pipe, X, df.y, sample_weight=df.w.to_numpy(), config=cfg, progress=False)
    with resident_rows(cluster):
        frame = parquet_frame(cluster, files, columns=["a", "b", "c"], weight="w")
        remote = autopdp.audit(pipe, frame, "y", config=cfg, scheduler=cluster, progress=False)
    sd = float(np.std(pipe.predict(X)))
    for a, b in zip(local.results, remote.results):
        assert a.method == b.method == "brute"
        np.testing.assert_allclose(b.average, a.average, rtol=0, atol=1e-9 * sd)
    numbers = local.scores.select_dtypes("number").columns
    np.testing.assert_allclose(remote.scores[numbers].to_numpy(dtype=float), local.scores[numbers].to_numpy(dtype=float),
                               rtol=1e-7, atol=1e-9)
    assert [(s.features, s.reasons) for s in local.selection] == [(s.features, s.reasons) for s in remote.selection]


def test_a_log_link_regressor_audits_a_part_frame_with_its_logs_made_on_the_workers(cluster, tmp_path, monkeypatch):
    """A Poisson HGB is read on its log scale: every row's log prediction (the link scale's threshold) is made from
    the response kept on the workers and stays there (``autopdp.pd.kept.derive_kept``); the audit equals the local
    one, its skill (on a worker with every row) too."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    from autopdp.auditing import pipeline
    from autopdp.pd.distributed import resident_rows
    from autopdp.pd.partframe import parquet_frame

    seen = []

    class Recorded(pipeline.ScoringInputs):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            seen.append(self)

    monkeypatch.setattr(pipeline, "ScoringInputs", Recorded)
    df = _table(1800, seed=3)
    rng = np.random.default_rng(3)
    df["y"] = rng.poisson(np.exp(0.6 * np.nan_to_num(df.a) + 0.3 * np.sin(df.b) + 0.5 * (df.c == "x")))
    X = df[["a", "b", "c"]]
    model = HistGradientBoostingRegressor(loss="poisson", max_iter=30, categorical_features="from_dtype",
                                          random_state=0).fit(X, df.y)
    files = _write(tmp_path / "parts", df, [600, 1, 1199])
    cfg = autopdp.AuditConfig(grid_resolution=10, grid_resolution_2d=5, noise_draws=50)
    local = autopdp.audit(model, X, df.y, config=cfg, progress=False)
    with resident_rows(cluster):
        frame = parquet_frame(cluster, files, columns=["a", "b", "c"])
        remote = autopdp.audit(model, frame, "y", config=cfg, scheduler=cluster, progress=False)
    here, there = seen[0], seen[1]
    assert here.link.transform == there.link.transform == "log"
    assert here.link.predictions.here is not None and there.link.predictions.here is None
    assert there.response.here is None
    sd = float(np.std(model.predict(X)))
    for a, b in zip(local.results, remote.results):
        np.testing.assert_allclose(b.average, a.average, rtol=0, atol=1e-9 * sd)
    assert_same_scores_and_evidence(local, remote)
    for key, value in local.metadata["skill"].items():
        if isinstance(value, float):
            assert remote.metadata["skill"][key] == pytest.approx(value, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("case", ["constant", "missing", "not-a-class", "constant-per-part"])
def test_a_target_kept_on_the_workers_is_checked_there_as_one_here(cluster, tmp_path, case):
    """The target of a Parquet folder stays with its parts' rows; its checks (one value per row, none missing, not
    constant, a classifier's labels among its classes) are made from each part's facts, with the local check's
    line.  A target constant within each part but not across them is not constant."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    from autopdp.pd.distributed import resident_rows
    from autopdp.pd.partframe import parquet_frame

    df = _table(900, seed=5)
    X = df[["a", "b", "c"]]
    model = HistGradientBoostingClassifier(max_iter=10, categorical_features="from_dtype", random_state=0).fit(
        X, (df.y > df.y.median()).astype(int))
    label = {"constant": np.ones(900, dtype=int), "missing": np.where(np.arange(900) == 700, np.nan, np.arange(900) % 2),
             "not-a-class": np.where(np.arange(900) == 650, 7, np.arange(900) % 2).astype(int),
             "constant-per-part": (np.arange(900) >= 300).astype(int)}[case]
    df["y"] = label
    files = _write(tmp_path / "parts", df, [300, 600])
    cfg = autopdp.AuditConfig(grid_resolution=5, noise_draws=20, pairs=False)
    with resident_rows(cluster):
        frame = parquet_frame(cluster, files, columns=["a", "b", "c"])
        if case == "constant-per-part":
            remote = autopdp.audit(model, frame, "y", config=cfg, scheduler=cluster, progress=False)
            local = autopdp.audit(model, X, df.y, config=cfg, progress=False)
            assert remote.metadata["skill"]["auc"] == pytest.approx(local.metadata["skill"]["auc"], rel=1e-12)
            return
        with pytest.raises(InputError) as here:
            autopdp.audit(model, X, df.y, config=cfg, progress=False)
        with pytest.raises(InputError) as there:
            autopdp.audit(model, frame, "y", config=cfg, scheduler=cluster, progress=False)
    assert str(there.value) == str(here.value)
