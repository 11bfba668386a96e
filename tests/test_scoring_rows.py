"""The scoring stage's per-row counts against their direct computation (issue 32: fewer passes over the rows)."""

import numpy as np
import pytest

from autopdp.scores.cells import cell_weights
from autopdp.scores.scoring import flat_cells
from autopdp.scores.utilities.incidence import incidence_curve


def _direct_cells(idx, shape):
    ok = np.all([i >= 0 for i in idx], axis=0)
    cells = np.full(idx[0].shape[0], -1, dtype=np.int64)
    if ok.any():
        cells[ok] = np.ravel_multi_index(tuple(i[ok] for i in idx), shape)
    return cells


def test_flat_cells_equal_ravel_multi_index():
    rng = np.random.default_rng(0)
    for shape in [(5,), (4, 7), (3, 2, 6)]:
        idx = [rng.integers(0, k, 500) for k in shape]
        for i in idx:
            i[rng.random(500) < 0.1] = -1  # missing or unmatched values
        np.testing.assert_array_equal(flat_cells(idx, shape), _direct_cells(idx, shape))
        full = [np.abs(i) for i in idx]  # no missing value
        np.testing.assert_array_equal(flat_cells(full, shape), _direct_cells(full, shape))
    assert flat_cells([np.array([1, -1, 0])], (2,)).tolist() == [1, -1, 0]
    assert flat_cells([np.array([1, 0, -1]), np.array([2, -1, 0])], (2, 3)).tolist() == [5, -1, -1]


def test_counts_and_incidence_equal_the_weighted_forms_with_unit_weights():
    rng = np.random.default_rng(1)
    cells = rng.integers(0, 6, 1000)
    y = (rng.random(1000) < 0.3).astype(float)
    for c in (cells, np.where(rng.random(1000) < 0.2, -1, cells)):
        ones = np.ones(c.size)
        ok = c >= 0
        counts = np.bincount(c[ok], minlength=6)
        np.testing.assert_array_equal(cell_weights(c, (6,)), counts / c.size)
        np.testing.assert_array_equal(cell_weights(c, (6,), ones), counts / c.size)
        curve = incidence_curve(c, y, (6,))
        np.testing.assert_array_equal(curve, incidence_curve(c, y, (6,), ones))
        means = [y[c == k].mean() for k in range(6)]
        np.testing.assert_allclose(curve, means, rtol=1e-15)
    assert np.isnan(incidence_curve(np.array([0, 0, -1]), np.array([1.0, 0.0, 1.0]), (2,))[1])


def test_outside_grid_of_an_integer_column_is_evaluated_at_the_rounded_median():
    from autopdp import audit
    from autopdp.config import AuditConfig

    rng = np.random.default_rng(4)
    x = np.concatenate([rng.integers(0, 100, 950), rng.integers(1000, 1101, 51)]).reshape(-1, 1)  # int64 column
    a = audit(lambda d: np.asarray(d, dtype=float)[:, 0] / 10.0, x,
              config=AuditConfig(pairs=False, utilities=("monotonicity",)))
    above = [o for o in a.metadata["outside_grid"] if o["side"] == "above"]
    top = np.asarray(a.pd("x0").grid[0], dtype=float).max()
    med = float(f"{float(np.median(x[x > top])):.4g}")
    assert above and above[0]["median"] == round(med)
    assert above[0]["pd_beyond"] == round(med) / 10.0


def test_the_scores_keep_one_cell_table_per_grid_and_no_row_array():
    """Issue 54: the scores keep, per distinct grid (its features and values), its cells' row mass and observed
    sums, found on the row partitions in one pass; no row-long grid index is kept (at 2M rows the kept indexes had
    been 196 row-long arrays, later one per feature and grid: 28 bytes a row at 14 features).  Known answers: one
    table per distinct grid, and every PD's weights and incidence equal to the definitions (cell_weights and
    incidence_curve of fresh nearest indexes), weighted and not."""
    import pandas as pd
    from sklearn.ensemble import RandomForestRegressor

    import autopdp
    from autopdp.auditing import pipeline as audit_module
    from autopdp.config import AuditConfig
    from autopdp.pd.grids import FeatureSpec, nearest_grid_index
    from autopdp.scores.cells import grid_key

    rng = np.random.default_rng(0)
    n = 600
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.integers(0, 9, n).astype(float), "c": rng.normal(size=n),
                      "d": pd.Categorical(rng.choice(["x", "y", "z"], n))})
    X.loc[rng.random(n) < 0.05, "c"] = np.nan
    y = X.a * X.b + (X.d == "x") + rng.normal(0, 0.3, n)
    model = RandomForestRegressor(n_estimators=10, random_state=0).fit(pd.get_dummies(X).fillna(0), y)

    def f(frame):
        return model.predict(pd.get_dummies(frame).reindex(columns=model.feature_names_in_, fill_value=0).fillna(0))

    for weights in (None, rng.exponential(size=n)):
        kept = []
        original = audit_module.ScoringInputs

        def keep(**kwargs):
            kept.append(original(**kwargs))
            return kept[-1]

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(audit_module, "ScoringInputs", keep)
            result = autopdp.audit(f, X, y, config=AuditConfig(grid_resolution=6, grid_resolution_2d=4),
                                   sample_weight=weights)
        inputs = kept[0]
        assert not hasattr(inputs, "_nearest")  # where every row's grid indexes were kept
        grids = {grid_key(r.features, r.kinds, r.grid, r.ordered) for r in result.results}
        pairs = sum(r.ndim == 2 for r in result.results)
        assert pairs >= 3 and set(inputs._tables.masses) == grids and len(grids) == 4 + pairs  # one per PD: no PD
        # shares a 1D grid with another here (the 2D grids of a and c are coarser; b and d's differ in features)
        for r in result.results:
            fresh = [nearest_grid_index(inputs.column(name), FeatureSpec(name=name, position=-1, kind=kind,
                                                                         grid=np.asarray(g), ordered=o, n_missing=0))
                     for name, kind, g, o in zip(r.features, r.kinds, r.grid, r.ordered)]
            cells = _direct_cells(fresh, r.grid_shape)
            np.testing.assert_allclose(inputs.cell_weights(r), cell_weights(cells, r.grid_shape, weights),
                                       rtol=1e-12, atol=0)
            want = incidence_curve(cells, np.asarray(y, dtype=float), r.grid_shape, weights)
            np.testing.assert_allclose(inputs.incidence(r, r.targets[0]), want, rtol=1e-12, atol=0)


def test_small_index_holds_every_index_of_its_grid():
    """Kept grid indexes take the smallest integer type that holds -1 and every index of their grid (known answers
    at each type's edge), with the same values."""
    from autopdp.pd.grids import small_index

    for size, kind in [(1, np.int8), (127, np.int8), (128, np.int16), (32767, np.int16), (32768, np.int64)]:
        index = np.array([-1, 0, size - 1], dtype=np.int64)
        small = small_index(index, size)
        assert small.dtype == kind and small.tolist() == [-1, 0, size - 1]
