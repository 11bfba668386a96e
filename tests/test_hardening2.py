"""Hardening, round two (issue 57): crafted inputs refused before compiled code reads them, inputs bounded before
they allocate.  A case that crashed the process runs in a subprocess: the command must exit 2 with one line."""

import os
import subprocess
import sys
import zipfile

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.ensemble import HistGradientBoostingRegressor, RandomForestRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeRegressor
from sklearn.tree._tree import Tree

import autopdp
from autopdp import AuditConfig, InputError

HUGE = 2 ** 30  # a feature index far outside any data: predicting with it reads memory the tree does not own
#: a subprocess imports the autopdp this process imports (the installed wheel under `make test`)
ENV = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(autopdp.__file__))}


def _data(n=200):
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(n, 2)), columns=["a", "b"])
    return X, X.a + X.b


def _wide_tree(model_tree, feature=HUGE):
    """A copy of a fitted ``Tree`` that declares 2**31 - 1 features and splits its root on ``feature``."""
    state = model_tree.__getstate__()
    nodes = state["nodes"].copy()
    nodes["feature"][0] = feature
    state["nodes"] = nodes
    big = Tree(2 ** 31 - 1, np.asarray(model_tree.n_classes), model_tree.n_outputs)
    big.__setstate__(state)
    return big


def _case1(tmp_path):
    """A DecisionTreeRegressor without n_features_in_ whose Tree declares 2**31 - 1 features (issue 57, case 1)."""
    X, y = _data()
    m = DecisionTreeRegressor(max_depth=2, random_state=0).fit(X.to_numpy(), y)
    m.tree_ = _wide_tree(m.tree_)
    del m.n_features_in_
    return m


def _case2():
    """The same for a HistGradientBoosting TreePredictor (issue 57, case 2)."""
    X, y = _data()
    m = HistGradientBoostingRegressor(max_iter=3, random_state=0).fit(X.to_numpy(), y)
    nodes = m._predictors[1][0].nodes
    nodes["feature_idx"][int(np.flatnonzero(nodes["is_leaf"] == 0)[0])] = HUGE
    del m.n_features_in_
    return m


def _run_cli(tmp_path, model, *extra):
    X, y = _data()
    sio.dump(model, tmp_path / "m.skops")
    X.assign(y=y).to_csv(tmp_path / "d.csv", index=False)
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "autopdp", "report", "--model", str(tmp_path / "m.skops"), "--data",
                           str(tmp_path / "d.csv"), "--target", "y", "--out", str(out), "--formats", "json", *extra],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path, stdin=subprocess.DEVNULL, env=ENV)
    return proc, out


@pytest.mark.parametrize("case", ["tree", "hgb"])
def test_a_tree_without_a_declared_width_is_bounded_by_the_data_before_anything_predicts(tmp_path, case):
    """Before: scikit-learn's predict read outside the arrays (a segfault, exit -11).  Now the tree is bounded by the
    data's width (two columns) and refused: exit 2, one line naming the node and the feature, no results.json."""
    model = _case1(tmp_path) if case == "tree" else _case2()
    proc, out = _run_cli(tmp_path, model)
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    errors = [line for line in proc.stderr.splitlines() if line.startswith("autopdp: error:")]
    assert len(errors) == 1 and f"splits on feature {HUGE} of a model with 2 columns" in errors[0] and "crafted" in errors[0]
    assert "Traceback" not in proc.stderr and not (out / "results.json").exists()


def test_the_python_api_checks_the_trees_against_the_data_too(tmp_path):
    X, _ = _data()
    with pytest.raises(InputError, match=f"splits on feature {HUGE} of a model with 2 columns"):
        autopdp.audit(_case1(tmp_path), X.to_numpy(), config=AuditConfig(pairs=False))
    with pytest.raises(InputError, match=f"comparison model 'other' holds a tree whose node .* {HUGE} of a model with 2 columns"):
        X, y = _data()
        good = DecisionTreeRegressor(max_depth=2).fit(X.to_numpy(), y)
        autopdp.audit(good, X.to_numpy(), compare={"other": _case1(tmp_path)}, config=AuditConfig(pairs=False))


