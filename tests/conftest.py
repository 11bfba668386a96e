import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

os.environ.setdefault("AUTOPDP_NO_PROGRESS", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

ROOT = Path(__file__).resolve().parents[1]

# Hypothesis: every run draws the same derandomized examples (CI's and a newcomer's `make test` alike),
# so the suite never fails on a draw nobody has seen; free random exploration is an opt-in
# (`make fuzz`, i.e. HYPOTHESIS_PROFILE=explore), whose failures are new cases to fix and pin.
from hypothesis import settings as _hypothesis_settings

_hypothesis_settings.register_profile("ci", derandomize=True, print_blob=True)
_hypothesis_settings.register_profile("explore", derandomize=False, print_blob=True)
_hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_report_header(config):
    import autopdp

    where = Path(autopdp.__file__).resolve().parent
    if os.environ.get("AUTOPDP_TEST_INSTALLED") == "1" and where.is_relative_to(ROOT):
        # `make test` promises the installed package; the source tree must not stand in for it
        raise pytest.UsageError(
            f"AUTOPDP_TEST_INSTALLED=1 but autopdp was imported from the source tree ({where}); "
            "run the tests with the venv's `pytest` entry point (make test), not `python -m pytest`."
        )
    return f"autopdp {autopdp.__version__} imported from {where}"


SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def _shared_csv(relpath: str, **kwargs) -> pd.DataFrame:
    """Read a dataset from ../shared/data, skipping the test when it is absent."""
    path = SHARED_DATA / relpath
    if not path.exists():
        pytest.skip(f"{path} is not present (the shared/ folder beside the repository holds the test datasets)")
    return pd.read_csv(path, **kwargs)


@pytest.fixture
def shared_csv():
    return _shared_csv


@pytest.fixture
def uniform_xyz():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.uniform(0, 1, size=(400, 3)), columns=["x1", "x2", "x3"])
    return X


@pytest.fixture(scope="session")
def german():
    from autopdp.datasets import load_german_credit

    return load_german_credit()


@pytest.fixture(scope="module")
def small_audit(german):
    """A glass-box logistic model of two German Credit features audited on 300 rows, 3 features, small grids: a
    report with every kind of figure, quick to draw (the report's figure and PDF-process tests)."""
    from autopdp import AuditConfig
    from autopdp import audit

    X, y = german

    def model(d):
        return 1 / (1 + np.exp(-(d["duration_months"].to_numpy() / 24 - d["age"].to_numpy() / 40)))

    return audit(model, X.iloc[:300], y.iloc[:300],
                 config=AuditConfig(features=("duration_months", "age", "credit_amount"), grid_resolution=6,
                                    grid_resolution_2d=4))
