"""The result of one partial dependence computation."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from ..errors import InputError
from ..utils.jsonable import json_array, json_scalar

__all__ = ["PDResult"]

SCHEMA = "autopdp.PDResult/1"


def _readonly(a):
    if a is None:
        return None
    a = np.asarray(a)
    a.setflags(write=False)
    return a


#: Significant digits of ``stderr_factor``: 5e-14 relative, far inside the 1e-12 the check allows.
FACTOR_DIGITS = 13


def _stderr_factor(std, stderr) -> float | None:
    """The one number ``f`` (:data:`FACTOR_DIGITS` significant digits) with ``stderr == std * f`` in every cell
    (to 1e-12 relative), or None.

    The PD's standard error is ``std * sqrt(sum w**2) / sum w`` over the same rows in every cell, so
    one factor per PD; None when a cell breaks it (its NaN pattern differs, or another factor).
    """
    std = np.asarray(std, dtype=float)
    se = np.asarray(stderr, dtype=float)
    if std.shape != se.shape:
        return None
    ok = np.isfinite(std) & np.isfinite(se) & (std > 0)
    f = float(np.median(se[ok] / std[ok])) if ok.any() else 1.0
    if not np.isfinite(f):
        return None
    f = float(f"{f:.{FACTOR_DIGITS}g}")  # the same factor again from a file's std x factor (written twice, same text)
    with np.errstate(invalid="ignore", over="ignore"):
        rebuilt = std * f
    same_nan = np.array_equal(np.isnan(rebuilt), np.isnan(se))
    fin = np.isfinite(se)
    if not same_nan or not np.array_equal(np.isfinite(rebuilt), fin):
        return None
    if not np.all(rebuilt[~fin & ~np.isnan(se)] == se[~fin & ~np.isnan(se)]):
        return None
    return f if np.allclose(rebuilt[fin], se[fin], rtol=1e-12, atol=0.0) else None


def _float_array(x) -> np.ndarray:
    return np.array(x, dtype=float)


@dataclass(frozen=True, eq=False)
class PDResult:
    """Partial dependence (and ICE) of one feature or one pair of features.

    Attributes
    ----------
    features : tuple of str
        Names of the explained features (length 1 or 2).
    kinds : tuple of str
        ``"numeric"`` or ``"categorical"`` per feature.
    grid : tuple of ndarray
        Grid values per feature; ``grid_shape = tuple(len(g) for g in grid)``.
    average : ndarray of shape (n_targets, *grid_shape)
        The partial dependence: weighted mean of the ICE curves.
    individual : ndarray of shape (n_targets, n_ice_rows, *grid_shape) or None
        ICE curves of the rows in ``ice_rows`` (all rows unless subsampled).
    std : ndarray of shape (n_targets, *grid_shape)
        Weighted standard deviation of the ICE curves at each grid point (over
        all rows, not only the kept ICE rows).
    stderr : ndarray of shape (n_targets, *grid_shape)
        Monte-Carlo standard error of ``average``:
        ``std * sqrt(sum(w**2)) / sum(w)`` (``std / sqrt(n)`` unweighted).
    counts : ndarray of int, shape grid_shape
        Rows whose value is nearest each grid point (eq. 5 of the AutoPDP paper
        before dividing by the row count); missing values are not counted.
    targets : tuple
        Class label or output name per target.
    response : str
        ``predict_proba``, ``decision_function``, ``predict``, ``crisp`` or
        ``callable``.  For ``crisp`` ``average`` is the proportion of rows
        predicted as each class; ``class_counts()`` gives counts.
    centered : bool
        Whether ICE and PD were anchored at 0 at the first grid point.
    n_rows : int
        Rows of X the PD averages over.
    total_weight : float
        Sum of the sample weights (``n_rows`` when unweighted).
    n_missing : tuple of int
        Rows with a missing value per feature.
    ordered : tuple of bool
        Whether each feature's grid has a meaningful order.
    ice_rows : ndarray of int or None
        Row positions of the ICE curves in ``individual``.
    method : str
        How the PD was computed (``"brute"``).
    ice_omitted : bool
        True when the computation kept ICE curves but they are not loaded: the result was read
        from a results.json (which leaves ICE out) without its ICE sidecar (``ice.parquet``).
    """

    features: tuple[str, ...]
    kinds: tuple[str, ...]
    grid: tuple[np.ndarray, ...]
    average: np.ndarray
    individual: np.ndarray | None
    std: np.ndarray
    stderr: np.ndarray
    counts: np.ndarray
    targets: tuple
    response: str
    centered: bool = False
    n_rows: int = 0
    total_weight: float = 0.0
    n_missing: tuple[int, ...] = ()
    ordered: tuple[bool, ...] = ()
    ice_rows: np.ndarray | None = None
    method: str = "brute"
    notes: tuple[str, ...] = field(default=())
    ice_omitted: bool = False

    def __post_init__(self):
        object.__setattr__(self, "grid", tuple(_readonly(g) for g in self.grid))
        for name in ("average", "individual", "std", "stderr", "counts", "ice_rows"):
            object.__setattr__(self, name, _readonly(getattr(self, name)))

    # ------------------------------------------------------------------ shape
    @property
    def grid_shape(self) -> tuple[int, ...]:
        return tuple(int(len(g)) for g in self.grid)

    @property
    def ndim(self) -> int:
        return len(self.features)

    @property
    def n_targets(self) -> int:
        return len(self.targets)

    @property
    def density(self) -> np.ndarray:
        """Share of rows nearest each grid point (the weights w of eq. 5)."""
        return self.counts / max(self.n_rows, 1)

    def target_index(self, target=None) -> int:
        """Position of ``target`` in ``targets`` (0 when None)."""
        if target is None:
            return 0
        for i, t in enumerate(self.targets):
            if t == target or str(t) == str(target):
                return i
        raise InputError(f"Unknown target {target!r}; this result has targets {list(self.targets)!r}.")

    def class_counts(self) -> np.ndarray:
        """For crisp classifiers: predicted count of each class at each grid point."""
        if self.response != "crisp":
            raise InputError("class_counts() is only defined for crisp labels (response='predict' on a classifier).")
        return self.average * self.total_weight

    # ------------------------------------------------------------------ JSON
    def to_dict(self, *, ice: bool = True, spread_digits: int | None = None, stderr_factor: bool = False) -> dict:
        """A JSON-ready dict (NaN and inf become None).

        ``ice=False`` leaves the ICE curves out (``individual`` is None; ``ice_kept`` says whether
        the computation kept them, e.g. in an ICE sidecar); ``spread_digits`` rounds ``std`` and
        ``stderr`` to that many significant digits (``average`` and the grid stay exact).
        ``stderr_factor=True`` writes ``stderr`` as one number, ``stderr_factor`` (``stderr = std x
        stderr_factor``, ``sqrt(sum w**2) / sum w`` of the rows), when every cell's stderr is that
        (see :func:`stderr_factor`); otherwise the ``stderr`` array as before.
        """
        d = {
            "schema": SCHEMA,
            "features": list(self.features),
            "kinds": list(self.kinds),
            "grid": [json_array(g) for g in self.grid],
            "average": json_array(self.average),
            "individual": None if self.individual is None or not ice else json_array(self.individual),
            "std": json_array(self.std, spread_digits),
            "stderr": json_array(self.stderr, spread_digits),
            "counts": json_array(self.counts),
            "targets": [json_scalar(t) for t in self.targets],
            "response": self.response,
            "centered": self.centered,
            "n_rows": self.n_rows,
            "total_weight": self.total_weight,
            "n_missing": list(self.n_missing),
            "ordered": list(self.ordered),
            "ice_rows": None if self.ice_rows is None else json_array(self.ice_rows),
            "method": self.method,
            "notes": list(self.notes),
        }
        if stderr_factor:
            f = _stderr_factor(self.std, self.stderr)
            if f is not None:
                del d["stderr"]
                d["stderr_factor"] = f
        if not ice:
            d["ice_kept"] = self.individual is not None or self.ice_omitted
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "PDResult":
        if d.get("schema") != SCHEMA:
            raise InputError(f"Not a PDResult dict (schema {d.get('schema')!r}, expected {SCHEMA!r}).")
        grid = []
        for kind, g in zip(d["kinds"], d["grid"]):
            if kind == "numeric":
                grid.append(np.asarray(g))
            else:
                arr = np.empty(len(g), dtype=object)
                arr[:] = g
                grid.append(arr)
        std = _float_array(d["std"])
        return cls(
            features=tuple(d["features"]),
            kinds=tuple(d["kinds"]),
            grid=tuple(grid),
            average=_float_array(d["average"]),
            individual=None if d["individual"] is None else _float_array(d["individual"]),
            std=std,
            stderr=std * float(d["stderr_factor"]) if "stderr_factor" in d else _float_array(d["stderr"]),
            counts=np.asarray(d["counts"], dtype=np.int64),
            targets=tuple(d["targets"]),
            response=d["response"],
            centered=bool(d["centered"]),
            n_rows=int(d["n_rows"]),
            total_weight=float(d["total_weight"]),
            n_missing=tuple(d["n_missing"]),
            ordered=tuple(d["ordered"]),
            ice_rows=None if d["ice_rows"] is None else np.asarray(d["ice_rows"], dtype=np.int64),
            method=d["method"],
            notes=tuple(d.get("notes", ())),
            ice_omitted=d["individual"] is None and bool(d.get("ice_kept", False)),
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), allow_nan=False)

    @classmethod
    def from_json(cls, text: str) -> "PDResult":
        return cls.from_dict(json.loads(text))

    def __repr__(self) -> str:
        feats = " x ".join(self.features)
        return (
            f"PDResult({feats}: kinds={self.kinds}, grid_shape={self.grid_shape}, targets={list(self.targets)}, "
            f"response={self.response!r}, method={self.method!r})"
        )