def test_a_forest_member_cannot_declare_more_columns_than_its_forest(tmp_path):
    """A RandomForest validates X against its own n_features_in_ and hands it to its trees unchecked: a member that
    claims a wider input is bounded by the forest's width."""
    from autopdp.io.loading import load_model

    X, y = _data()
    forest = RandomForestRegressor(n_estimators=3, max_depth=2, random_state=0).fit(X, y)
    forest.estimators_[1].tree_ = _wide_tree(forest.estimators_[1].tree_)
    forest.estimators_[1].n_features_in_ = 2 ** 31 - 1
    sio.dump(forest, tmp_path / "f.skops")
    with pytest.raises(InputError, match=f"splits on feature {HUGE} of a model with 2 columns"):
        load_model(tmp_path / "f.skops")


def _hgb_categorical_craft(kind):
    """A numeric HistGradientBoostingRegressor with one split turned categorical: predict would look its feature up
    in the bin mapper's categorical map (which has no such row) or read a narrower bitset than its 8 words."""
    X, y = _data()
    m = HistGradientBoostingRegressor(max_iter=3, random_state=0).fit(X.to_numpy(), y)
    p = m._predictors[1][0]
    node = int(np.flatnonzero(p.nodes["is_leaf"] == 0)[0])
    p.nodes["is_categorical"][node] = 1
    p.nodes["bitset_idx"][node] = 0
    p.raw_left_cat_bitsets = np.zeros((1, 8 if kind != "narrow" else 1), np.uint32)
    p.binned_left_cat_bitsets = np.zeros((1, 8), np.uint32)
    if kind != "unflagged":  # the mapper flags the node's feature, so only the bitset's width (or count) is wrong
        flags = np.ones(2 if kind == "narrow" else 5, np.uint8)
        m._bin_mapper.is_categorical_ = flags
        m._bin_mapper.bin_thresholds_ = [np.arange(3.0)] * flags.size
    return m


@pytest.mark.parametrize("kind, says", [
    ("unflagged", r"splits on feature \d, which its bin mapper does not flag as categorical"),
    ("narrow", r"categorical bitsets have shape \(1, 1\), not \(n, 8\)"),
    ("flags", "bin mapper flags 5 columns as categorical or not, of a model with 2 columns"),
])
def test_hgb_categorical_arrays_are_checked_against_the_bin_mapper(tmp_path, kind, says):
    """HistGradientBoosting's predict reads its bin mapper's categorical map and 256-bit bitsets without bounds
    checks: a split on a feature the mapper does not flag, a narrow bitset, or a mapper of another width is
    refused at load (through skops) and by the CLI with exit 2 and one line."""
    from autopdp.io.loading import load_model

    model = _hgb_categorical_craft(kind)
    sio.dump(model, tmp_path / "h.skops")
    with pytest.raises(InputError, match=says):
        load_model(tmp_path / "h.skops")
    if kind == "unflagged":
        proc, out = _run_cli(tmp_path, model)
        errors = [line for line in proc.stderr.splitlines() if line.startswith("autopdp: error:")]
        assert proc.returncode == 2 and len(errors) == 1 and "bin mapper does not flag" in errors[0], proc.stderr[-2000:]
        assert "Traceback" not in proc.stderr and not (out / "results.json").exists()


def test_a_tree_after_a_pipeline_step_must_declare_its_width(tmp_path):
    """A later Pipeline step sees the transformed columns, not the data's: a tree there with no declared width has
    nothing to bound it and is refused at load."""
    from autopdp.io.loading import load_model

    X, y = _data()
    pipe = make_pipeline(StandardScaler(), DecisionTreeRegressor(max_depth=2)).fit(X, y)
    del pipe[-1].n_features_in_
    sio.dump(pipe, tmp_path / "p.skops")
    with pytest.raises(InputError, match="input width nothing declares"):
        load_model(tmp_path / "p.skops")
    pipe[-1].n_features_in_ = 2
    sio.dump(pipe, tmp_path / "p.skops")
    assert load_model(tmp_path / "p.skops") is not None


