"""``PDOptions``: the settings of a partial-dependence call beyond scikit-learn's parameters.

:func:`autopdp.partial_dependence` takes scikit-learn's parameters by scikit-learn's names (``estimator``,
``response_method``, ``sample_weight``, ``categorical_features``, ``percentiles``, ``grid_resolution``,
``custom_values``, ``method``, ``kind``) and the rest in one :class:`PDOptions`.  The keywords these replaced
(``model``, ``response`` and every option passed on its own, e.g. ``subsample=100``) still work for one release,
with a ``DeprecationWarning`` naming what replaces them (:func:`accepts_old_keywords`).
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from dataclasses import dataclass
from typing import Any

__all__ = ["PDOptions", "RENAMED", "accepts_old_keywords", "split_keywords", "keywords"]


@dataclass(frozen=True)
class PDOptions:
    """The settings of :func:`autopdp.partial_dependence` and :func:`autopdp.compute_all` beyond scikit-learn's.

    target : optional
        Class label(s) or output index/indices.  Default: the positive class of a binary classifier, every class
        of a multiclass one, every output.
    centered : bool, default False
        Centre ICE curves (and the PD) at the first grid point.
    subsample : int or float, optional
        Keep only this many (or this share of) rows' ICE curves; PD, std and stderr still use every row.
    random_state : int, optional
        Seed for ``subsample``.
    n_jobs : int, optional
        Feature sets computed in parallel with joblib.
    grid_method : {"quantile", "uniform"}
        How numeric grids are placed; see :mod:`autopdp.pd.grids`.
    integer_as_categorical : int, default 0
        Integer columns with at most this many unique values are categorical.
    max_batch_mb : float, default 256
        Memory cap for one batch of augmented rows.
    progress : bool, optional
        Show a progress bar (default: only on an interactive terminal, not in CI).
    max_levels : int, optional
        Keep only the most frequent levels of a categorical feature with more (noted in ``PDResult.notes``).
    std_rows : int, default 128
        Only where the per-row tree kernel does not apply but leaf counting does (grids over 64 points): ICE
        spread from brute force on the ICE rows (``subsample``) or on this many sampled rows; 0 skips it.
    scheduler : str or distributed.Client, optional
        Run the feature sets on a Dask cluster (``"tcp://host:8786"``).
    std : bool, optional
        Compute the ICE spread (``std``, ``stderr``).  Default: yes unless ``kind="average"``.
    grid_resolution_2d : int, optional
        :func:`autopdp.compute_all` only: the 2D PDs' grid (default: ``grid_resolution``).
    ice_2d : bool, default False
        :func:`autopdp.compute_all` only: keep the 2D PDs' ICE surfaces.
    """

    target: Any = None
    centered: bool = False
    subsample: Any = None
    random_state: Any = None
    n_jobs: Any = None
    grid_method: str = "quantile"
    integer_as_categorical: int = 0
    max_batch_mb: float = 256
    progress: Any = None
    max_levels: Any = None
    std_rows: int = 128
    scheduler: Any = None
    std: Any = None
    grid_resolution_2d: Any = None
    ice_2d: bool = False


#: the keywords renamed to scikit-learn's names: old -> new
RENAMED = {"model": "estimator", "response": "response_method"}
_OPTION_NAMES = frozenset(f.name for f in dataclasses.fields(PDOptions))


def split_keywords(kwargs: dict, defaults: PDOptions) -> tuple[dict, list, list]:
    """``kwargs`` in the current names: (keywords, the renamed ones found, the options found on their own).

    The options passed on their own go into ``kwargs["options"]`` (else ``defaults``)."""
    out = dict(kwargs)
    renamed = [old for old in RENAMED if old in out]
    for old in renamed:
        if RENAMED[old] in out:
            raise TypeError(f"got both {old!r} and {RENAMED[old]!r}; pass only {RENAMED[old]!r}")
        out[RENAMED[old]] = out.pop(old)
    moved = {k: out.pop(k) for k in list(out) if k in _OPTION_NAMES}
    if moved:
        base = out.get("options") or defaults
        if not isinstance(base, PDOptions):
            raise TypeError(f"options must be an autopdp.PDOptions, got {type(base).__name__}")
        out["options"] = dataclasses.replace(base, **moved)
    return out, renamed, sorted(moved)


def accepts_old_keywords(defaults: PDOptions):
    """Let a function that takes ``options`` (default ``defaults``) also take the keywords :class:`PDOptions` and
    :data:`RENAMED` replaced, with a ``DeprecationWarning`` (one release)."""
    def wrap(function):
        @functools.wraps(function)
        def call(*args, **kwargs):
            kwargs, renamed, moved = split_keywords(kwargs, defaults)
            said = [f"{old}= is now {RENAMED[old]}=" for old in renamed]
            if moved:
                said.append(f"pass {', '.join(moved)} as options=autopdp.PDOptions("
                            + ", ".join(f"{m}=..." for m in moved) + ")")
            if said:
                warnings.warn(f"{function.__name__}(): " + "; ".join(said) + ". The old keywords will be removed in "
                              "the next release.", DeprecationWarning, stacklevel=2)
            return function(*args, **kwargs)
        return call
    return wrap


def keywords(**settings) -> dict:
    """``settings`` (any of :func:`autopdp.partial_dependence`'s parameters, options among them by their own names,
    ``response`` for ``response_method``) as the keywords it takes: how autopdp's own stages call it."""
    return split_keywords(settings, PDOptions())[0]
