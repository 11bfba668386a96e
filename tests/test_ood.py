"""Known answers of the out-of-distribution share, measured in the moved features (issue 23).

Every data set is built here: a near-duplicate pair among many other features, a pair whose joint
support has a hole, independent features, the calibration on the data's own rows, and scikit-learn's
breast cancer data (mean radius x mean area, association 0.99).
"""

import numpy as np
import pandas as pd
import pytest

from autopdp.errors import InputError
from autopdp.pd.data import as_frame
from autopdp.trust.ood import OOD_MOSTLY, OOD_OK, SupportModel, ood_verdict


def _grid(x, n=10):
    return np.quantile(np.asarray(x, dtype=float), np.linspace(0.05, 0.95, n))


def _numeric(X):
    return SupportModel(as_frame(X), {c: "numeric" for c in X.columns})


@pytest.fixture(scope="module")
def wide_duplicate():
    """b = a + tiny noise among 30 independent features (like radius x area among breast cancer's 30)."""
    rng = np.random.default_rng(23)
    n = 1500
    X = pd.DataFrame(rng.normal(size=(n, 30)), columns=[f"x{i}" for i in range(30)])
    X["a"] = rng.normal(size=n)
    X["b"] = X["a"] + rng.normal(0, 0.01, n)
    return X


def test_near_duplicate_pair_is_mostly_out_of_distribution(wide_duplicate):
    X = wide_duplicate
    grids = (_grid(X["a"]), _grid(X["b"]))
    share = _numeric(X).share(("a", "b"), grids)
    # on a 10 x 10 grid the diagonal band holds 10 of the 100 cells; every other cell is impossible
    off_band = ~np.eye(10, dtype=bool)
    assert share.mean() > 0.5
    assert share[off_band].mean() > 0.9 and share[~off_band].mean() < 0.1


def test_near_duplicate_cells_are_outside_in_the_plane(wide_duplicate):
    X = wide_duplicate
    ood = _numeric(X).measure(("a", "b"), (_grid(X["a"]), _grid(X["b"])))
    assert ood.cell_outside.mean() > 0.8  # the simple per-cell number: the cell itself is far from the data
    assert not ood.cell_outside[np.eye(10, dtype=bool)].any()
    assert np.all(ood.plane_distance[ood.cell_outside] > ood.plane_edge)
    # moving a alone while its copy b stays at the row's value: implausible for almost every row
    assert _numeric(X).share(("a",), (_grid(X["a"], 20),)).mean() > 0.8


def test_hole_in_the_joint_support_is_out_of_distribution():
    rng = np.random.default_rng(5)
    n = 2000
    a, b = rng.uniform(-1, 1, 3 * n), rng.uniform(-1, 1, 3 * n)
    keep = ~((a > 0) & (b > 0))  # no row has both a > 0 and b > 0
    X = pd.DataFrame({"a": a[keep][:n], "b": b[keep][:n], "c": rng.normal(size=n), "d": rng.normal(size=n)})
    g = np.linspace(-0.9, 0.9, 10)
    share = _numeric(X).share(("a", "b"), (g, g))
    in_hole = (g[:, None] >= 0.3) & (g[None, :] >= 0.3)
    far_from_hole = (g[:, None] <= -0.3) | (g[None, :] <= -0.3)
    assert share[in_hole].min() > 0.9
    assert share[far_from_hole].max() < 0.1


def test_independent_features_are_inside():
    rng = np.random.default_rng(6)
    X = pd.DataFrame(rng.normal(size=(2000, 6)), columns=list("abcdef"))
    X["g"] = rng.choice(["p", "q", "r"], 2000)
    sm = SupportModel(as_frame(X), {**{c: "numeric" for c in "abcdef"}, "g": "categorical"})
    assert sm.share(("a", "b"), (_grid(X["a"]), _grid(X["b"]))).mean() < 0.05
    assert sm.share(("c",), (_grid(X["c"], 20),)).mean() < 0.05
    assert sm.share(("d", "g"), (_grid(X["d"]), np.array(["p", "q", "r"], dtype=object))).mean() < 0.05