def _chain(n_splits: int) -> DecisionTreeRegressor:
    """A valid regression tree that is one long chain: split i sends x <= i to a leaf and the rest on."""
    X = np.arange(8.0).reshape(-1, 1)
    m = DecisionTreeRegressor(max_depth=1).fit(X, X[:, 0])
    state = m.tree_.__getstate__()
    n = 2 * n_splits + 1
    nodes = np.zeros(n, dtype=state["nodes"].dtype)
    nodes["left_child"] = nodes["right_child"] = -1
    nodes["feature"] = -2
    splits = np.arange(n_splits) * 2
    nodes["left_child"][splits] = splits + 1
    nodes["right_child"][splits] = splits + 2
    nodes["feature"][splits] = 0
    nodes["threshold"][splits] = np.arange(n_splits) + 0.5
    nodes["n_node_samples"] = 1
    nodes["weighted_n_node_samples"] = 1.0
    values = np.zeros((n, 1, 1))
    values[splits + 1, 0, 0] = np.arange(n_splits)
    values[n - 1, 0, 0] = n_splits
    state.update(nodes=nodes, values=values, node_count=n, max_depth=n_splits)
    chain = Tree(1, np.array([1], dtype=np.intp), 1)  # a new Tree: setting a larger state on a used one overflows it
    chain.__setstate__(state)
    m.tree_ = chain
    return m


_CHAIN_AUDIT = """
import sys, tracemalloc, warnings
import numpy as np
sys.path.insert(0, {tests!r})
from test_hardening2 import _chain
import autopdp
warnings.simplefilter("ignore")
X = np.linspace(0, 8000, 300).reshape(-1, 1)
config = autopdp.AuditConfig(pairs=False, grid_resolution=6, utilities=("slope",))
autopdp.audit(_chain(30), X, config=config)  # the kernels compiled (numba's own memory is not the tables')
tracemalloc.start()  # numpy's arrays are traced: the root-to-leaf table would be one
a = autopdp.audit(_chain(8000), X, config=config)
peak = tracemalloc.get_traced_memory()[1]
r = a.results[0]
assert np.allclose(r.average[0], np.ceil(r.grid[0] - 0.5).clip(0, 8000), atol=1e-9), r.average
assert np.allclose(r.individual[0].mean(axis=0), r.average[0], atol=1e-9)
print(peak / 2 ** 20)
"""


def test_a_long_chain_tree_is_bounded_before_its_root_to_leaf_table_is_built(tmp_path):
    """A 16,001-node chain (142 KB as a file) asked 3.4 GB of the exact path's root-to-leaf table (leaves x depth;
    measured 3,386 MB peak resident before this check).  The table is bounded before it is built: the exact path's
    row kernel steps aside (its reason recorded), the leaf-counting path computes the same exact PD and ICE, and
    the audit's arrays (numpy's, traced) stay far under 1 GB."""
    from autopdp.pd.response import make_adapter
    from autopdp.pd.tree.errors import TreePathUnavailable
    from autopdp.pd.tree.extract import CELL_BYTES, check_forest_size, extract_forest

    model = _chain(8000)
    X = np.linspace(0, 8000, 300).reshape(-1, 1)
    np.testing.assert_allclose(model.predict(X[:5]), np.ceil(X[:5, 0] - 0.5).clip(0, 8000))
    adapter = make_adapter(model, "auto", None, probe=X[:3])
    with pytest.raises(TreePathUnavailable, match=r"above max_batch_mb \(256 MB\); to use that path, raise it with "
                                                  "--max-batch-mb"):
        extract_forest(model, adapter)
    # the table is leaves x depth = 8,001 x 8,000 cells: a limit raised past it keeps the row kernel
    forest, _ = extract_forest(model, adapter, max_bytes=8001 * 8000 * CELL_BYTES)
    with pytest.raises(TreePathUnavailable, match="64,008,000 cells"):
        check_forest_size(forest, max_bytes=8001 * 8000 * CELL_BYTES - 1)
    proc = subprocess.run([sys.executable, "-c", _CHAIN_AUDIT.format(tests=os.path.dirname(__file__))],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path, env=ENV)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert float(proc.stdout.split()[-1]) < 500  # MB of arrays at the peak
    small = _chain(300)  # a chain well under the bound keeps the row kernel
    forest, _ = extract_forest(small, make_adapter(small, "auto", None, probe=X[:3]))
    check_forest_size(forest)


