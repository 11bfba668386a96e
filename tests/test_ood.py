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


def _term_by_term(cells, means, edge2):
    """How many means lie farther than the edge from each cell, the squared distance summed term by term."""
    d = np.zeros((cells.shape[0], means.shape[0]))
    for t in range(cells.shape[1]):
        d = d + (cells[:, t, None] - means[None, :, t]) ** 2
    return (d > edge2).sum(axis=1)


def test_conditional_share_counts_the_rows_outside_the_edge():
    """The conditional check's counts, read from the cross terms, equal the distances summed term by term:
    on real-looking mixed data (a categorical feature tied to a numeric one) and on edges placed exactly at
    one of the distances, where the short form's rounding could fall on either side."""
    rng = np.random.default_rng(5)
    n = 900
    level = rng.choice(["a", "b", "c", "d"], size=n, p=[0.5, 0.3, 0.15, 0.05])
    x = rng.normal(size=n) + (level == "b") * 2.0
    X = pd.DataFrame({"x": x, "z": x * 0.7 + rng.normal(0, 0.5, n), "w": rng.exponential(size=n), "g": level})
    kinds = {"x": "numeric", "z": "numeric", "w": "numeric", "g": "categorical"}
    sm = SupportModel(as_frame(X), kinds)
    for features in (("x",), ("g",), ("x", "z"), ("x", "g"), ("g", "w")):
        grids = tuple(np.array(["a", "b", "c", "d", "e"], dtype=object) if f == "g" else _grid(X[f], 7)
                      for f in features)
        out = sm.measure(features, grids)
        _, chol, mean, _, edge_c, _, _ = sm._own(features)
        pts, _, shape, _ = sm._cells(features, grids)
        white = pts @ chol
        direct = _term_by_term(white, mean, edge_c * edge_c * (1 + 1e-12) + 1e-12) / mean.shape[0]
        np.testing.assert_array_equal(out.conditional_share.ravel(), direct)
        assert 0 < direct.mean() < 1  # some rows on either side: the comparison is not vacuous


def test_conditional_kernel_at_an_edge_equal_to_a_distance():
    from autopdp.trust.ood_kernel import conditional_outside

    rng = np.random.default_rng(11)
    for dim in (1, 3, 9):
        means = rng.normal(size=(400, dim))
        a, b = rng.normal(size=(6, dim)), rng.normal(size=(5, dim))
        cells = np.ascontiguousarray(np.repeat(a, 5, axis=0) + np.tile(b, (6, 1)))
        rows = np.ascontiguousarray(np.vstack([a @ means.T, b @ means.T]))
        first = np.repeat(np.arange(6), 5)
        second = 6 + np.tile(np.arange(5), 6)
        norms = np.linalg.norm(a, axis=1)[first] + np.linalg.norm(b, axis=1)[second - 6]
        for c, i in ((0, 0), (7, 123), (29, 399)):
            diff = cells[c] - means[i]
            edge2 = 0.0
            for t in range(dim):
                edge2 = edge2 + diff[t] * diff[t]  # the very distance of that pair: it is not outside
            got = conditional_outside(np.ascontiguousarray(means), cells, edge2, rows, first, second, norms)
            np.testing.assert_array_equal(got, _term_by_term(cells, means, edge2))


def test_plane_distance_of_a_numeric_and_a_categorical_feature_is_the_kth_nearest_row():
    """The plane check's walk within the query's level, then across the others, finds the k-th nearest row
    by brute force: common and rare levels, a level no row has, and the rows' own values (own row skipped)."""
    rng = np.random.default_rng(8)
    n = 700
    level = rng.choice(["common", "mid", "rare"], size=n, p=[0.85, 0.14, 0.01])
    x = np.round(rng.gamma(2.0, size=n), 1)  # ties on the axis
    level[:3], x[:3] = "twin", [1.5, 1.5, 1.6]  # a level with fewer rows than k, close together
    X = pd.DataFrame({"x": x, "g": level})
    sm = SupportModel(as_frame(X), {"x": "numeric", "g": "categorical"}, k=5)
    z, codes = sm.values["x"][0], sm.values["g"][0]
    for features in (("x", "g"), ("g", "x")):
        grids = {"x": _grid(X["x"], 9), "g": np.array(["common", "mid", "rare", "twin", "never"], dtype=object)}
        out = sm.measure(features, tuple(grids[f] for f in features))
        levels = {v: i for v, i in sm.cols["g"][2].items()}
        gz = sm.cols["x"][2](grids["x"])
        for a, gx in enumerate(gz):
            for b, lv in enumerate(grids["g"]):
                code = levels.get(lv, -2)
                d = np.sort((z - gx) ** 2 + (codes != code))[sm.k - 1]
                at = (a, b) if features[0] == "x" else (b, a)
                expected = np.inf if code == -2 else np.sqrt(d)
                assert out.plane_distance[at] == expected
        # the calibration: each row's k-th nearest other row
        from autopdp.trust.ood_kernel import kth_distance

        plane = sm._plane(features)
        cal = sm.calibration_rows
        got = kth_distance(*plane[:2], np.ascontiguousarray(plane[0][:, cal]), cal, sm.k, *plane[2:])
        full = (z[cal, None] - z[None, :]) ** 2 + (codes[cal, None] != codes[None, :])
        full[np.arange(cal.size), cal] = np.inf
        np.testing.assert_array_equal(got, np.sort(full, axis=1)[:, sm.k - 1])
        assert (codes[cal] == levels["rare"]).any() and (codes[cal] == levels["twin"]).sum() == 3
