"""Input edge cases a new user meets (issue 23): duplicate columns, empty and missing columns, models
that cannot take NaN, warnings off a terminal, policy typos, CJK names and duck-typed models."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression

import autopdp
from autopdp import InputError
from autopdp.cli import main

N = 300


def _frame(seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"alcohol": rng.normal(size=N), "acid": rng.normal(size=N), "sugar": rng.normal(size=N)})
    y = (X.alcohol + X.acid + rng.normal(size=N) > 0).astype(int)
    return X, y


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("edges")
    X, y = _frame()
    sio.dump(LogisticRegression().fit(X, y), d / "lr.skops")
    X.assign(y=y).to_csv(d / "data.csv", index=False)
    return d


def run(capsys, *args):
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


# ---------------------------------------------------------------- duplicate column names
def test_duplicate_csv_columns_are_bad_input_naming_them(files, tmp_path, capsys):
    text = (files / "data.csv").read_text().replace("alcohol,acid,sugar", "alcohol,alcohol,sugar", 1)
    (tmp_path / "dup.csv").write_text(text)
    code, _, err = run(capsys, "report", "--model", files / "lr.skops", "--data", tmp_path / "dup.csv", "--target", "y",
                       "--out", tmp_path / "out", "--formats", "json")
    assert code == 2, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "duplicate column name" in err and "'alcohol'" in err and "alcohol.1" not in err
    assert "rename" in err


def test_duplicate_dataframe_columns_are_an_input_error_naming_them():
    X, y = _frame()
    model = LogisticRegression().fit(X.to_numpy(), y)
    dup = X.set_axis(["alcohol", "alcohol", "sugar"], axis=1)
    with pytest.raises(InputError, match=r"duplicate column names \['alcohol'\]: rename them"):
        autopdp.audit(model, dup, y)
    # also when the config declares an order of the duplicated column (checked before the frame is)
    with pytest.raises(InputError, match=r"duplicate column names \['alcohol'\]: rename them"):
        autopdp.audit(model, dup, y, config={"categories": {"alcohol": [0.0, 1.0]}})


# ---------------------------------------------------------------- empty and missing columns
def test_all_missing_column_is_described_as_such_with_a_model_that_takes_nan():
    X, y = _frame()
    rng = np.random.default_rng(1)
    model = HistGradientBoostingClassifier(max_iter=15).fit(X.assign(sugar=np.where(rng.uniform(size=N) < .5, np.nan,
                                                                                      X.sugar)), y)
    result = autopdp.audit(model, X.assign(sugar=np.nan), y, config={"pairs": "none"})
    notes = [n for n in result.notes if "'sugar'" in n]
    assert notes and "all values missing" in notes[0], result.notes
    assert not any("constant" in n for n in notes)


def test_all_missing_column_a_model_cannot_take_is_exit_2_naming_it(files, tmp_path, capsys):
    X, y = _frame()
    X.assign(sugar=np.nan, y=y).to_csv(tmp_path / "empty.csv", index=False)
    code, _, err = run(capsys, "report", "--model", files / "lr.skops", "--data", tmp_path / "empty.csv", "--target",
                       "y", "--out", tmp_path / "out", "--formats", "json")
    assert code == 2, err
    assert err.count("\n") == 1
    assert "'sugar'" in err and "all values missing" in err
    assert "Input X contains NaN" not in err and "https://" not in err


def test_missing_values_a_model_cannot_take_name_the_columns(files, tmp_path, capsys):
    X, y = _frame()
    rng = np.random.default_rng(2)
    X.loc[rng.uniform(size=N) < 0.1, "acid"] = np.nan
    X.loc[N - 1, "sugar"] = np.nan  # one missing value in the last row only
    X.assign(y=y).to_csv(tmp_path / "nan.csv", index=False)
    code, _, err = run(capsys, "report", "--model", files / "lr.skops", "--data", tmp_path / "nan.csv", "--target",
                       "y", "--out", tmp_path / "out", "--formats", "json")
    assert code == 2, err
    assert err.count("\n") == 1
    assert "'acid'" in err and "'sugar'" in err and "'alcohol'" not in err
    assert "LogisticRegression" in err and "impute" in err.lower() and "Pipeline" in err
    assert "Input X contains NaN" not in err and "https://" not in err


# ---------------------------------------------------------------- warnings off a terminal
def test_a_run_off_a_terminal_prints_no_warnings(tmp_path):
    X, y = _frame()
    rng = np.random.default_rng(3)
    X = X.rename(columns={"alcohol": "酒精度"})
    X["acid"] = np.where(rng.uniform(size=N) < 0.97, np.nan, X["acid"])  # a mostly empty column
    X["sugar"] = np.nan  # an empty one
    model = HistGradientBoostingClassifier(max_iter=10).fit(X.assign(sugar=np.where(rng.uniform(size=N) < .5, np.nan,
                                                                                      1.0)), y)
    import joblib

    joblib.dump(model, tmp_path / "hgb.joblib")
    X.assign(y=y).to_csv(tmp_path / "data.csv", index=False)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    proc = subprocess.run(
        [sys.executable, "-m", "autopdp", "report", "--model", str(tmp_path / "hgb.joblib"), "--allow-pickle",
         str(tmp_path / "hgb.joblib"),
         "--data", str(tmp_path / "data.csv"), "--target", "y", "--out", str(tmp_path / "out"),
         "--formats", "html,json", "--pairs", "none"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    # the one line on stderr is the trust decision the user made, no library warning
    assert proc.stderr == "autopdp: model file 'hgb.joblib' is a pickle, loaded because --allow-pickle named it (it can " \
                          "run code).\n", proc.stderr


class WarnsWhenLoaded(LogisticRegression):
    """A model whose unpickling warns, like scikit-learn's InconsistentVersionWarning."""

    def __setstate__(self, state):
        import warnings

        warnings.warn("Trying to unpickle estimator from version 0.1 when using version 9.9.", UserWarning)
        super().__setstate__(state)