def test_the_forest_bound_counts_a_shared_child_once_and_stops_on_a_cycle():
    """The level walk of :func:`check_forest_size` on crafted node arrays (LightGBM/XGBoost models are read from
    their own dumps): a DAG does not double the frontier at every level, and a cycle ends with a refusal."""
    from autopdp.pd.tree.errors import TreePathUnavailable
    from autopdp.pd.tree.extract import CELL_BYTES, NodeForest, check_forest_size

    def forest(left, right, feature):
        n = len(left)
        return NodeForest(feature=np.asarray(feature), threshold=np.zeros(n), kind=np.zeros(n, np.int8),
                          missing_left=np.zeros(n, bool), left=np.asarray(left), right=np.asarray(right),
                          value=np.zeros((n, 1)), roots=np.array([0]), catbits=np.zeros((0, 1), np.uint32),
                          catknown=np.zeros((0, 1), np.uint32), link=0, scale=1.0, float32=False, max_nodes=n)

    # 60 splits, each with both children on the next node: 2**60 paths if the frontier were not deduplicated
    n = 61
    left = list(range(1, n)) + [-1]
    check_forest_size(forest(left, left, [0] * (n - 1) + [-1]), max_bytes=10_000 * CELL_BYTES)
    with pytest.raises(TreePathUnavailable):
        check_forest_size(forest([1, 0, -1], [2, 2, -1], [0, 0, -1]), max_bytes=1e12)


# ------------------------------------------------------------------ every input bounded before it allocates
def test_a_skops_file_that_inflates_past_the_limit_is_refused_from_its_zip_directory(tmp_path, capsys):
    """A few KB of zip can declare gigabytes; the members' sizes are read from the directory, before skops reads
    any (here a 5.6 MB array against a 1 MB limit), and only the command line raises the limit."""
    from autopdp.cli import main
    from autopdp.io.loading import load_model

    X, y = _data()
    model = StandardScaler().fit(X)
    model.scale_ = np.ones(700_000)  # 5.6 MB inflated, a few KB in the zip
    path = tmp_path / "big.skops"
    sio.dump(model, path, compression=zipfile.ZIP_DEFLATED)
    assert path.stat().st_size < 100_000
    with pytest.raises(InputError, match=r"inflates to 5 MB .* over the 1 MB limit for a model; .*--max-model-mb 6"):
        load_model(path, max_mb=1)
    assert load_model(path).scale_.size == 700_000  # the default limit (1024 MB) takes it
    X.assign(y=y).to_csv(tmp_path / "d.csv", index=False)
    code = main(["report", "--model", str(path), "--data", str(tmp_path / "d.csv"), "--target", "y", "--out",
                 str(tmp_path / "o"), "--formats", "json", "--max-model-mb", "1"])
    err = capsys.readouterr().err
    assert code == 2 and "over the 1 MB limit for a model" in err and not (tmp_path / "o" / "results.json").exists()


def test_a_parquet_file_is_bounded_by_its_footer_before_it_is_read(tmp_path):
    """A run-length-encoded column of 4 million equal values is a few KB on disk and 32 MB in memory: the footer's
    rows x columns decide before pandas reads a value."""
    from autopdp.io.loading import load_data

    path = tmp_path / "many.parquet"
    pd.DataFrame({"a": np.zeros(4_000_000, dtype=np.int8)}).to_parquet(path)
    assert path.stat().st_size < 200_000
    with pytest.raises(InputError, match=r"declares 4,000,000 rows x 1 columns \(about 31 MB in memory\), over the "
                                         r"10 MB limit for data; .*--max-data-mb 31"):
        load_data(path, max_mb=10)
    assert len(load_data(path, max_mb=40)) == 4_000_000
    csv = tmp_path / "d.csv"
    pd.DataFrame({"a": np.arange(200_000)}).to_csv(csv, index=False)
    with pytest.raises(InputError, match=r"is 1 MB, over the 1 MB limit|over the 1 MB limit"):
        load_data(csv, max_mb=1)


