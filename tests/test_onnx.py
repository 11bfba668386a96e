"""ONNX models read as data (issue 56, first part): loaded after bounds and domain checks, run by onnxruntime, their
PDs equal to the trained model's; crafted files refused in one line (exit 2 on the command line)."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import autopdp
from autopdp.errors import InputError

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
skl2onnx = pytest.importorskip("skl2onnx")

from onnx import TensorProto, helper  # noqa: E402
from sklearn.ensemble import GradientBoostingRegressor, RandomForestClassifier  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

CFG = autopdp.AuditConfig(pairs=False, noise_draws=50, utilities=("slope", "monotonicity"))


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    # float32 values: the ONNX graph computes in float32, so the trained model sees the same numbers
    X = pd.DataFrame(rng.normal(size=(300, 3)).astype(np.float32), columns=["a", "b", "c"])
    y = (X.a + X.b * X.c + 0.3 * rng.normal(size=300) > 0).astype(int)
    return X, y


def _save(model, X, path: Path, **kw) -> Path:
    path.write_bytes(skl2onnx.to_onnx(model, X, **kw).SerializeToString())
    return path


def _max_pd_gap(a, b) -> float:
    return max(float(np.abs(np.asarray(ra.average) - np.asarray(rb.average)).max()) for ra, rb in zip(a.results, b.results))


@pytest.mark.parametrize("zipmap", [True, False])
def test_a_forest_classifier_file_audits_like_the_trained_model(data, tmp_path, zipmap):
    X, y = data
    rf = RandomForestClassifier(n_estimators=20, max_depth=5, random_state=0).fit(X, y)
    m = autopdp.load_model(_save(rf, X[:1].to_numpy(), tmp_path / "rf.onnx", options={"zipmap": zipmap}))
    assert m._estimator_type == "classifier" and list(m.classes_) == [0, 1] and m.n_features_in_ == 3
    assert np.abs(m.predict_proba(X) - rf.predict_proba(X)).max() < 1e-6
    a, b = autopdp.audit(m, X, y, config=CFG), autopdp.audit(rf, X, y, config=CFG)
    assert _max_pd_gap(a, b) < 1e-6
    onnx_meta = a.metadata["model"]["onnx"]
    assert onnx_meta["producer"] == "skl2onnx" and len(onnx_meta["sha256"]) == 64 and "ai.onnx.ml" in onnx_meta["opsets"]


def test_a_regressor_and_a_logistic_pipeline(data, tmp_path):
    X, y = data
    gbr = GradientBoostingRegressor(n_estimators=30, max_depth=3, random_state=0).fit(X, X.a * X.b)
    m = autopdp.load_model(_save(gbr, X[:1].to_numpy(), tmp_path / "gbr.onnx"))
    assert m._estimator_type == "regressor" and not hasattr(m, "classes_")
    assert np.abs(m.predict(X) - gbr.predict(X)).max() < 1e-4  # float32 sums of 30 trees
    assert _max_pd_gap(autopdp.audit(m, X, config=CFG), autopdp.audit(gbr, X, config=CFG)) < 1e-4
    pipe = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
    m = autopdp.load_model(_save(pipe, X[:1].to_numpy(), tmp_path / "logit.onnx", options={"zipmap": False}))
    assert np.abs(m.predict_proba(X) - pipe.predict_proba(X)).max() < 1e-5
    assert _max_pd_gap(autopdp.audit(m, X, y, config=CFG), autopdp.audit(pipe, X, y, config=CFG)) < 1e-5


def test_per_column_inputs_take_the_columns_of_their_names(data, tmp_path):
    X, y = data
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline

    rf = Pipeline([("cols", ColumnTransformer([("num", StandardScaler(), ["a", "b", "c"])])),
                   ("rf", RandomForestClassifier(n_estimators=10, max_depth=4, random_state=0))]).fit(X, y)
    inputs = [(c, skl2onnx.common.data_types.FloatTensorType([None, 1])) for c in X.columns]
    path = tmp_path / "cols.onnx"
    path.write_bytes(skl2onnx.convert_sklearn(rf, initial_types=inputs, options={"zipmap": False},
                                              target_opset=17).SerializeToString())
    m = autopdp.load_model(path)
    assert list(m.feature_names_in_) == ["a", "b", "c"]
    shuffled = X[["c", "a", "b"]]  # by name, not position
    assert np.abs(m.predict_proba(shuffled) - rf.predict_proba(X)).max() < 1e-6
    with pytest.raises(InputError, match="no column for its inputs b"):
        m.predict(X[["a", "c"]])


def _graph_file(path: Path, node, *, domain_opset=None, initializer=None, inputs=None) -> Path:
    inputs = inputs or [helper.make_tensor_value_info("X", TensorProto.FLOAT, [None, 1])]
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [None, 1])],
                              initializer=[initializer] if initializer is not None else [])
    opsets = [helper.make_opsetid("", 17)] + ([helper.make_opsetid(domain_opset, 1)] if domain_opset else [])
    model = helper.make_model(graph, opset_imports=opsets)
    path.write_bytes(model.SerializeToString())
    return path


def test_crafted_files_are_refused_in_one_line(data, tmp_path):
    custom = _graph_file(tmp_path / "custom.onnx", helper.make_node("Evil", ["X"], ["Y"], domain="com.evil"),
                         domain_opset="com.evil")
    with pytest.raises(InputError, match="operator domain 'com.evil'"):
        autopdp.load_model(custom)
    ext = helper.make_tensor("W", TensorProto.FLOAT, [1], [0.0])
    ext.ClearField("float_data")
    ext.data_location = TensorProto.EXTERNAL
    ext.external_data.add(key="location", value="../outside.bin")
    outside = _graph_file(tmp_path / "outside.onnx", helper.make_node("Add", ["X", "W"], ["Y"]), initializer=ext)
    with pytest.raises(InputError, match="must lie in the model's own folder"):
        autopdp.load_model(outside)
    big = helper.make_tensor("W", TensorProto.FLOAT, [1], [0.0])
    del big.dims[:]
    big.dims.extend([1 << 20, 1 << 10])  # declares 4 GiB of weights in a file of a few bytes
    huge = _graph_file(tmp_path / "huge.onnx", helper.make_node("Add", ["X", "W"], ["Y"]), initializer=big)
    with pytest.raises(InputError, match="exceed the 1,024 MB limit"):
        autopdp.load_model(huge)
    X, y = data
    rf = RandomForestClassifier(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    whole = _save(rf, X[:1].to_numpy(), tmp_path / "whole.onnx").read_bytes()
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(InputError, match="cannot read model file .* as ONNX"):
        autopdp.load_model(cut)
    with pytest.raises(InputError, match="MB limit for a model"):
        autopdp.load_model(tmp_path / "whole.onnx", max_mb=1e-4)


def test_the_command_line_audits_an_onnx_file_and_refuses_a_crafted_one(data, tmp_path):
    X, y = data
    rf = RandomForestClassifier(n_estimators=10, max_depth=4, random_state=0).fit(X, y)
    model = _save(rf, X[:1].to_numpy(), tmp_path / "rf.onnx", options={"zipmap": False})
    csv = tmp_path / "data.csv"
    X.assign(y=y).to_csv(csv, index=False)
    env = {"PYTHONPATH": str(Path(autopdp.__file__).resolve().parents[1]), "AUTOPDP_NO_PROGRESS": "1",
           "PATH": "/usr/bin:/bin"}
    cmd = [sys.executable, "-m", "autopdp", "report", "--model", str(model), "--data", str(csv), "--target", "y",
           "--pairs", "none", "--formats", "json", "--out", str(tmp_path / "out")]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "out" / "results.json").exists()
    bad = _graph_file(tmp_path / "custom.onnx", helper.make_node("Evil", ["X"], ["Y"], domain="com.evil"),
                      domain_opset="com.evil")
    cmd[cmd.index(str(model))] = str(bad)
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 2 and "com.evil" in done.stderr and len(done.stderr.strip().splitlines()) == 1, \
        done.stderr


def test_the_trained_and_the_shipped_model_compared_state_the_conversion_gap(data, tmp_path):
    """compare (and audit(..., compare=)) states each comparison model's gap: the rows whose prediction moved by more
    than 1e-6 and the largest 1D PD difference; none for a faithful conversion, some for another model."""
    X, y = data
    rf = RandomForestClassifier(n_estimators=20, max_depth=5, random_state=0).fit(X, y)
    shipped = autopdp.load_model(_save(rf, X[:1].to_numpy(), tmp_path / "rf.onnx", options={"zipmap": False}))
    other = RandomForestClassifier(n_estimators=20, max_depth=5, random_state=1).fit(X, y)
    a = autopdp.audit(rf, X, y, compare={"shipped": shipped, "other": other}, config=CFG)
    gap = a.metadata["comparison_gap"]
    assert gap["shipped"]["rows"] == len(X) and gap["shipped"]["rows_changed"] == 0
    assert gap["shipped"]["largest_prediction_difference"] < 1e-6 and max(gap["shipped"]["pd_gap"].values()) < 1e-6
    truth = np.abs(rf.predict_proba(X)[:, 1] - other.predict_proba(X)[:, 1])
    assert gap["other"]["rows_changed"] == int(np.sum(truth > 1e-6)) > 0
    assert gap["other"]["largest_prediction_difference"] == pytest.approx(truth.max())
    notes = [n for n in a.notes if n.startswith("Gap to shipped: ")]
    assert notes == [f"Gap to shipped: shipped's prediction differs from this model's by more than 1e-06 on 0 of the "
                     f"{len(X)} rows (largest difference {autopdp.utils.formatting.fmt(gap['shipped']['largest_prediction_difference'])}); "
                     f"the largest difference between the two models' 1D PDs is "
                     f"{autopdp.utils.formatting.fmt(max(gap['shipped']['pd_gap'].values()))} (on "
                     f"{max(gap['shipped']['pd_gap'], key=gap['shipped']['pd_gap'].get)}, "
                     f"{autopdp.utils.formatting.fmt(max(gap['shipped']['pd_gap'].values()) / a.metadata['prediction_std'][0], 2)} "
                     "prediction standard deviations)."]
    from autopdp.report.cover import cover

    assert notes[0] in cover(a)["gaps"]
    back = autopdp.Audit.from_json(a.to_json())
    assert back.metadata["comparison_gap"]["other"]["rows_changed"] == gap["other"]["rows_changed"]


def test_the_gate_fails_a_conversion_that_changed_behaviour(data, tmp_path):
    """[champion] max_pd_gap and max_changed_rows hold the shipped file to the trained model, exactly."""
    from autopdp import gate

    X, y = data
    rf = RandomForestClassifier(n_estimators=20, max_depth=5, random_state=0).fit(X, y)
    shipped = autopdp.load_model(_save(rf, X[:1].to_numpy(), tmp_path / "rf.onnx", options={"zipmap": False}))
    policy = {"champion": {"max_pd_gap": 1e-6, "max_changed_rows": 0}}
    faithful = gate(autopdp.audit(shipped, X, y, compare={"champion": rf}, config=CFG), policy)
    assert faithful.passed and {c.check for c in faithful.checks} == {"pd_gap", "changed_rows"}
    changed = RandomForestClassifier(n_estimators=20, max_depth=5, random_state=1).fit(X, y)
    a = autopdp.audit(changed, X, y, compare={"champion": rf}, config=CFG)
    verdict = gate(a, policy)
    failed = {c.check: c for c in verdict.checks if not c.passed}
    assert not verdict.passed and set(failed) == {"pd_gap", "changed_rows"}
    share = a.metadata["comparison_gap"]["champion"]["rows_changed"] / len(X)
    assert failed["changed_rows"].measured == pytest.approx(share) and share > 0
    assert "share of rows whose prediction differs from the champion's (champion) by more than 1e-6" in \
        failed["changed_rows"].message
    with pytest.raises(InputError, match="share of the rows"):
        gate(a, {"champion": {"max_changed_rows": 5}})
