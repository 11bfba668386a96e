"""Each row's grid cell made a chunk of rows at a time (issue 54, :mod:`autopdp.scores.cells`): the density weights
and the incidence curve equal their whole-array definitions at every chunking, weighted and not, with rows off
the grid on either axis."""

import numpy as np
import pytest

import autopdp.pd.rows as rows
from autopdp.scores.cells import GridCells, cell_weights
from autopdp.scores.utilities.incidence import incidence_curve


def _case(seed: int):
    rng = np.random.default_rng(seed)
    n, shape = int(rng.integers(1, 300)), (int(rng.integers(1, 6)), int(rng.integers(1, 5)))
    idx = [rng.integers(-1, k, n).astype(np.int8) for k in shape]  # -1: no grid point on that axis
    flat = np.where((idx[0] >= 0) & (idx[1] >= 0), idx[0].astype(np.int64) * shape[1] + idx[1], -1)
    weights = None if seed % 2 else rng.exponential(size=n)
    return GridCells(idx, shape), flat, shape, rng.random(n), weights


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("chunk", [1, 7, 10**9])
def test_cells_weights_and_incidence_equal_the_whole_array_definitions(seed, chunk, monkeypatch):
    monkeypatch.setattr(rows, "CHUNK_ROWS", chunk)
    cells, flat, shape, y, w = _case(seed)
    np.testing.assert_array_equal(np.concatenate([c for _, _, c in cells.chunks()]), flat)
    some = np.array([len(flat) - 1, 0, len(flat) // 2])
    np.testing.assert_array_equal(cells.at(some), flat[some])
    ok = flat >= 0
    ones = np.ones(flat.size) if w is None else w
    mass = np.bincount(flat[ok], weights=ones[ok], minlength=int(np.prod(shape)))
    total = flat.size if w is None else w.sum()
    np.testing.assert_allclose(cell_weights(cells, shape, w), (mass / total).reshape(shape), rtol=1e-12, atol=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(flat[ok], weights=(ones * y)[ok], minlength=mass.size) / mass
    np.testing.assert_allclose(incidence_curve(cells, y, shape, w), np.where(mass > 0, mean, np.nan).reshape(shape),
                               rtol=1e-12, atol=0)
    # an array of flat cells is read the same way
    np.testing.assert_allclose(cell_weights(flat, shape, w), cell_weights(cells, shape, w), rtol=1e-12, atol=0)


def test_a_cell_whose_weights_total_below_one_has_their_weighted_mean():
    """Known answer: weights 0.25 and 0.25 on y = 1 and 0 give 0.5 (the incidence curve divided by at least 1 before,
    so weights that sum to 1 over the data gave the weighted sum, 0.25, not the mean)."""
    cells = np.array([0, 0, 1])
    curve = incidence_curve(cells, np.array([1.0, 0.0, 1.0]), (2,), np.array([0.25, 0.25, 0.5]))
    np.testing.assert_allclose(curve, [0.5, 1.0])


def test_the_kept_class_indicator_is_one_byte_a_row_and_scores_as_the_float_one():
    """Issue 54: the scores keep a classifier's observed class indicator as 0/1 bytes, not 8-byte floats; the
    incidence curve read from it is the float indicator's."""
    from autopdp.scores.scoring import ScoringInputs
    from autopdp.scores.utilities.incidence import observed_values

    rng = np.random.default_rng(0)
    y = rng.choice(np.array([">50K", "<=50K"], dtype=object), 500)
    inputs = ScoringInputs(frame=None, y=y, is_classifier=True, prediction_std=np.ones(1), config=None,
                           comparisons={})
    kept = inputs.observed(">50K")
    assert kept.dtype == np.uint8 and kept.nbytes == y.size
    cells = rng.integers(-1, 4, y.size)
    np.testing.assert_array_equal(incidence_curve(cells, kept, (4,)),
                                  incidence_curve(cells, observed_values(y, ">50K", True), (4,)))


def test_an_audit_reads_the_same_from_weights_scaled_by_a_constant():
    """Sample weights are relative: scaled to sum to 1 they give the same scores.  A glass box (an additive
    logistic model) whose incidence scores were 0.04-0.12 read 0.48-0.56 with the weights summing to 1 before the
    incidence curve divided by the cells' weight totals."""
    import pandas as pd
    from sklearn.linear_model import LogisticRegression

    import autopdp

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=2000), "b": rng.normal(size=2000)})
    y = (rng.random(2000) < 1 / (1 + np.exp(-(1.5 * X.a - 0.5 * X.b)))).astype(int)
    model = LogisticRegression().fit(X, y)
    w = rng.exponential(size=2000)
    cfg = autopdp.AuditConfig(noise_draws=50)
    one, two = (autopdp.audit(model, X, y, sample_weight=v, config=cfg, progress=False) for v in (w, w / w.sum()))
    numbers = one.scores.select_dtypes("number").columns
    assert "incidence" in numbers and one.scores["incidence"].max() < 0.2
    np.testing.assert_allclose(two.scores[numbers].to_numpy(dtype=float), one.scores[numbers].to_numpy(dtype=float),
                               rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("chunk", [1, 5, 10**9])
def test_cell_tables_merged_over_partitions_equal_the_definitions(seed, chunk, monkeypatch):
    """Issue 54: a grid's cell table (row mass, observed sums) made on row partitions of any size, one-row and
    empty ones included, and merged equals the whole-array definitions (cell_weights, incidence_curve of fresh
    nearest indexes), with missing values, rows beyond the grid and a categorical axis."""
    import pandas as pd

    from autopdp.pd.data import as_frame
    from autopdp.pd.grids import FeatureSpec, nearest_grid_index
    from autopdp.scores.cells import CellTables, _tables_part, grid_key

    monkeypatch.setattr(rows, "CHUNK_ROWS", chunk)
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 200))
    x = rng.normal(size=n)
    x[rng.random(n) < 0.1] = np.nan
    X = pd.DataFrame({"x": x, "g": pd.Categorical(rng.choice(["p", "q", "r", None], n))})
    frame = as_frame(X)
    grids = [np.sort(rng.normal(size=int(rng.integers(1, 6)))), np.array(["q", "p"], dtype=object)]
    specs = [FeatureSpec(name="x", position=-1, kind="numeric", grid=grids[0], ordered=True, n_missing=0),
             FeatureSpec(name="g", position=-1, kind="categorical", grid=grids[1], ordered=False, n_missing=0)]
    jobs = [(grid_key(["x"], ["numeric"], grids[:1], [True]), [(0, specs[0])], (grids[0].size,)),
            (grid_key(["x", "g"], ["numeric", "categorical"], grids, [True, False]), [(0, specs[0]), (1, specs[1])],
             (grids[0].size, 2))]
    y = rng.random(n)
    w = None if seed % 2 else rng.exponential(size=n)
    cuts = np.unique(np.concatenate([[0, n], rng.integers(0, n + 1, int(rng.integers(0, 6)))]))
    merged = CellTables()
    for a, b in zip(cuts[:-1], cuts[1:]):
        part = _tables_part(frame.take_rows(np.arange(a, b)),
                            (jobs, {"w": None if w is None else w[a:b], ("y", "t"): y[a:b]}))
        for key, (mass, sums) in part.items():
            merged.masses[key] = merged.masses.get(key, 0) + mass
            merged.sums[key] = {k: merged.sums.get(key, {}).get(k, 0) + v for k, v in sums.items()}
    idx = [nearest_grid_index(frame.column(p), s) for p, s in zip((0, 1), specs)]
    for key, axes, shape in jobs:
        flat = idx[0] if len(axes) == 1 else np.where((idx[0] >= 0) & (idx[1] >= 0), idx[0] * 2 + idx[1], -1)
        total = n if w is None else w.sum()
        np.testing.assert_allclose(merged.masses[key] / total, cell_weights(flat, shape, w).ravel(), rtol=1e-12, atol=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            got = np.where(merged.masses[key] > 0, merged.sums[key]["t"] / merged.masses[key], np.nan)
        np.testing.assert_allclose(got, incidence_curve(flat, y, shape, w).ravel(), rtol=1e-12, atol=0)