def test_a_policy_or_config_can_only_lower_the_limits_and_a_flag_raises_them(tmp_path, capsys):
    from autopdp.cli import main

    X, y = _data()
    model = DecisionTreeRegressor(max_depth=2).fit(X, y)
    sio.dump(model, tmp_path / "m.skops")
    X.assign(y=y).to_csv(tmp_path / "d.csv", index=False)
    base = ["--model", str(tmp_path / "m.skops"), "--data", str(tmp_path / "d.csv"), "--target", "y",
            "--formats", "json"]
    (tmp_path / "c.toml").write_text("max_batch_mb = 4096\npairs = false\ngrid_resolution = 5\n")
    code = main(["report", *base, "--out", str(tmp_path / "o1"), "--config", str(tmp_path / "c.toml")])
    err = capsys.readouterr().err
    assert code == 2 and "--config key 'max_batch_mb' = 4096 raises a limit" in err and "--max-batch-mb 4096" in err
    code = main(["report", *base, "--out", str(tmp_path / "o2"), "--config", str(tmp_path / "c.toml"),
                 "--max-batch-mb", "4096"])
    assert code == 0, capsys.readouterr().err
    import json

    assert json.loads((tmp_path / "o2" / "results.json").read_text())["config"]["max_batch_mb"] == 4096
    (tmp_path / "p.toml").write_text('[audit]\nmax_noise_draws = 2000000\nnoise_draws = 2000000\n'
                                     '[features.a]\nmonotonic = "increasing"\n')
    code = main(["gate", *base, "--out", str(tmp_path / "o3"), "--policy", str(tmp_path / "p.toml")])
    err = capsys.readouterr().err
    assert code == 2 and "policy [audit] key 'max_noise_draws' = 2e+06 raises a limit" in err
    (tmp_path / "c2.toml").write_text("max_pairs = 3\nmax_batch_mb = 64\n")  # lowering is always allowed
    code = main(["report", *base, "--out", str(tmp_path / "o4"), "--config", str(tmp_path / "c2.toml"), "--pairs",
                 "none"])
    assert code == 0, capsys.readouterr().err


def test_near_match_suggestions_are_bounded():
    from autopdp.io.loading import SUGGEST_MAX_CHARS, column_error, did_you_mean

    long = ["x" * 20_000 + str(i) for i in range(300)]
    assert did_you_mean("x" * 20_000, long) == ""  # too long to compare: no suggestion, no quadratic work
    assert did_you_mean("agee", ["age", "income"]) == " Did you mean 'age'?"
    message = str(column_error("target column", "y" * (SUGGEST_MAX_CHARS + 1), long))
    assert "Did you mean" not in message and "... (288 more)" in message


def test_a_crafted_results_json_is_bounded_before_its_tables_expand(tmp_path):
    """A 0.8 MB results.json whose table shares thousands of keys over a hundred thousand empty rows expanded to
    over 3 GB of records in read_results; the fields are counted first."""
    import json

    from autopdp import read_results

    X, _ = _data()
    a = autopdp.audit(lambda d: d["a"].to_numpy(), X, config=AuditConfig(pairs=False, grid_resolution=5,
                                                                          utilities=("slope",)))
    d = json.loads(a.to_json())
    d["scores"] = [{"same": {f"k{i}": 0 for i in range(3000)}, "columns": [], "rows": [[]] * 100_000}]
    path = tmp_path / "results.json"
    path.write_text(json.dumps(d))
    assert path.stat().st_size < 1_000_000
    with pytest.raises(InputError, match=r"would expand to 300,000,\d+ record fields from [\d,]+ bytes"):
        read_results(path)
    with pytest.raises(InputError, match="record fields"):
        autopdp.Audit.from_json(path)


