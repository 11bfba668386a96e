"""Values as JSON carries them: the one conversion every output of autopdp goes through (results.json, gate.json,
PDResult.to_json, the evidence's details, MLflow tags).

JSON has no NaN, no infinity, no numpy types and no tuples: :func:`json_scalar` writes a number or label, NaN and
infinity as ``null``; :func:`json_array` an array as nested lists (optionally to a number of significant digits, or with
whole floats as integers); :func:`jsonable` any nesting of mappings, sequences, arrays and scalars.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

__all__ = ["json_scalar", "json_array", "jsonable"]


def json_scalar(v):
    """A numpy scalar as the Python one; a non-finite float as None; anything else unchanged."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not np.isfinite(v):
        return None
    return v


def json_array(a, digits: int | None = None, *, whole: bool = False) -> object:
    """numpy array / scalar -> nested lists with NaN and inf as None.

    ``digits``: keep this many significant digits of a float array (its JSON text then
    has at most that many), for numbers whose own sampling error is far larger.
    ``whole``: write a float array's whole numbers as integers (``0``, not ``0.0``: the same JSON number).
    """
    arr = np.asarray(a)
    if arr.dtype == object:
        return [json_scalar(v) for v in arr.tolist()]
    if arr.dtype.kind == "f":
        if digits is not None:
            arr = _significant(arr, digits)
        obj = arr.astype(object)
        if whole:
            ints = np.isfinite(arr) & (arr == np.round(arr)) & (np.abs(arr) < 2.0 ** 53)
            obj[ints] = arr[ints].astype(np.int64).tolist()
        obj[~np.isfinite(arr)] = None
        return obj.tolist()
    return arr.tolist()


def _significant(arr: np.ndarray, digits: int) -> np.ndarray:
    """``arr`` rounded to ``digits`` significant digits (through the decimal text, so each number's
    shortest repr has at most ``digits`` digits); NaN and inf unchanged."""
    flat = np.asarray(arr, dtype=float).ravel()
    fmt = f"%.{int(digits)}g"
    out = np.array([float(fmt % v) for v in flat.tolist()], dtype=float) if flat.size else flat.copy()
    return out.reshape(np.shape(arr))


def jsonable(obj, *, whole: bool = True):
    """Any nesting of mappings (keys as text), lists, tuples, arrays (:func:`json_array`; ``whole``: whole floats as
    integers) and scalars (:func:`json_scalar`) made JSON-ready; any other object as its text."""
    if isinstance(obj, Mapping):
        return {str(k): jsonable(v, whole=whole) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v, whole=whole) for v in obj]
    if isinstance(obj, np.ndarray):
        return json_array(obj, whole=whole)
    if isinstance(obj, (str, bool, type(None), int)):
        return obj
    if isinstance(obj, (float, np.generic)):
        return json_scalar(obj)
    return str(obj)
