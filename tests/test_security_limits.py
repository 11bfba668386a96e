"""Issue 34, limits before work: every proof of concept of "no limits before the cost" fails safe.

Each test uses small inputs that, without the limit, would allocate gigabytes; a guard (a patched
allocator that refuses a large request) keeps a regression from actually allocating them.
"""

import importlib
import json

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.linear_model import LinearRegression

from autopdp import Audit, AuditConfig, audit, read_results
from autopdp.cli import main
from autopdp.errors import InputError
from autopdp.pd.data import as_frame
from autopdp.trust.ood import SupportModel

audit_module = importlib.import_module("autopdp.audit")  # the module (``autopdp.audit`` is also the function)

#: The largest array (elements) a guarded allocation may ask for in these tests.
GUARD_ELEMENTS = 20_000_000


def _guard(monkeypatch, name):
    """Refuse (AssertionError) any ``np.<name>`` call whose result would exceed GUARD_ELEMENTS elements."""
    real = getattr(np, name)

    def guarded(*args, **kwargs):
        shape = args[0] if args else kwargs.get("shape")
        if name == "hstack":
            size = sum(int(np.asarray(a).shape[-1]) for a in args[0]) * max(len(a) for a in args[0])
        else:
            size = int(np.prod(shape))
        assert size <= GUARD_ELEMENTS, f"np.{name} asked for {size:,} elements"
        return real(*args, **kwargs)

    monkeypatch.setattr(np, name, guarded)


def _no_pd(monkeypatch):
    """Fail the test if any PD is computed (the limit must stop the run before the work)."""
    def refuse(*a, **k):
        raise AssertionError("a PD was computed before the limit was checked")

    monkeypatch.setattr(audit_module, "partial_dependence", refuse)


def _id_data(n=20_000, seed=0):
    rng = np.random.default_rng(seed)
    ids = np.where(rng.uniform(size=n) < 0.3, "common", np.char.add("id", np.arange(n).astype(str)))
    return pd.DataFrame({"id": ids, "v": rng.normal(size=n)})


# ---------------------------------------------------------------- OOD check and cardinality
def test_ood_check_of_a_20000_level_id_column_keeps_max_levels(monkeypatch):
    """PoC: a 20,000-level ID column made the OOD check build a 20,001 x 20,001 float64 matrix (3 GiB)."""
    X = _id_data()
    _guard(monkeypatch, "hstack")  # the old embedding: 4000 x 20,000 one-hot columns
    m = SupportModel(as_frame(X), {"id": "categorical", "v": "numeric"}, max_levels=50)
    # 50 kept levels + one pooled level + the numeric column; the precision matrix is that squared
    assert m.embedding.shape[1] == 52
    assert m.precision.shape == (52, 52)
    kept = m.measure(("id",), (np.array(["common"], dtype=object),))
    assert kept.share[0] < 0.5  # the most frequent level is in distribution
    # a level beyond max_levels is not a column of its own: outside like an unseen level
    rare = m.measure(("id",), (np.array(["id5"], dtype=object),))
    assert rare.cell_outside[0]


def test_audit_with_a_20000_level_id_column_is_one_rule(monkeypatch):
    """The same max_levels applies to the grid (noted) and to the OOD check (computed, bounded)."""
    X = _id_data()
    _guard(monkeypatch, "hstack")
    a = audit(lambda d: d["v"].to_numpy() + (d["id"] == "common"), X,
              config=AuditConfig(pairs=False, max_levels=30, utilities=("ood_share",)))
    r = a.pd("id")
    assert r.grid_shape == (30,) and "common" in list(r.grid[0])
    assert any("keeps the 30 most frequent" in note for note in a.notes)
    ood = a.utility_scores[("id",)]["ood_share"]
    assert ood.available and 0.0 <= ood.value <= 1.0