def test_an_identifier_column_gets_no_grid_in_any_output(tmp_path):
    """A customer number the pipeline ignores would put its values in the grids of results.json and the report;
    a text column with nearly one value per row (or whole numbers all distinct) is left out and named."""
    rng = np.random.default_rng(0)
    n = 300
    X = pd.DataFrame({"a": rng.normal(size=n), "customer": [f"CUST-{i:06d}" for i in range(n)],
                      "row_id": np.arange(1000, 1000 + n), "amount": rng.integers(0, 200, n)})
    a = autopdp.audit(lambda d: d["a"].to_numpy() + 0.01 * d["amount"].to_numpy(), X,
                      config=AuditConfig(pairs=False, grid_resolution=5, utilities=("slope",)))
    assert [r.features for r in a.results] == [("a",), ("amount",)]
    notes = [t for t in a.notes if "looks like an identifier" in t]
    assert len(notes) == 2 and "'customer' looks like an identifier (300 distinct values in 300 rows)" in notes[0]
    import json

    record = json.loads(a.to_json())
    assert set(record["grids"]) == {"a", "amount"}  # no grid of either identifier
    assert "CUST-" not in a.to_json() and "CUST-" not in a.to_html()


# ------------------------------------------------------------------ templates
def test_the_template_sandbox_bounds_every_way_to_build_a_large_text():
    from jinja2.exceptions import SecurityError

    from autopdp.report.render import environment

    env = environment()
    refused = ['{{ "abc"|replace("", "x" * 5000000) }}', '{{ "a"|center(20000000) }}', '{{ "x".ljust(100000000) }}',
               '{{ "%100000000s" % "a" }}', '{{ "{:>100000000}".format(1) }}', '{{ "{:>100000000}".format_map({}) }}',
               '{{ ["x" * 5000000, "y" * 6000000]|join(",") }}', '{{ "a\\tb".expandtabs(100000000) }}',
               '{{ ("x\\n" * 1000)|indent(20000) }}', '{{ "%20000000d"|format(1) }}']
    for src in refused:
        with pytest.raises(SecurityError, match="over the limit of 10,000,000 for a template"):
            env.from_string(src).render()
    fine = {'{{ "ab"|replace("a", "c") }}': "cb", '{{ "a"|center(5) }}': "  a  ", '{{ "%5.1f"|format(3.14159) }}':
            "  3.1", '{{ [1, 2]|join(", ") }}': "1, 2", '{{ "{0}-{1}".format(1, 2) }}': "1-2",
            '{{ "x".ljust(3) }}|': "x  |", '{{ "a b c"|wordwrap(3) }}': "a b\nc"}
    for src, out in fine.items():
        assert env.from_string(src).render() == out


def test_a_template_folder_cannot_link_outside_itself(tmp_path, capsys):
    """A link in --template-dir to /proc/self/environ would have written the job's environment (its secrets) into
    report.html; a folder link to / would have been walked whole."""
    from autopdp.cli import main

    folder = tmp_path / "tpl"
    folder.mkdir()
    secret = tmp_path / "secret.txt"
    secret.write_text("AWS_SECRET=abc123")
    (folder / "env.txt").symlink_to(secret)
    (folder / "report.html.j2").write_text('{% extends "autopdp/report.html.j2" %}{% block cover %}'
                                           '{% include "env.txt" %}{% endblock %}')
    X, y = _data()
    sio.dump(DecisionTreeRegressor(max_depth=2).fit(X, y), tmp_path / "m.skops")
    X.assign(y=y).to_csv(tmp_path / "d.csv", index=False)
    code = main(["report", "--model", str(tmp_path / "m.skops"), "--data", str(tmp_path / "d.csv"), "--target", "y",
                 "--out", str(tmp_path / "o"), "--formats", "html", "--template-dir", str(folder)])
    err = capsys.readouterr().err
    assert code == 2 and "holds 'env.txt', a link to" in err and "outside the folder" in err
    assert not (tmp_path / "o" / "report.html").exists()
    from jinja2.exceptions import SecurityError

    from autopdp.report.render import environment

    with pytest.raises(SecurityError, match="a link out of the --template-dir folder"):
        environment(str(folder)).get_template("env.txt")
    (folder / "env.txt").unlink()
    (folder / "root").symlink_to("/")
    with pytest.raises(InputError, match="holds 'root', a link to '/' outside the folder"):
        from autopdp.report.render import check_template_dir

        check_template_dir(folder)


