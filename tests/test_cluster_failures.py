"""A Dask cluster that cannot finish (issue 54): when the workers die on every try of a task, the audit stops with
one line saying what happened and what to do (:class:`autopdp.errors.ClusterError`), on the command line as the
stage that failed (exit 3), and an earlier run's outputs are left whole.  A real LocalCluster of worker processes;
its scheduler gives up on a task after its first worker died (``allowed-failures`` 0), as it would after three."""

import os
import sys

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import RandomForestRegressor

import autopdp
from autopdp.cli.commands import main
from autopdp.errors import ClusterError
from clusters import process_cluster  # noqa: E402

distributed = pytest.importorskip("distributed", reason="dask[distributed] is the optional 'dask' extra")


class _AlwaysDies:
    """A model whose every prediction inside a Dask worker ends that worker's process (a task that runs the
    workers out of memory, say); its predictions in the calling process are the fitted model's."""

    def __init__(self, model):
        self.model = model
        self.n_features_in_ = model.n_features_in_

    def predict(self, X):
        try:
            distributed.get_worker()
        except ValueError:
            return self.model.predict(X)  # not in a worker
        os._exit(1)


class _RaisesInWorker(_AlwaysDies):
    """A model whose predictions inside a Dask worker raise an error of its own."""

    def predict(self, X):
        try:
            distributed.get_worker()
        except ValueError:
            return self.model.predict(X)
        raise RuntimeError("the model's own failure")


@pytest.fixture(scope="module")
def cluster():
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import this test module
    with process_cluster(2, {"distributed.scheduler.allowed-failures": 0}) as made:
        yield made


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.uniform(-1, 1, size=(300, 3)), columns=list("abc"))
    y = X.a + X.b * X.c + rng.normal(0, 0.1, 300)
    return X, y, RandomForestRegressor(10, random_state=0).fit(X, y)


def test_workers_that_die_on_every_try_stop_the_audit_with_one_line_saying_what_to_do(cluster, data):
    _, client = cluster
    X, y, model = data
    with pytest.raises(ClusterError) as exc:
        autopdp.compute_all(_AlwaysDies(model), X, grid_resolution=5, method="brute",
                            options=autopdp.PDOptions(scheduler=client))
    text = str(exc.value)
    assert "\n" not in text
    assert text.startswith("the Dask cluster could not finish its work: its workers died while running one of its "
                           "tasks and the scheduler gave up on it (KilledWorker:")
    assert text.endswith("Check the workers' logs and memory (a worker that runs out of memory dies), then run "
                         "again, or with scheduler=None.")
    # a task's own error is not taken for the cluster's: it passes as it was raised
    client.wait_for_workers(2, timeout=120)
    with pytest.raises(Exception, match="the model's own failure") as exc:
        autopdp.compute_all(_RaisesInWorker(model), X, grid_resolution=5, method="brute",
                            options=autopdp.PDOptions(scheduler=client))
    assert not isinstance(exc.value, ClusterError)


def test_on_the_command_line_exit_3_one_line_and_the_earlier_report_whole(cluster, data, tmp_path, capsys,
                                                                        monkeypatch):
    import skops.io as sio

    cluster_, client = cluster
    client.wait_for_workers(2, timeout=120)  # the workers killed by the test before are back
    X, y, model = data
    X.assign(target=y).to_csv(tmp_path / "data.csv", index=False)
    sio.dump(model, tmp_path / "model.skops")
    (tmp_path / "config.toml").write_text("grid_resolution = 5\npairs = false\nnoise_draws = 50\n")
    out = tmp_path / "out"
    args = ["report", "--model", str(tmp_path / "model.skops"), "--data", str(tmp_path / "data.csv"), "--target",
            "target", "--out", str(out), "--config", str(tmp_path / "config.toml"), "--formats", "json,html"]
    assert main(args) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    capsys.readouterr()

    audit_module = sys.modules["autopdp.auditing.pipeline"]
    real = audit_module.audit
    monkeypatch.setattr(audit_module, "audit", lambda m, *a, **k: real(_AlwaysDies(m), *a, **k))
    code = main(args + ["--scheduler", cluster_.scheduler_address])
    err = capsys.readouterr().err
    assert code == 3
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("autopdp: error: stage '")
    assert "ClusterError: the Dask cluster could not finish its work: its workers died" in lines[0]
    assert lines[0].endswith("then run again, or without --scheduler.")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


@pytest.mark.parametrize("which", ["y", "sample_weight", "X_train"])
def test_a_dask_collection_is_refused_in_one_line_not_collected_silently(data, which):
    """numpy would collect a dask collection whole into the calling process (and the audit would read it as a bare
    array, its column names and types gone): beside a pandas X (a dask DataFrame X is audited on its cluster:
    tests/test_dask_frames.py), each data argument is refused in one line saying what to pass."""
    import dask.dataframe as dd

    X, y, model = data
    lazy = {"X": dd.from_pandas(X, npartitions=2), "y": dd.from_pandas(y, npartitions=2),
            "sample_weight": dd.from_pandas(pd.Series(np.ones(len(X))), npartitions=2),
            "X_train": dd.from_pandas(X, npartitions=2)}[which]
    kwargs = {"X": X, "y": y}
    if which == "X_train":
        kwargs.update(train=(lazy, y), config=autopdp.AuditConfig(refits=2))
    else:
        kwargs[which] = lazy
    with pytest.raises(autopdp.errors.InputTypeError) as exc:
        autopdp.audit(model, kwargs.pop("X"), kwargs.pop("y"), progress=False, **kwargs)
    text = str(exc.value)
    assert "\n" not in text and text.startswith(f"{which} is a Dask collection (")
    assert f"Pass a pandas object ({which}.compute()) when it fits in memory" in text