def test_ood_model_beyond_max_batch_mb_is_refused_before_work(monkeypatch):
    """Many categorical features: the OOD model's size is checked against max_batch_mb at validation."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame({f"c{j}": rng.integers(0, 60, 3000).astype(str) for j in range(40)})
    _no_pd(monkeypatch)
    with pytest.raises(InputError) as exc:
        audit(lambda d: np.zeros(len(d)), X,
              config=AuditConfig(pairs=False, max_batch_mb=40, criteria_2d=("importance",)))
    msg = str(exc.value)
    # 40 features x (50 kept + 1 pooled) = 2,040 embedded columns
    assert "2,040 embedded columns" in msg and "max_batch_mb (40 MB)" in msg and "ood_share" in msg
    # the additive surrogate's design (rows x levels) is bounded the same way
    with pytest.raises(InputError) as exc:
        audit(lambda d: np.zeros(len(d)), X, config=AuditConfig(pairs=False, max_batch_mb=40))
    msg = str(exc.value)
    assert "surrogate model of 40 features needs 49 MB on its 1,000 fewest rows (2,040 columns" in msg
    assert "surrogate_importance" in msg
    with pytest.raises(InputError, match="max_batch_mb"):
        SupportModel(as_frame(X), {c: "categorical" for c in X}, max_levels=50, max_mb=40)


def test_surrogate_fits_fewer_rows_where_its_design_would_not_fit(monkeypatch):
    """The surrogate batches by sampling: a wide design is fitted on fewer rows within max_batch_mb."""
    from autopdp.trust.surrogate import fit_surrogate, surrogate_rows, surrogate_width

    rng = np.random.default_rng(0)
    X = pd.DataFrame({f"c{j}": rng.integers(0, 60, 5000).astype(str) for j in range(10)})
    kinds = {c: "categorical" for c in X}
    width = surrogate_width(as_frame(X), kinds, max_levels=50)
    assert width == 10 * 51
    assert surrogate_rows(width, 20_000, 30) == 30_000_000 // (24 * width) == 2450
    _guard(monkeypatch, "hstack")
    from sklearn.linear_model import RidgeCV

    fitted = []
    real = RidgeCV.fit

    def fit(self, design, y, *a, **k):
        fitted.append(design.shape)
        return real(self, design, y, *a, **k)

    monkeypatch.setattr(RidgeCV, "fit", fit)
    s = fit_surrogate(rng.normal(size=5000), as_frame(X), kinds, max_levels=50, max_mb=30)
    assert fitted == [(2450, 510)] and set(s.importance) == set(X)


def test_two_id_columns_are_not_tabulated_level_by_level(monkeypatch):
    """The correlation criterion's test of two categorical features makes a levels x levels table: checked first."""
    rng = np.random.default_rng(0)
    n = 20_000
    X = pd.DataFrame({"id": np.char.add("a", np.arange(n).astype(str)),
                      "id2": np.char.add("b", rng.permutation(n).astype(str)), "v": rng.normal(size=n)})
    _no_pd(monkeypatch)
    with pytest.raises(InputError) as exc:
        audit(lambda d: d["v"].to_numpy(), X, config=AuditConfig(utilities=("monotonicity",)))
    msg = str(exc.value)
    assert "'id' x 'id2' (20,000 x 20,000 levels) needs 9,600 MB" in msg and "criteria_2d" in msg
    # without the criterion (or the pair) the run is not refused for it
    with pytest.raises(AssertionError, match="a PD was computed"):
        audit(lambda d: d["v"].to_numpy(), X,
              config=AuditConfig(utilities=("monotonicity",), criteria_2d=("importance",)))


def test_max_levels_has_a_limit():
    with pytest.raises(InputError, match="'max_levels' is 20,000, above its limit of 1,000"):
        AuditConfig(max_levels=20_000)


# ---------------------------------------------------------------- grid resolution
def test_grid_resolution_2d_of_a_million_is_refused():
    """PoC: grid_resolution_2d = 1000000 was accepted and allocated 8.6 GiB."""
    with pytest.raises(InputError) as exc:
        AuditConfig(grid_resolution_2d=1_000_000)
    assert "1,000,000,000,000 cells" in str(exc.value) and "at most 200" in str(exc.value)
    with pytest.raises(InputError, match="'grid_resolution' is 1,000,000, above its limit of 1,000"):
        AuditConfig(grid_resolution=1_000_000)
    assert AuditConfig(grid_resolution=1000, grid_resolution_2d=200).grid_resolution_2d == 200


def test_grid_resolution_2d_in_a_config_file_is_exit_2(tmp_path, capsys):
    X, y = _linear_cli_inputs(tmp_path, n_features=3)
    (tmp_path / "big.toml").write_text("grid_resolution_2d = 1000000\n")
    code = main(["report", "--model", str(tmp_path / "model.skops"), "--data", str(tmp_path / "data.csv"),
                 "--target", "target", "--config", str(tmp_path / "big.toml"), "--out", str(tmp_path / "out"),
                 "--formats", "json"])
    err = capsys.readouterr().err
    assert code == 2 and "grid_resolution_2d" in err and "1,000,000,000,000 cells" in err
    assert not (tmp_path / "out" / "results.json").exists()


