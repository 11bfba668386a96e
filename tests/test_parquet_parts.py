"""Data where it lives (issue 54): ``--data`` takes a folder of Parquet parts or a glob pattern, bounded by the
parts' footers before any is read, every part checked to be the same table, and recorded part by part."""

import json

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.linear_model import LogisticRegression

from autopdp.cli import main
from autopdp.errors import InputError
from autopdp.io.loading import load_data
from autopdp.io.provenance import file_record


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=300), "b": rng.uniform(0, 5, 300), "k": rng.choice(["x", "y"], 300)})
    return X.assign(target=(X.a + 0.3 * X.b + rng.normal(size=300) > 1).astype(int))


def _parts(folder, df, k=3):
    folder.mkdir()
    for i, part in enumerate(np.array_split(np.arange(len(df)), k)):
        df.iloc[part].to_parquet(folder / f"part-{i:05d}.parquet", index=False)
    (folder / "_SUCCESS").write_text("")  # as Spark writes it
    return folder


def test_a_folder_and_a_pattern_read_as_the_one_table(table, tmp_path):
    folder = _parts(tmp_path / "data", table)
    for given in (folder, str(folder / "part-*.parquet")):
        pd.testing.assert_frame_equal(load_data(given), table)
    record = file_record(folder, "data")
    assert [p["name"] for p in record["parts"]] == ["part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]
    assert record["bytes"] == sum(p["bytes"] for p in record["parts"]) and len(record["sha256"]) == 64
    assert file_record(folder, "data")["sha256"] == record["sha256"]


@pytest.mark.parametrize("case,message", [
    ("empty", "names no files"),
    ("stray", "holds 'notes.txt', which is not a .parquet file"),
    ("schema", "has columns .* of other types or names than 'part-00000.parquet'"),
    ("big", r"declares about .* MB in memory, over the 0.005 MB limit for data; if it is really that large, rerun "
            r"with --max-data-mb"),
    ("csv_option", "--sep, --na-values and --decimal apply to CSV files"),
])
def test_bad_folders_are_refused_in_one_line(table, tmp_path, case, message):
    folder = tmp_path / "data"
    kwargs = {}
    if case == "empty":
        folder.mkdir()
    else:
        _parts(folder, table)
    if case == "stray":
        (folder / "notes.txt").write_text("x")
    if case == "schema":
        table.rename(columns={"b": "B"}).iloc[:5].to_parquet(folder / "part-00009.parquet", index=False)
    if case == "big":
        kwargs["max_mb"] = 0.005
    if case == "csv_option":
        kwargs["sep"] = ";"
    with pytest.raises(InputError, match=message) as info:
        load_data(folder, **kwargs)
    assert "\n" not in str(info.value)


def test_the_command_line_audits_a_parquet_folder(table, tmp_path, capsys):
    folder = _parts(tmp_path / "data", table[["a", "b", "target"]])
    model = LogisticRegression().fit(table[["a", "b"]], table.target)
    sio.dump(model, tmp_path / "m.skops")
    out = tmp_path / "out"
    code = main(["report", "--model", str(tmp_path / "m.skops"), "--data", str(folder / "*.parquet"),
                 "--target", "target", "--out", str(out), "--formats", "json"])
    err = capsys.readouterr().err
    assert code == 0, err
    data = json.loads((out / "results.json").read_text())
    assert data["metadata"]["data"]["rows"] == 300
    assert len(data["metadata"]["provenance"]["inputs"]["data"]["parts"]) == 3


def test_a_parquet_folder_on_a_cluster_of_worker_processes_gives_the_local_report(table, tmp_path, capsys):
    """The README's command (``--data portfolio/ --scheduler tcp://...``) on a real LocalCluster of worker
    processes: the rows stay on the workers, and the run gives the same PDs (to 1e-9 of the predictions' sd),
    findings, selection and data hash as the local run, weighted by the folder's weight column."""
    distributed = pytest.importorskip("distributed", reason="dask[distributed] is the optional 'dask' extra")
    from sklearn.ensemble import RandomForestClassifier

    weighted = table[["a", "b", "target"]].assign(w=np.random.default_rng(1).uniform(0.5, 3.0, len(table)))
    folder = _parts(tmp_path / "portfolio", weighted)
    model = RandomForestClassifier(20, min_samples_leaf=5, random_state=0).fit(table[["a", "b"]], table.target)
    sio.dump(model, tmp_path / "m.skops")
    (tmp_path / "config.toml").write_text("grid_resolution = 8\nnoise_draws = 50\n")
    args = ["report", "--model", str(tmp_path / "m.skops"), "--data", str(folder), "--target", "target",
            "--weights", "w", "--config", str(tmp_path / "config.toml"), "--formats", "json"]
    assert main(args + ["--out", str(tmp_path / "local")]) == 0, capsys.readouterr().err
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c:
        assert main(args + ["--out", str(tmp_path / "cluster"), "--scheduler", c.scheduler_address]) == 0, \
            capsys.readouterr().err
    from autopdp import Audit

    local, remote = (Audit.from_json(tmp_path / d / "results.json") for d in ("local", "cluster"))
    sd = float(np.std(model.predict_proba(table[["a", "b"]])[:, 1]))
    assert len(local.results) == len(remote.results) == 3  # a, b and the pair
    merged = [n for r in remote.results for n in r.notes if "row partitions" in n]  # the cluster computed them
    assert merged and not [n for r in local.results for n in r.notes if "row partitions" in n]
    for a, b in zip(local.results, remote.results):
        assert a.features == b.features
        np.testing.assert_allclose(b.average, a.average, rtol=0, atol=1e-9 * sd)
    assert [(k, u, e.passed) for k, c in local.evidence.items() for u, e in c.items()] == \
        [(k, u, e.passed) for k, c in remote.evidence.items() for u, e in c.items()]
    assert local.selection and any(e.passed for c in local.evidence.values() for e in c.values())
    assert [(s.features, s.reasons) for s in local.selection] == [(s.features, s.reasons) for s in remote.selection]
    # the rows stayed on the workers (a PartFrame): said so, and the same data by its content hash
    assert any("rows stayed on the Dask cluster's workers" in n for n in remote.notes)
    assert not any("rows stayed on the Dask cluster's workers" in n for n in local.notes)
    assert remote.metadata["provenance"]["data_content_sha256"] == local.metadata["provenance"]["data_content_sha256"]


def test_parts_read_one_at_a_time_equal_the_one_arrow_table(tmp_path):
    """The parts are read one at a time (Arrow's allocator keeps what it frees); the frame is the one Arrow makes of
    all the parts as one table: the same values and types, each categorical column on the union of the parts'
    levels in order of first appearance, ordered or not, integers with a missing value in one part."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(1)
    folder = tmp_path / "mixed"
    folder.mkdir()
    levels = [["b", "a"], ["c", "a"], ["a"], ["d", "b"]]
    for i, lv in enumerate(levels):
        n = 2 if i == 2 else 40
        part = pd.DataFrame({
            "cat": pd.Categorical(rng.choice(lv, n), categories=lv),
            "grade": pd.Categorical(rng.choice(["lo", "hi"], n), categories=["lo", "hi"], ordered=True),
            "x": rng.normal(size=n), "s": rng.choice(["u", "v", None], n),
            "i": pd.array(rng.integers(0, 9, n), dtype="Int64"),
            "flag": rng.random(n) < 0.5,
        })
        if i == 1:
            part.loc[3, "i"] = pd.NA
        part.to_parquet(folder / f"part-{i:05d}.parquet", index=False)
    tables = [pq.read_table(f) for f in sorted(folder.iterdir())]
    whole = pa.concat_tables(tables).to_pandas()  # as the parts were read before
    got = load_data(folder)
    pd.testing.assert_frame_equal(got, whole)
    assert list(got["cat"].cat.categories) == ["b", "a", "c", "d"] and got["grade"].cat.ordered


def test_grids_of_a_parquet_folder_read_by_the_workers_equal_the_local_ones(tmp_path, monkeypatch):
    """A Parquet folder as a PartFrame (autopdp.pd.partframe): each worker reads its own parts (the calling
    process reads only the footers and, from the workers, each categorical column's levels), every feature's grid
    and missing count is built from the parts' profiles and equals the grid of the table read here as one frame;
    reading the table in the calling process is refused in one line, nothing collected (one column, or a few rows,
    are brought here on request)."""
    distributed = pytest.importorskip("distributed", reason="dask[distributed] is the optional 'dask' extra")
    from autopdp.pd import partframe, profiles
    from autopdp.pd.data import as_frame
    from autopdp.pd.distributed import resident_rows
    from autopdp.pd.grids import build_spec
    from autopdp.pd.partframe import RowsElsewhere, parquet_frame
    from autopdp.pd.rows import map_rows

    monkeypatch.setattr(profiles, "BINS", 4)  # several narrowing passes on 400 rows
    monkeypatch.setattr(profiles, "COLLECT_AT", 10)
    rng = np.random.default_rng(3)
    n = 400
    df = pd.DataFrame({"skewed": rng.lognormal(0, 2, n), "atom": np.where(rng.random(n) < 0.9, 0.0, rng.normal(size=n)),
                       "ints": rng.integers(0, 300, n), "w": rng.uniform(0.5, 2.0, n)})
    df.loc[rng.random(n) < 0.1, "skewed"] = np.nan
    df["level"] = pd.Categorical(rng.choice(["a", "b", "c"], n))
    folder = tmp_path / "parts"
    folder.mkdir()
    for i, part in enumerate(np.array_split(np.arange(n), 4)):  # each part's levels are its own
        piece = df.iloc[part].copy()
        piece["level"] = piece["level"].cat.remove_unused_categories()
        piece.to_parquet(folder / f"part-{i}.parquet", index=False)
    local = as_frame(load_data(folder).drop(columns="w"))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as c, \
            distributed.Client(c) as client, resident_rows(client):
        frame = parquet_frame(client, sorted(folder.glob("*.parquet")), weight="w")
        assert frame.names == local.names and frame.n_rows == n and len(frame.parts) == 4
        assert [str(frame.dtype(j)) for j in range(4)] == [str(local.dtype(j)) for j in range(4)]
        for position in range(4):
            kw = dict(categorical=position == 3, grid_resolution=20, percentiles=(0.05, 0.95), grid_method="quantile")
            remote = build_spec(frame, position, mapper=lambda fn, p: map_rows(fn, p, frame, scheduler=client), **kw)
            here = build_spec(local, position, **kw)
            np.testing.assert_array_equal(remote.grid, here.grid)
            assert remote.n_missing == here.n_missing
        rows_tasks = [k for k in client.who_has() if str(k).startswith("rows-")]
        assert len(rows_tasks) == 4  # each part read once, kept on its worker for every pass
        with pytest.raises(RowsElsewhere, match="rows are on the Dask cluster's workers"):
            frame.data.iloc  # the table itself is never here
        monkeypatch.setattr(partframe, "MAX_GATHER_ROWS", 50)
        with pytest.raises(RowsElsewhere, match="asked for 51 of this frame's rows"):
            frame.take_rows(np.arange(51))
        np.testing.assert_array_equal(frame.column(0), local.column(0))  # one column at a time is brought here
        np.testing.assert_array_equal(frame.missing(0), local.missing(0))
    block = frame.parts[1].read_block()  # a part's recipe: its rows, their weights apart from the features
    np.testing.assert_array_equal(block["sample_weight"], df.w.iloc[100:200].to_numpy())
    assert block["frame"].names == local.names and block["frame"].n_rows == 100