def test_a_linked_out_folder_is_refused(tmp_path, capsys):
    from autopdp.cli import main

    X, y = _data()
    sio.dump(DecisionTreeRegressor(max_depth=2).fit(X, y), tmp_path / "m.skops")
    X.assign(y=y).to_csv(tmp_path / "d.csv", index=False)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "out").symlink_to(elsewhere)
    code = main(["report", "--model", str(tmp_path / "m.skops"), "--data", str(tmp_path / "d.csv"), "--target", "y",
                 "--out", str(tmp_path / "out"), "--formats", "json"])
    err = capsys.readouterr().err
    assert code == 2 and f"is a link to {str(elsewhere)!r}" in err and list(elsewhere.iterdir()) == []


# ------------------------------------------------------------------ MLflow artifacts: boosters, MLmodel, paths
def _boosters(tmp_path):
    """A trained XGBoost and LightGBM booster's files, intact and with the root's left child at 1,000,000."""
    import json

    import lightgbm as lgb
    import xgboost as xgb

    X, y = _data(500)
    bst = xgb.train({"max_depth": 2}, xgb.DMatrix(X.to_numpy(), y.to_numpy()), num_boost_round=3)
    d = json.loads(bst.save_raw("json"))
    (tmp_path / "good.json").write_text(json.dumps(d))
    d["learner"]["gradient_booster"]["model"]["trees"][0]["left_children"][0] = 1_000_000
    (tmp_path / "bad.json").write_text(json.dumps(d))
    text = lgb.train({"verbose": -1, "num_leaves": 4}, lgb.Dataset(X.to_numpy(), y.to_numpy()),
                     num_boost_round=3).model_to_string()
    (tmp_path / "good.lgb").write_text(text)
    first = text.index("left_child=", text.index("Tree=0"))
    line = text[first:text.index("\n", first)]
    width = len(line.split("=")[1].split()[0])
    crafted = text[:first] + "left_child=" + "9" * width + line[len("left_child=") + width:] + text[first + len(line):]
    (tmp_path / "bad.lgb").write_text(crafted)  # same length: tree_sizes still match, the child does not
    return X


def _artifact(folder, flavour: dict, files: dict):
    import yaml

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "MLmodel").write_text(yaml.safe_dump({"flavors": flavour}))
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


def test_crafted_boosters_are_refused_before_their_library_walks_them(tmp_path):
    """Case 3: a booster whose root points to child 1,000,000 loads natively and crashes the library's predict
    (XGBoost: segfault; LightGBM aborts).  Both are read through their text forms and refused first."""
    from autopdp.io.boosters import check_lightgbm_text
    from autopdp.io.mlflow_models import _load_flavour

    _boosters(tmp_path)
    for kind, flavour, good, bad in (
            ("xgboost", {"xgboost": {"data": "model.json", "model_class": "xgboost.core.Booster"}}, "good.json",
             "bad.json"),
            ("lightgbm", {"lightgbm": {"data": "model.lgb", "model_class": "lightgbm.basic.Booster"}}, "good.lgb",
             "bad.lgb")):
        name = flavour[kind]["data"]
        ok = _artifact(tmp_path / f"{kind}-ok", flavour, {name: (tmp_path / good).read_bytes()})
        model, *_ = _load_flavour(f"models:/{kind}/1", ok, {"flavors": flavour}, allow_pickle=False, trusted_types=(),
                                  max_mb=1024)
        assert model is not None
        crafted = _artifact(tmp_path / f"{kind}-bad", flavour, {name: (tmp_path / bad).read_bytes()})
        with pytest.raises(InputError, match=rf"models:/{kind}/1 holds a tree \(#0\) whose node 0 has left child (1000000|9+) "):
            _load_flavour(f"models:/{kind}/1", crafted, {"flavors": flavour}, allow_pickle=False, trusted_types=(),
                          max_mb=1024)
    with pytest.raises(InputError, match="tree_sizes do not match"):
        text = (tmp_path / "good.lgb").read_text()
        check_lightgbm_text(text.replace("left_child=", "left_child=1000 ", 1), "m")


def test_an_in_memory_booster_is_checked_when_the_audit_reads_the_data(tmp_path):
    import xgboost as xgb

    X = _boosters(tmp_path)
    bst = xgb.Booster()
    bst.load_model(str(tmp_path / "bad.json"))
    with pytest.raises(InputError, match=r"holds a tree \(#0\) whose node 0 has left child 1000000"):
        autopdp.audit(lambda d: bst.predict(xgb.DMatrix(np.asarray(d))), X, compare={"b": bst},
                      config=AuditConfig(pairs=False))