def test_ice_curves_beyond_max_batch_mb_are_refused_before_work(monkeypatch):
    """One 1D PD's ICE curves (rows x grid x targets) must fit in max_batch_mb; the message gives the MB."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=20_000), "b": rng.normal(size=20_000)})
    _no_pd(monkeypatch)
    with pytest.raises(InputError) as exc:
        audit(lambda d: d["a"].to_numpy(), X,
              config=AuditConfig(pairs=False, subsample=None, grid_resolution=1000, max_batch_mb=100))
    msg = str(exc.value)
    assert "ICE curves of the 2 1D PDs (20,000 rows x 2,000 grid points in all" in msg
    assert "320 MB" in msg and "max_batch_mb (100 MB)" in msg


def test_2d_ice_surfaces_beyond_max_batch_mb_are_refused_before_work(monkeypatch):
    """grid_resolution_2d at its limit on many pairs: the surfaces held for the noise tests are bounded too."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(300, 12)), columns=[f"x{j}" for j in range(12)])
    _no_pd(monkeypatch)
    with pytest.raises(InputError) as exc:
        audit(lambda d: d["x0"].to_numpy(), X, config=AuditConfig(grid_resolution_2d=200, std_rows=128))
    msg = str(exc.value)
    # 66 pairs x 128 rows x 40,000 cells x 8 bytes
    assert "66 2D PDs (128 rows x up to 40,000 cells" in msg and "2,703 MB" in msg and "top:N" in msg


# ---------------------------------------------------------------- pair count
def _linear_cli_inputs(d, n_features, n_rows=40):
    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.normal(size=(n_rows, n_features)), columns=[f"x{j}" for j in range(n_features)])
    y = X["x0"].to_numpy() + rng.normal(size=n_rows)
    X.assign(target=y).to_csv(d / "data.csv", index=False)
    sio.dump(LinearRegression().fit(X, y), d / "model.skops")
    return X, y


def test_every_pair_of_500_columns_is_exit_2_with_the_count(tmp_path, capsys, monkeypatch):
    """PoC: 500 columns with the default pairs (124,750 2D PDs) ran on without a word."""
    _linear_cli_inputs(tmp_path, n_features=500)
    _no_pd(monkeypatch)
    for extra in ([], ["--pairs", "all"]):
        code = main(["report", "--model", str(tmp_path / "model.skops"), "--data", str(tmp_path / "data.csv"),
                     "--target", "target", "--out", str(tmp_path / "out"), "--formats", "json", *extra])
        err = capsys.readouterr().err
        assert code == 2
        assert "124,750 2D PDs" in err and "max_pairs (1,000)" in err and "top:N" in err
        assert len(err.strip().splitlines()) == 1  # one line, no traceback


def test_pair_limit_applies_to_top_n_and_lists_and_can_be_raised(monkeypatch):
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(30, 6)), columns=list("abcdef"))
    _no_pd(monkeypatch)
    with pytest.raises(InputError, match="asks for 5 2D PDs .*above max_pairs \\(4\\)"):
        audit(lambda d: d["a"].to_numpy(), X, config=AuditConfig(pairs="top:5", max_pairs=4))
    with pytest.raises(InputError, match="asks for 15 2D PDs \\(every pair of the 6 features\\)"):
        audit(lambda d: d["a"].to_numpy(), X, config=AuditConfig(max_pairs=14))
    with pytest.raises(InputError, match="asks for 2 2D PDs"):
        audit(lambda d: d["a"].to_numpy(), X, config=AuditConfig(pairs="a:b,c:d", max_pairs=1))
    with pytest.raises(InputError, match="'max_pairs' must be an integer >= 1"):
        AuditConfig(max_pairs=0)


def test_top_n_below_the_limit_runs():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(60, 6)), columns=list("abcdef"))
    a = audit(lambda d: d["a"].to_numpy() * d["b"].to_numpy(), X,
              config=AuditConfig(pairs="top:2", max_pairs=2, grid_resolution=5, grid_resolution_2d=4,
                                 utilities=("monotonicity",), criteria_2d=("importance",)))
    assert len(a.results_2d) == 2