def test_a_warning_while_loading_the_model_is_a_note_not_a_stderr_line(tmp_path, capsys):
    import joblib

    X, y = _frame()
    joblib.dump(WarnsWhenLoaded().fit(X, y), tmp_path / "model.joblib")
    X.assign(y=y).to_csv(tmp_path / "data.csv", index=False)
    code, _, err = run(capsys, "report", "--model", tmp_path / "model.joblib", "--allow-pickle",
                       tmp_path / "model.joblib", "--data", tmp_path / "data.csv", "--target", "y", "--out",
                       tmp_path / "out", "--formats", "json", "--pairs", "none")
    assert code == 0, err
    assert err == "autopdp: model file 'model.joblib' is a pickle, loaded because --allow-pickle named it (it can run " \
                  "code).\n"
    notes = json.loads((tmp_path / "out" / "results.json").read_text())["notes"]
    assert "Loading the inputs warned: UserWarning: Trying to unpickle estimator from version 0.1 when using " \
           "version 9.9." in notes


# ---------------------------------------------------------------- policy typos
def test_policy_feature_typo_suggests_the_feature(files, tmp_path, capsys):
    (tmp_path / "policy.toml").write_text('[features.alcohl]\nmonotonic = "increasing"\n')
    code, _, err = run(capsys, "gate", "--policy", tmp_path / "policy.toml", "--model", files / "lr.skops", "--data",
                       files / "data.csv", "--target", "y", "--out", tmp_path / "out", "--formats", "json")
    assert code == 2, err
    assert "'features.alcohl'" in err and "did you mean 'alcohol'?" in err.lower()
    (tmp_path / "policy2.toml").write_text('[importance]\nrequired = ["sugr"]\n')
    code, _, err = run(capsys, "gate", "--policy", tmp_path / "policy2.toml", "--model", files / "lr.skops", "--data",
                       files / "data.csv", "--target", "y", "--out", tmp_path / "out", "--formats", "json")
    assert code == 2, err
    assert "did you mean 'sugar'?" in err.lower()


# ---------------------------------------------------------------- CJK names in the PDF
def _fonts_having(chars: str) -> set:
    """The families of the installed fonts (what WeasyPrint can use; not matplotlib's placeholder font)
    that draw every one of ``chars``."""
    from matplotlib import font_manager, ft2font

    families = set()
    for path in font_manager.findSystemFonts():
        if "lastresort" in path.lower():
            continue
        try:
            font = ft2font.FT2Font(path)
        except (OSError, RuntimeError):
            continue
        if all(ord(c) in font.get_charmap() for c in chars):
            families.add(font.family_name)
    return families


def test_cjk_feature_name_is_in_the_pdf_or_the_report_says_why_not(tmp_path):
    pypdf = pytest.importorskip("pypdf")

    X, y = _frame()
    X = X.rename(columns={"alcohol": "酒精度"})
    model = LogisticRegression().fit(X, y)
    result = autopdp.audit(model, X, y, config={"pairs": "none"})
    html = result.to_html()
    pdf = result.to_pdf(tmp_path / "report.pdf")
    text = "".join(page.extract_text() for page in pypdf.PdfReader(tmp_path / "report.pdf").pages).replace("\x00", "")
    note = "cannot be drawn"
    fonts = _fonts_having("酒精度")
    if not fonts:  # no font on this machine has these characters: the report says so
        assert note in html and "酒精度" in html
    else:
        assert "酒精度" in text
        assert note not in html
        # the figures measure and draw the name with that font (matplotlib's fallback), not DejaVu's empty box
        svg_fonts = {part.strip(" '\"") for svg in re.findall(r"<svg\b.*?</svg>", html, flags=re.S)
                     for style in re.findall(r"font-family: ?([^;\"]+)", svg) for part in style.split(",")}
        assert fonts & svg_fonts, (fonts, svg_fonts)
    assert pdf


# ---------------------------------------------------------------- duck-typed models
class DuckClassifier:
    """Not a scikit-learn estimator: fit, predict, predict_proba and classes_."""

    def fit(self, X, y):
        self.classes_ = np.array([0, 1])
        return self

    def predict_proba(self, X):
        p = 1 / (1 + np.exp(-2 * np.asarray(X, dtype=float)[:, 0]))
        return np.c_[1 - p, p]

    def predict(self, X):
        return (self.predict_proba(X)[:, 1] > 0.5).astype(int)


class DuckRegressor:
    def fit(self, X, y):
        return self

    def predict(self, X):
        return 3.0 * np.asarray(X, dtype=float)[:, 1]


def test_duck_typed_models_work_like_callables():
    X, y = _frame()
    clf = DuckClassifier().fit(X, y)
    (pd_a,) = autopdp.partial_dependence(clf, X, ["alcohol"])
    assert pd_a.targets == (1,)
    grid = np.asarray(pd_a.grid[0], dtype=float)
    np.testing.assert_allclose(pd_a.average[0], 1 / (1 + np.exp(-2 * grid)))
    result = autopdp.audit(clf, X, y, config={"pairs": "none"})
    assert result.metadata["is_classifier"] is True and result.metadata["targets"] == [1]
    reg = DuckRegressor()
    (pd_b,) = autopdp.partial_dependence(reg, X, ["acid"])
    np.testing.assert_allclose(pd_b.average[0], 3.0 * np.asarray(pd_b.grid[0], dtype=float))
    assert autopdp.audit(reg, X, y.astype(float), config={"pairs": "none"}).results_1d
