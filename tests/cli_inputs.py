"""The small CLI inputs several test modules share: a 250-row logistic problem as data.csv,
its fitted model as model.skops, and a small audit config as small.toml."""

import numpy as np
import pandas as pd
import skops.io as sio
from sklearn.linear_model import LogisticRegression


def write_small_cli_inputs(d, small_config: str = "grid_resolution = 6\ngrid_resolution_2d = 4\ntop_k = 1\n"):
    """Write data.csv, model.skops and small.toml into folder ``d``; returns ``(X, y)``."""
    rng = np.random.default_rng(1)
    X = pd.DataFrame({"a": rng.normal(size=250), "b": rng.uniform(0, 5, 250), "c": rng.normal(size=250)})
    y = (X.a + 0.3 * X.b + rng.normal(size=250) > 1).astype(int)
    X.assign(target=y).to_csv(d / "data.csv", index=False)
    sio.dump(LogisticRegression().fit(X, y), d / "model.skops")
    (d / "small.toml").write_text(small_config)
    return X, y
