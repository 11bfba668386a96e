"""``autopdp warmup``: compile the tree, OOD and StratPD kernels now, into the folder they are kept in
(:mod:`autopdp.utils.kernel_cache`), so the first audit of a fresh container or virtual environment does not pay for it.

It audits two small synthetic models that between them take every path a tree model's audit takes: a
HistGradientBoostingClassifier with native categories and missing values (per-row kernel, margin link, ALE, the
OOD check), and a Pipeline ending in a random forest regressor (leaf counting, the per-row kernel through a
preprocessing step).  Run it when a CI image is built, with ``AUTOPDP_CACHE_DIR`` pointing into the image or a
cached folder.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pandas as pd

__all__ = ["warm_up"]


def _kernels():
    from numba.core.registry import CPUDispatcher

    from ..pd.tree import kernels as tree_kernels, moves as tree_moves, pair_kernels as tree_pair_kernels
    from ..trust import ood_kernel, strat_kernel

    modules = (tree_kernels, tree_pair_kernels, tree_moves, ood_kernel, strat_kernel)
    found = {id(k): k for m in modules for k in vars(m).values()
             if isinstance(k, CPUDispatcher)}  # each once: a kernel one module imports from another is listed there too
    return list(found.values())


def warm_up() -> dict:
    """Compile (or load) the kernels an audit of a tree model uses.

    Returns ``{"seconds", "kernels", "compiled", "loaded", "folder"}``: the time taken, the kernels with at
    least one compiled signature, how many of them were compiled here and how many loaded from the folder.
    """
    from sklearn.compose import make_column_transformer
    from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OrdinalEncoder

    from ..utils.kernel_cache import cache_dir
    from ..auditing.pipeline import audit
    from ..config import AuditConfig

    started = time.perf_counter()
    rng = np.random.default_rng(0)
    n = 400
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.uniform(size=n),
                      "c": pd.Categorical(rng.choice(["x", "y", "z"], size=n))})
    X.loc[::23, "a"] = np.nan
    eta = np.nan_to_num(X["a"].to_numpy()) * (X["c"] == "x").to_numpy() + X["b"].to_numpy()
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-eta))).astype(int)
    config = AuditConfig(grid_resolution=6, grid_resolution_2d=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hgb = HistGradientBoostingClassifier(max_iter=5, categorical_features="from_dtype", random_state=0).fit(X, y)
        audit(hgb, X, y, config=config, progress=False)
        Xf = X.assign(a=X["a"].fillna(0.0), c=X["c"].astype(str))
        forest = make_pipeline(make_column_transformer((OrdinalEncoder(), ["c"]), remainder="passthrough"),
                               RandomForestRegressor(n_estimators=5, random_state=0)).fit(Xf, eta)
        audit(forest, Xf, eta, config=config, progress=False)
    kernels = [k for k in _kernels() if k.signatures]
    compiled = sum(1 for k in kernels if sum(k.stats.cache_misses.values()))
    loaded = sum(1 for k in kernels if sum(k.stats.cache_hits.values()))
    return {"seconds": time.perf_counter() - started, "kernels": len(kernels), "compiled": compiled,
            "loaded": loaded, "folder": str(cache_dir())}
