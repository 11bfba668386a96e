"""StratPD's stratifying tree (:mod:`autopdp.trust.strat_kernel`, issue 32): known answers from scikit-learn's own
``DecisionTreeRegressor``, which grows the same CART tree (squared error, ``min_samples_leaf``) by sorting again
at every node.  On data where no two splits are equally good the two trees have the same leaves; with ties (a 0/1
target, few distinct values) each tree is a valid CART tree and ours is the same on every run."""

import numpy as np
import pytest
from sklearn.tree import DecisionTreeRegressor

from autopdp.trust.strat_kernel import sorted_columns, tree_leaves


def _same_partition(a, b) -> bool:
    pairs = set(zip(np.asarray(a).tolist(), np.asarray(b).tolist()))
    return len(pairs) == len(set(np.asarray(a).tolist())) == len(set(np.asarray(b).tolist()))


@pytest.mark.parametrize("seed", range(12))
def test_the_leaves_are_scikit_learns_on_data_without_ties(seed):
    rng = np.random.default_rng(seed)
    n, d, leaf = int(rng.integers(30, 2500)), int(rng.integers(1, 6)), int(rng.integers(1, 16))
    # float32-exact values: scikit-learn's tree compares float32 copies of X
    Z = rng.normal(size=(n, d)).astype(np.float32).astype(np.float64)
    y = 2 * Z[:, 0] + np.sin(3 * Z[:, -1]) + rng.standard_t(3, size=n)
    ours = tree_leaves(Z, sorted_columns(Z), y, leaf)
    theirs = DecisionTreeRegressor(min_samples_leaf=leaf, random_state=0).fit(Z, y).apply(Z)
    assert _same_partition(ours, theirs)
    assert np.bincount(ours).min() >= leaf
    assert ours.max() + 1 == np.unique(ours).size  # leaves numbered 0, 1, ...


def test_ties_give_a_valid_tree_the_same_on_every_run():
    rng = np.random.default_rng(3)
    n = 3000
    Z = np.column_stack([rng.integers(0, 5, n), rng.integers(0, 3, n), rng.integers(17, 90, n)]).astype(float)
    y = (rng.uniform(size=n) < 0.2 + 0.1 * Z[:, 0]).astype(float)
    order = sorted_columns(Z)
    first = tree_leaves(Z, order, y, 10)
    assert np.array_equal(first, tree_leaves(Z, order, y, 10))
    assert np.bincount(first).min() >= 10
    sklearn = DecisionTreeRegressor(min_samples_leaf=10, random_state=0).fit(Z, y).apply(Z)
    # both are grown to the same rule: their leaf counts are alike and every leaf respects the size
    assert abs(np.unique(first).size - np.unique(sklearn).size) <= 0.1 * np.unique(sklearn).size
    # every leaf is a box: rows with the same values of all columns share a leaf
    _, row_key = np.unique(Z, axis=0, return_inverse=True)
    assert all(np.unique(first[row_key.ravel() == k]).size == 1 for k in np.unique(row_key))


def test_nodes_that_cannot_or_need_not_split_are_leaves():
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(50, 2))
    assert np.unique(tree_leaves(Z, sorted_columns(Z), np.ones(50), 5)).size == 1  # pure
    assert np.unique(tree_leaves(Z, sorted_columns(Z), rng.normal(size=50), 26)).size == 1  # < 2 leaves' rows
    assert np.unique(tree_leaves(np.ones((50, 2)), sorted_columns(np.ones((50, 2))), rng.normal(size=50), 1)).size == 1
    assert tree_leaves(np.zeros((7, 0)), np.zeros((0, 7), dtype=np.int32), rng.normal(size=7), 1).tolist() == [0] * 7
    order = sorted_columns(Z)
    before = order.copy()
    tree_leaves(Z, order, rng.normal(size=50), 3)
    assert np.array_equal(order, before)  # the shared sort is not changed


def test_stratpd_refuses_a_leaf_size_that_is_not_a_row_count_and_a_target_with_gaps():
    import pandas as pd

    from autopdp import stratpd
    from autopdp.errors import InputError

    X = pd.DataFrame({"a": np.arange(40.0), "b": np.arange(40.0) % 3})
    for bad in (0, 0.1, 2.5, True):
        with pytest.raises(InputError, match="min_samples_leaf must be a whole number"):
            stratpd(X, np.arange(40.0), "a", min_samples_leaf=bad)
    with pytest.raises(InputError, match="2 missing or infinite"):
        stratpd(X, np.r_[np.nan, np.inf, np.arange(38.0)], "a")


def test_above_its_row_limit_stratpd_grows_on_a_seeded_sample_and_the_sentence_says_so(monkeypatch):
    """Above ``MAX_STRATPD_ROWS`` each curve is StratPD on the same seeded sample of rows (the limit shrunk here
    from 50,000 to 200); the finding's sentence names the sample."""
    import pandas as pd

    from autopdp.pd.data import as_frame
    from types import SimpleNamespace

    from autopdp.report.findings import finding_sentence
    from autopdp.trust import checks
    from autopdp.trust.modelfree import stratpd

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=600), "b": rng.normal(size=600)})
    y = X.a + X.b ** 2 + 0.1 * rng.normal(size=600)
    monkeypatch.setattr(checks, "MAX_STRATPD_ROWS", 200)
    r = type("R", (), {"ndim": 1, "features": ("a",), "targets": (None,), "target_index": lambda self, t: 0})()
    adapter = type("A", (), {"is_classifier": False})()
    one = checks._stratpd_curves(adapter, as_frame(X), y.to_numpy(), [r], {"a": "numeric", "b": "numeric"}, 3)
    two = checks._stratpd_curves(adapter, as_frame(X), y.to_numpy(), [r], {"a": "numeric", "b": "numeric"}, 3)
    rows = np.sort(np.random.default_rng([3, 55]).choice(600, 200, replace=False))
    direct = stratpd(X.iloc[rows].reset_index(drop=True), y.to_numpy()[rows], "a")
    got = one[("a", None)]
    assert np.array_equal(got.x, two[("a", None)].x) and np.array_equal(got.x, direct.x)
    assert np.allclose(got.pd, direct.pd)
    assert checks._stratpd_sample(600) == "a seeded sample of 200 of the 600 rows" and checks._stratpd_sample(200) == ""
    score = SimpleNamespace(available=True, value=0.25, details={"sample": checks._stratpd_sample(600)}, target=None)
    assert finding_sentence(("a",), "stratpd", score) == ("a: the centred PD departs from the data's own partial "
                                                          "dependence (StratPD, on a seeded sample of 200 of the "
                                                          "600 rows) by 0.25.")
