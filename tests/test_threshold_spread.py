"""The materiality threshold's own sampling error (issue 53): each row's share of the prediction sd's relative
error, with the variance of that error taken at its one-sided 95% upper confidence limit
(:func:`autopdp.scores.scoring.threshold_spread`)."""

import numpy as np

from autopdp.scores.scoring import THRESHOLD_VARIANCE_Z, threshold_spread


def _shares_by_hand(p):
    d2 = (p - p.mean()) ** 2
    return (d2 - d2.mean()) / (2.0 * p.size * d2.mean())


def test_shares_are_the_linearised_sd_error_scaled_to_the_upper_limit_of_their_variance():
    rng = np.random.default_rng(0)
    p = rng.standard_t(5, 400)
    r0 = _shares_by_hand(p)
    q = r0 ** 2
    upper = q.sum() + THRESHOLD_VARIANCE_Z * np.sqrt(((q - q.mean()) ** 2).sum())
    r = threshold_spread(p)
    assert r.shape == p.shape
    np.testing.assert_allclose(np.sum(r ** 2), upper, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(r, r0 * np.sqrt(upper / q.sum()), rtol=1e-9, atol=1e-15)
    assert abs(r.sum()) < 1e-12  # the shares still add to the sd's linearised error about itself: 0
    # one column per target, each scaled on its own
    two = threshold_spread(np.column_stack([p, 3.0 * p + 1.0]))
    np.testing.assert_allclose(two[:, 0], r, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(two[:, 1], r, rtol=0, atol=1e-15)  # the sd's relative error does not see scale or shift


def test_the_upper_limit_costs_little_on_many_normal_rows_and_nothing_is_returned_for_a_constant():
    rng = np.random.default_rng(1)
    p = rng.standard_normal(200_000)
    ratio = np.sum(threshold_spread(p) ** 2) / np.sum(_shares_by_hand(p) ** 2)
    assert 1.0 < ratio < 1.03  # 1 + 1.645 x the spread of the squared shares, ~ 3.7 / sqrt(n) relative
    assert threshold_spread(np.ones(50)) is None
    assert threshold_spread(np.array([1.0, np.nan, 2.0])) is None


def test_a_one_sided_test_of_a_heavy_tailed_sd_holds_its_level_closer_with_the_upper_limit():
    """Of 2,000 samples of 300 t(4) predictions, how often the upper bound ``sd_hat (1 + bias + 1.645 se)`` falls
    below the population's sd: with the point estimate of the variance (``(kurtosis - 1) / 4n``) far above 5%,
    with its upper limit closer to it.  (The audit's whole tests carry the threshold's error beside the PD's, see
    benchmarks/bench_interaction_level.py.)"""
    rng = np.random.default_rng(2)
    population = np.sqrt(4.0 / 2.0)  # t(4): variance nu / (nu - 2)
    misses = {"point": 0, "upper": 0}
    for _ in range(2000):
        p = rng.standard_t(4, 300)
        sd = p.std()
        for key, r in (("point", _shares_by_hand(p)), ("upper", threshold_spread(p))):
            var = np.sum(r ** 2)
            misses[key] += sd * (1.0 + 0.5 / p.size + 0.5 * var + 1.645 * np.sqrt(var)) < population
    assert misses["point"] > 2 * 100  # > 10%: the kurtosis of a t(4) sample is low exactly when its sd is
    assert misses["upper"] < misses["point"] * 0.8