def test_an_mlmodel_with_yaml_aliases_or_too_large_is_refused(tmp_path):
    from autopdp.io.mlflow_models import MAX_MLMODEL_BYTES, _read_mlmodel

    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi")) + "flavors: {}\n"
    (tmp_path / "MLmodel").write_text(bomb)
    assert len(bomb) < 700
    with pytest.raises(InputError, match=r"uses YAML aliases \(\*name\), which MLflow never writes"):
        _read_mlmodel(tmp_path)
    (tmp_path / "MLmodel").write_text("flavors: {}\n# " + "x" * MAX_MLMODEL_BYTES)
    with pytest.raises(InputError, match="over the 1,048,576-byte limit"):
        _read_mlmodel(tmp_path)


@pytest.mark.parametrize("where", ["absolute", "parent", "link"])
def test_an_mlmodel_names_only_files_of_its_own_folder(tmp_path, where):
    """``pickled_model: /abs/path`` made autopdp copy that file beside itself (0600 to 0644) before refusing it, and
    ``data: /abs/path`` audit a local file recorded as the registry's model.  Paths must stay in the artifact."""
    from autopdp.io.mlflow_models import _load_flavour

    X, y = _data()
    victim = tmp_path / "victim" / "model.pkl"
    victim.parent.mkdir()
    sio.dump(DecisionTreeRegressor(max_depth=2).fit(X, y), victim)
    victim.chmod(0o600)
    folder = tmp_path / "artifact"
    folder.mkdir()
    name = {"absolute": str(victim), "parent": "../victim/model.pkl", "link": "model.pkl"}[where]
    if where == "link":
        (folder / "model.pkl").symlink_to(victim)
    meta = {"flavors": {"sklearn": {"pickled_model": name, "serialization_format": "skops"}}}
    with pytest.raises(InputError, match=r"models:/m/1: the MLmodel's pickled_model .* points outside the model's "
                                         "artifact folder"):
        _load_flavour("models:/m/1", folder, meta, allow_pickle=False, trusted_types=(), max_mb=1024)
    assert sorted(p.name for p in victim.parent.iterdir()) == ["model.pkl"] and (victim.stat().st_mode & 0o777) == 0o600
    meta = {"flavors": {"xgboost": {"data": name, "model_class": "xgboost.core.Booster"}}}
    with pytest.raises(InputError, match=r"the MLmodel's data .* points outside"):
        _load_flavour("models:/m/1", folder, meta, allow_pickle=False, trusted_types=(), max_mb=1024)


def test_a_registry_alias_is_resolved_once():
    from autopdp.io.mlflow_models import _pinned

    facts = {"registered_model": "credit", "version": "7", "alias": "champion"}
    assert _pinned("models:/credit@champion", facts) == "models:/credit/7"
    assert _pinned("models:/credit/latest", {**facts, "alias": None}) == "models:/credit/7"
    assert _pinned("runs:/abc/model", {"run_id": "abc"}) == "runs:/abc/model"


def test_a_docx_template_whose_xml_would_fill_memory_is_refused_from_its_directory(tmp_path, capsys):
    """A 122 KB template of 60 MB of XML asked python-docx 3.1 GB and 309 s to parse; XML parts are bounded
    (8 MB each, 24 MB together) from the zip's directory before any is inflated."""
    import io

    import docx

    from autopdp.report.word_package import check_docx_template

    base = io.BytesIO()
    docx.Document().save(base)
    bomb = tmp_path / "bomb.docx"
    with zipfile.ZipFile(base) as src, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename == "word/document.xml":
                cut = data.index(b"<w:body>") + len(b"<w:body>")
                data = data[:cut] + b"<w:p/>" * 10_000_000 + data[cut:]
            dst.writestr(info.filename, data)
    assert bomb.stat().st_size < 300_000
    with pytest.raises(InputError, match=r"its XML part 'word/document.xml' inflates to 57.2 MB, over the 8 MB limit"):
        check_docx_template(bomb)
