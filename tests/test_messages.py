"""Messages a validator meets: misspelled columns, empty or odd files, too few rows, CSV options."""

import numpy as np
import pandas as pd
import pytest
import skops.io as sio
from sklearn.linear_model import LogisticRegression

from autopdp import AuditConfig
from autopdp import audit
from autopdp.auditing.validation import COMFORTABLE_ROWS, MIN_ROWS
from autopdp.cli import main
from autopdp.io.loading import load_data, split_target


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("messages")
    rng = np.random.default_rng(2)
    X = pd.DataFrame({"age": rng.integers(18, 80, 60).astype(float), "hours": rng.uniform(1, 60, 60),
                      "work": rng.choice(["Private", "State-gov"], 60)})
    y = (X.age / 80 + rng.normal(scale=0.3, size=60) > 0.6).astype(int)
    df = X.assign(income=y)
    df.to_csv(d / "data.csv", index=False)
    sio.dump(LogisticRegression().fit(X[["age", "hours"]], y), d / "model.skops")
    return d


def cli_error(capsys, *argv):
    code = main([str(a) for a in argv])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_misspelled_target_suggests_the_column_and_shortens_the_list(tmp_path):
    wide = pd.DataFrame({f"col_{i:02d}": [1, 2] for i in range(30)}).assign(income=[0, 1])
    with pytest.raises(ValueError) as info:
        split_target(wide, "incme")
    msg = str(info.value)
    assert msg.startswith("target column 'incme' is not in the data. Did you mean 'income'? Columns: 'col_00', ")
    assert msg.endswith(", ... (19 more).")
    with pytest.raises(ValueError, match="Did you mean 'income'"):
        split_target(wide, "INCOME")
    with pytest.raises(ValueError) as info:
        split_target(wide, "zzzzzz")
    assert "Did you mean" not in str(info.value)


@pytest.mark.parametrize("content, message", [
    (b"", "data file '{p}' is empty (0 bytes)."),
    (b"a,b,income\n", "data file '{p}' has a header but no rows."),
    (b"a;b;income\n1;2;0\n3;4;1\n", "data file '{p}' reads as a single column 'a;b;income': it looks separated by ';', "
                                     "not commas; pass --sep ';'."),
])
def test_every_data_file_error_names_the_file(tmp_path, content, message):
    p = tmp_path / "d.csv"
    p.write_bytes(content)
    with pytest.raises(ValueError) as info:
        load_data(p)
    assert str(info.value) == message.format(p=p)


def test_data_path_that_is_a_folder_names_it(tmp_path):
    """A folder is read as the Parquet parts of one table (tests/test_parquet_parts.py): an empty one, or one
    holding a CSV, is refused naming it and what to give."""
    (tmp_path / "x.csv").mkdir()
    with pytest.raises(ValueError, match=r"data folder '.*x\.csv' names no files; give a folder of \.parquet files"):
        load_data(tmp_path / "x.csv")
    (tmp_path / "x.csv" / "part.csv").write_text("a\n1\n")
    with pytest.raises(ValueError, match=r"holds 'part\.csv', which is not a \.parquet file"):
        load_data(tmp_path / "x.csv")


def test_sep_and_na_values(tmp_path):
    p = tmp_path / "adult_like.csv"
    p.write_text("age;work;income\n39;State-gov;<=50K\n50;?;>50K\n38;Private;?\n")
    df = load_data(p, sep=";", na_values="?")
    assert list(df.columns) == ["age", "work", "income"]
    assert df["work"].isna().tolist() == [False, True, False] and df["income"].isna().sum() == 1
    kept = load_data(p, sep=";")
    assert kept["work"].tolist() == ["State-gov", "?", "Private"]  # without --na-values '?' is a level
    t = tmp_path / "tabs.csv"
    t.write_text("a\tb\n1\t2\n")
    assert list(load_data(t, sep="tab").columns) == ["a", "b"]
    with pytest.raises(ValueError, match="--sep, --na-values and --decimal apply to CSV files"):
        pd.DataFrame({"a": [1]}).to_parquet(tmp_path / "x.parquet")
        load_data(tmp_path / "x.parquet", na_values="?")


@pytest.mark.parametrize("n", [1, 2, MIN_ROWS - 1])
def test_too_few_rows_is_an_error_before_the_target_checks(files, tmp_path, capsys, n):
    small = tmp_path / "small.csv"
    pd.read_csv(files / "data.csv").head(n).assign(income=1).to_csv(small, index=False)  # constant target too
    line = cli_error(capsys, "report", "--model", files / "model.skops", "--data", small, "--target", "income",
                     "--out", tmp_path / "out")
    rows = "row" if n == 1 else "rows"
    assert line == (f"autopdp: error: too few rows: the data has {n} {rows}; an audit needs at least {MIN_ROWS} "
                    f"(and {COMFORTABLE_ROWS}+ for scores that stand clear of sampling noise).")


