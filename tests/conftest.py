import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

os.environ.setdefault("AUTOPDP_NO_PROGRESS", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

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
