"""Every sentence true on its own, round three (issue 52): each case with a known answer."""

import html as html_lib
import re
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from sklearn.ensemble import RandomForestRegressor

from autopdp import AuditConfig, audit
from autopdp.cli.commands import build_parser
from autopdp.report.findings import finding_sentence
from autopdp.utils.formatting import fmt
from autopdp.scores.utilities.base import UtilityScore, gap_score


def _text(markup: str) -> str:
    markup = re.sub(r"<(script|style|svg)\b.*?</\1>", " ", markup, flags=re.S | re.I)
    return re.sub(r"\s+", " ", html_lib.unescape(re.sub(r"<[^>]+>", " ", markup)))


def _all_help() -> str:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return parser.format_help() + "".join(p.format_help() for p in sub.choices.values())


def test_help_names_no_internal_issue():
    text = _all_help()
    assert "--refits" in text and "--train" in text  # the subcommands' help was read
    assert not re.search(r"\bissue \d+", text), re.findall(r".{40}\bissue \d+.{10}", text)


@pytest.fixture(scope="module")
def tree_audit():
    rng = np.random.default_rng(1)
    X = pd.DataFrame({"a": rng.normal(size=300), "b": rng.uniform(0, 5, 300)})
    y = X.a + 0.5 * X.b + rng.normal(scale=0.3, size=300)
    model = RandomForestRegressor(n_estimators=10, max_depth=4, random_state=0).fit(X, y)
    return model, X


@pytest.mark.parametrize("method, says", [
    ("auto", None),
    ("brute", "(The exact tree path was not used: method='brute'.)"),
])
def test_the_methodology_says_the_tree_path_was_not_used_only_when_it_was_not(tree_audit, method, says):
    """Before: a tree model's methodology read "(The exact tree path does not apply to this model: used.)"."""
    model, X = tree_audit
    a = audit(model, X, config=AuditConfig(pairs=False, grid_resolution=6, noise_draws=50, method=method))
    text = _text(a.to_html())
    assert "does not apply to this model: used" not in text
    if says is None:
        assert a.metadata["tree_path"] == "used" and "tree path was not used" not in text
        assert "computed exactly by the tree path" in text
    else:
        assert says in text


def _score(utility, loss, **details):
    f = np.array([0.0, 1.0, 2.0])
    g = np.array([0.5, 1.0, 1.0])
    w = np.array([1.0, 2.0, 1.0])
    return gap_score(utility, f, g, w, loss, None, **details)


@pytest.mark.parametrize("loss, reads, value", [
    ("l2", "in root mean square", np.sqrt((0.25 * 1 + 0 + 1 * 1) / 4)),
    ("l1", "on average", (0.5 * 1 + 0 + 1 * 1) / 4),
])
def test_a_gap_says_on_average_only_for_a_mean(loss, reads, value):
    """The incidence and similarity gaps are a weighted root mean square (loss l2, the default) or a weighted mean
    of absolute differences (l1): the sentence names which, from the score's own record."""
    inc = _score("incidence", loss, what="mean target")
    assert inc.details["loss"] == loss and inc.value == pytest.approx(value)
    text = finding_sentence(("x",), "incidence", inc)
    assert f"by {fmt(value)} {reads}" in text
    assert ("on average" in text) == (loss == "l1")
    sim = _score("similarity:other", loss, model="other")
    text = finding_sentence(("x",), "similarity:other", sim)
    assert reads in text and ("on average" in text) == (loss == "l1")
    dep = SimpleNamespace(kind="dependence", value=0.2)
    text = finding_sentence(("x",), "incidence", inc, evidence=dep)
    assert f"differs by 0.2 {reads}" in text


def test_a_probability_band_is_clipped_to_zero_and_one():
    from autopdp.report.figures import _band

    f = np.array([0.02, 0.5, 0.97])
    spread = np.array([0.1, 0.1, 0.1])
    low, high = _band(SimpleNamespace(response="predict_proba"), f, spread)
    np.testing.assert_allclose(low, [0.0, 0.4, 0.87])
    np.testing.assert_allclose(high, [0.12, 0.6, 1.0])
    low, high = _band(SimpleNamespace(response="predict"), f, spread)  # a regressor's band is not a probability
    np.testing.assert_allclose(low, f - 0.1)
    np.testing.assert_allclose(high, f + 0.1)


def test_an_older_record_without_its_loss_reads_as_the_default_root_mean_square():
    old = UtilityScore(utility="similarity:b", value=0.1, target=None, details={"model": "b"})
    assert "in root mean square" in finding_sentence(("x",), "similarity:b", old)