def test_small_sample_is_a_warning_in_the_report(files):
    df = pd.read_csv(files / "data.csv")
    a = audit(lambda d: d["age"].to_numpy() / 80, df[["age", "hours"]], df["income"],
              config=AuditConfig(pairs=False, grid_resolution=5))
    assert a.notes[0].startswith(f"Small sample: the data has only 60 rows (fewer than {COMFORTABLE_ROWS}).")
    big = pd.concat([df] * 4, ignore_index=True)
    b = audit(lambda d: d["age"].to_numpy() / 80, big[["age", "hours"]], big["income"],
              config=AuditConfig(pairs=False, grid_resolution=5))
    assert not any(n.startswith("Small sample") for n in b.notes)
    assert "Small sample: the data has only 60 rows" in a.to_html()


@pytest.mark.parametrize("flag, what", [("--config", "config"), ("--policy", "policy")])
def test_malformed_toml_names_the_file_and_the_line(files, tmp_path, capsys, flag, what):
    bad = tmp_path / "bad.toml"
    bad.write_text('grid_resolution = 8\ntitle = "unterminated\n')
    cmd = "report" if flag == "--config" else "gate"
    line = cli_error(capsys, cmd, "--model", files / "model.skops", "--data", files / "data.csv", "--target", "income",
                     "--out", tmp_path / "out", flag, bad)
    assert line.startswith(f"autopdp: error: {what} file '{bad}' is not valid TOML: ")
    assert "line 2" in line


# ------------------------------------------------------------------ issue 30: decimal commas, advice per interface
def _decimal_comma_file(d):
    """data.csv separated by ';' with 'hours' written with decimal commas; a model of age and hours."""
    rng = np.random.default_rng(5)
    X = pd.DataFrame({"age": rng.integers(18, 80, 80), "hours": rng.uniform(1, 60, 80).round(1)})
    y = (X.age / 80 + rng.normal(scale=0.3, size=80) > 0.6).astype(int)
    X.assign(income=y).to_csv(d / "comma.csv", sep=";", decimal=",", index=False)
    sio.dump(LogisticRegression().fit(X, y), d / "comma.skops")
    return X


def test_decimal_comma_csv_has_a_flag_and_a_hint(tmp_path, capsys):
    X = _decimal_comma_file(tmp_path)
    df = load_data(tmp_path / "comma.csv", sep=";", decimal=",")
    assert np.allclose(df["hours"].to_numpy(), X["hours"].to_numpy())
    run = ["report", "--model", tmp_path / "comma.skops", "--data", tmp_path / "comma.csv", "--target", "income",
           "--sep", ";", "--out", tmp_path / "out", "--formats", "json"]
    line = cli_error(capsys, *run)
    assert "'hours'" in line and "decimal comma" in line and "--decimal ','" in line, line
    assert "pandas" not in line and "could not convert" not in line
    # the flag reads them as numbers: the run goes through
    assert main([str(a) for a in run] + ["--decimal", ","]) == 0, capsys.readouterr().err
    assert cli_error(capsys, *run[:-4], "--decimal", ";", "--out", tmp_path / "o2").startswith(
        "autopdp: error: --decimal ';' is also the field separator")


def test_python_users_get_arguments_not_flags(tmp_path):
    X = _decimal_comma_file(tmp_path)
    df = pd.read_csv(tmp_path / "comma.csv", sep=";")
    with pytest.raises(ValueError) as info:
        audit(lambda d: np.zeros(len(d)), df[["age", "hours"]])
    msg = str(info.value)
    assert "decimal=','" in msg and "pandas.read_csv" in msg and "--decimal" not in msg


def test_mixed_type_column_advice_follows_the_interface(tmp_path, capsys):
    rng = np.random.default_rng(6)
    X = pd.DataFrame({"age": rng.integers(18, 80, 60).astype(float), "hours": rng.uniform(1, 60, 60)})
    y = (X.age / 80 + rng.normal(scale=0.3, size=60) > 0.6).astype(int)
    sio.dump(LogisticRegression().fit(X, y), tmp_path / "m.skops")
    bad = X.astype({"hours": object})
    bad.loc[3, "hours"] = "n/k"
    bad.assign(income=y).to_csv(tmp_path / "mixed.csv", index=False)
    line = cli_error(capsys, "report", "--model", tmp_path / "m.skops", "--data", tmp_path / "mixed.csv",
                     "--target", "income", "--out", tmp_path / "out", "--formats", "json")
    assert "--na-values 'n/k'" in line and "--config" in line and "pandas.to_numeric" not in line, line
    with pytest.raises(ValueError) as info:
        audit(lambda d: np.zeros(len(d)), pd.read_csv(tmp_path / "mixed.csv").drop(columns="income"))
    assert "pandas.to_numeric" in str(info.value) and "--na-values" not in str(info.value)