# ---------------------------------------------------------------- results.json inputs
@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A small weighted audit written as results.json with its ICE sidecar."""
    d = tmp_path_factory.mktemp("saved")
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=80), "b": rng.uniform(size=80)})
    a = audit(lambda df: df["a"].to_numpy() + df["b"].to_numpy(), X, sample_weight=rng.uniform(0.5, 2, 80),
              config=AuditConfig(grid_resolution=5, grid_resolution_2d=4, utilities=("monotonicity",),
                                 criteria_2d=("importance",), subsample=40))
    a.to_json(d / "results.json")
    a.to_ice(d / "ice.parquet")
    return d


def test_results_json_above_max_mb_is_refused_before_parsing(saved, monkeypatch):
    path = saved / "results.json"
    size_mb = path.stat().st_size / 1e6

    def no_parse(*a, **k):
        raise AssertionError("the file was parsed")

    monkeypatch.setattr(audit_module.json, "loads", no_parse)
    for load in (Audit.from_json, read_results):
        with pytest.raises(InputError, match=rf"is 0.\d MB, above the {size_mb / 2:.4g} MB a results.json may have \(max_mb\)"):
            load(path, max_mb=size_mb / 2)
    with pytest.raises(InputError, match="max_mb must be a positive number"):
        Audit.from_json(path, max_mb=0)


def test_results_json_size_limit_default_is_documented():
    assert audit_module.RESULTS_MAX_MB == 256
    assert Audit.from_json.__kwdefaults__["max_mb"] == 256


def test_a_small_crafted_results_json_cannot_expand_to_gigabytes(saved, tmp_path, monkeypatch):
    """PoC: a 0.37 MB results.json whose PDs share one long grid expanded to tens of GiB of arrays."""
    d = json.loads((saved / "results.json").read_text())
    d["grids"]["a"] = [[float(i) for i in range(20_000)]] * len(d["grids"]["a"])  # a grid of 20,000 points ...
    table = d["results"][0]
    table["rows"] = table["rows"] * 2000  # ... shared by thousands of PDs (the rows are references)
    if "at" in table:
        del table["at"]
    crafted = tmp_path / "results.json"
    crafted.write_text(json.dumps(d))
    assert crafted.stat().st_size < 2e6
    _guard(monkeypatch, "empty")
    _guard(monkeypatch, "asarray")
    with pytest.raises(InputError, match="would expand to more than 64 MB of arrays"):
        Audit.from_json(crafted)


def test_a_shared_array_in_a_crafted_results_json_is_counted_per_pd(saved, tmp_path, monkeypatch):
    """A table field written once ('same') for thousands of PDs: each PD would build its own array of it."""
    d = json.loads((saved / "results.json").read_text())
    table = d["results"][0]
    columns = table["columns"]
    at = columns.index("std")
    table["same"]["std"] = [0.5] * 20_000
    table["columns"] = columns[:at] + columns[at + 1:]
    table["rows"] = [row[:at] + row[at + 1:] for row in table["rows"]] * 500
    table.pop("at", None)
    table.pop("order", None)
    crafted = tmp_path / "results.json"
    crafted.write_text(json.dumps(d))
    assert crafted.stat().st_size < 1e6
    _guard(monkeypatch, "asarray")
    with pytest.raises(InputError, match="would expand to more than 64 MB of arrays"):
        Audit.from_json(crafted)


def test_deeply_nested_results_json_is_one_error(tmp_path):
    crafted = tmp_path / "results.json"
    crafted.write_text('{"schema": "autopdp.Audit/2", "results": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(InputError, match="nests its values too deeply"):
        Audit.from_json(crafted)


@pytest.mark.parametrize("rows", [4_000_000_000, 4e9, -1, "many"])
def test_metadata_rows_with_ice_cannot_allocate_gigabytes(saved, tmp_path, monkeypatch, rows):
    """PoC: metadata.data.rows = 4e9 with ice=True allocated up to 30 GiB of sample weights."""
    d = json.loads((saved / "results.json").read_text())
    d["metadata"]["data"]["rows"] = rows
    crafted = tmp_path / "results.json"
    crafted.write_text(json.dumps(d))
    _guard(monkeypatch, "full")
    with pytest.raises(InputError, match="metadata.data.rows|sample weights of|data rows"):
        Audit.from_json(crafted, ice=saved / "ice.parquet")


def test_genuine_results_and_ice_still_load(saved):
    a = Audit.from_json(saved / "results.json", ice=saved / "ice.parquet")
    assert a.sample_weight is not None and a.sample_weight.shape == (80,)
    assert a.results_1d[0].individual is not None
    assert read_results(saved / "results.json")["schema"] == "autopdp.Audit/2"


def test_ice_file_is_size_checked_before_reading_and_its_index_checked(saved, tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    from autopdp.pd.ice_io import read_ice

    path = saved / "ice.parquet"
    with pytest.raises(InputError, match=r"once decompressed, above max_mb \(1e-06 MB\)"):
        read_ice(path, max_mb=1e-6)

    def no_read(*a, **k):
        raise AssertionError("the table was read")

    with monkeypatch.context() as m:
        m.setattr(pq, "read_table", no_read)
        with pytest.raises(InputError, match="max_mb"):
            Audit.from_json(saved / "results.json", ice=path, max_mb=1e-6)
    # an index claiming a billion curves is refused, naming the file
    table = pq.read_table(path)
    meta = json.loads(table.schema.metadata[b"autopdp"])
    meta["index"][0]["rows"] = 10**9
    bad = tmp_path / "ice.parquet"
    pq.write_table(table.replace_schema_metadata({"autopdp": json.dumps(meta)}), bad)
    with pytest.raises(InputError, match="does not hold together"):
        read_ice(bad)