@pytest.mark.parametrize("features", [("a", "b"), ("a",), ("x0", "x1"), ("x3",)])
def test_own_rows_are_out_of_distribution_at_the_nominal_rate(wide_duplicate, features):
    sm = _numeric(wide_duplicate)
    assert 0.005 <= sm.own_share(features) <= 0.01  # quantile 0.99: at most 1%, ties aside about 1%
    ood = sm.measure(features, tuple(_grid(wide_duplicate[f]) for f in features))
    assert ood.own_share == sm.own_share(features)


def test_own_rows_of_new_data_from_the_same_distribution_are_mostly_inside():
    """Held-out real rows, each at its own values as a one-cell grid, are OOD about as rarely as the nominal rate."""
    rng = np.random.default_rng(9)

    def draw(n):
        a = rng.normal(size=n)
        return pd.DataFrame({"a": a, "b": a + rng.normal(0, 0.3, n), "c": rng.normal(size=n)})

    sm = _numeric(draw(2000))
    new = draw(200)
    outside = [sm.share(("a", "b"), (np.array([r.a]), np.array([r.b])))[0, 0] for r in new.itertuples()]
    # each cell's share is over all 2000 augmented rows, so a real pair's cell is inside for most rows
    assert np.mean(outside) < 0.1


def test_breast_cancer_radius_and_area():
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import HistGradientBoostingClassifier

    from autopdp import audit
    from autopdp.config import AuditConfig
    from autopdp.report.context import trust_text

    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    pair = ("mean radius", "mean area")
    ood = _numeric(X).measure(pair, (_grid(X[pair[0]]), _grid(X[pair[1]])))
    assert ood.cell_outside.mean() > 0.5 and ood.share.mean() > 0.5
    model = HistGradientBoostingClassifier(max_iter=30, random_state=0).fit(X, y)
    a = audit(model, X, y, config=AuditConfig(pairs=[pair], utilities=("ood_share",), criteria_2d=("correlation",)))
    s = a.score(pair, "ood_share")
    assert s.value > 0.5 and s.details["verdict"] == "mostly unrealistic"
    text = trust_text(a, pair)
    assert "caution" in text and "ok" not in text.split("—")[-1]
    assert f"ok ≤ {OOD_OK:.0%}" in text


def test_verdict_thresholds_and_bad_input(wide_duplicate):
    assert ood_verdict(0.0) == "ok" and ood_verdict(OOD_OK) == "ok"
    assert ood_verdict(OOD_OK + 0.01) == "caution" and ood_verdict(OOD_MOSTLY + 0.01) == "mostly unrealistic"
    with pytest.raises(InputError, match="finite"):
        ood_verdict(float("nan"))
    frame = as_frame(wide_duplicate)
    with pytest.raises(InputError, match="does not have"):
        SupportModel(frame, {"nope": "numeric"})
    with pytest.raises(InputError, match="kinds must be"):
        SupportModel(frame, {"a": "number"})
    with pytest.raises(InputError, match="quantile"):
        SupportModel(frame, {"a": "numeric"}, quantile=1.0)
    sm = SupportModel(frame, {"a": "numeric", "b": "numeric"})
    with pytest.raises(InputError, match="no feature 'x0'"):
        sm.share(("x0",), (np.zeros(3),))
    with pytest.raises(InputError, match="1D and 2D"):
        sm.share(("a", "b", "a"), (np.zeros(2),) * 3)
    with pytest.raises(InputError, match="finite"):
        sm.share(("a",), (np.array([0.0, np.nan]),))


def test_large_data_is_sampled_with_its_standard_error(wide_duplicate):
    big = pd.concat([wide_duplicate] * 3, ignore_index=True)
    sm = SupportModel(as_frame(big), {c: "numeric" for c in big.columns}, max_rows=500)
    assert sm.sampled and sm.rows.size == 500
    assert sm.standard_error == pytest.approx(0.5 / np.sqrt(500))
