"""results.json: the column tables an :class:`autopdp.Audit` is written as, and their reader.

:func:`read_results` expands a results.json into plain records for scripts; :meth:`Audit.from_json` builds
the audit back from the same records.  Every size is checked before the work it implies (``max_mb``).
"""

from __future__ import annotations

import json
import numbers
import dataclasses
from contextlib import contextmanager
from pathlib import Path
from typing import Mapping

import numpy as np
import pandas as pd

from ..config import split_record
from ..errors import InputError
from ..pd.result import PDResult
from ..utils.jsonable import json_scalar
from .tables import records
from ..findings.words import rebuilt_why

__all__ = ["read_results", "JSON_SCHEMA", "OLD_JSON_SCHEMAS", "RESULTS_MAX_MB", "RESULTS_EXPANSION"]


#: Array-valued details of a 2D score that results.json keeps (the report shades the OOD cells).
_DETAILS_2D = ("ood",)
JSON_SCHEMA = "autopdp.Audit/2"
#: Earlier layouts :meth:`Audit.from_json` still reads: ``/1`` wrote every score, verdict, evidence item and PD
#: as a record (a dict) of its own, ``/2`` writes them as column tables (:mod:`autopdp.io.tables`).
OLD_JSON_SCHEMAS = ("autopdp.Audit/1",)
#: The largest results.json (MB) :meth:`Audit.from_json` and :func:`read_results` read unless given ``max_mb``.
RESULTS_MAX_MB = 256
#: The arrays a results.json expands to (grids shared by PDs, fields written once for many rows) may take at most
#: this many bytes per byte of the file (and 64 MB whatever its size): a crafted file cannot make a small text
#: into gigabytes.  Written by autopdp, a file expands about 4 bytes per byte (a float64 per number of 2+ digits).
RESULTS_EXPANSION = 32
_RESULTS_FLOOR = 64e6


def _is_json_text(source) -> bool:
    return isinstance(source, str) and source.lstrip("\ufeff \t\r\n").startswith("{")


def _source_label(source) -> str:
    """How an error names ``source``: the file's path, or "the results.json text"."""
    if isinstance(source, Mapping):
        return "the results.json dict"
    return "the results.json text" if _is_json_text(source) else repr(str(source))


def _json_source(source) -> str:
    """The JSON text of ``source``: the text itself, or the file at that path (a UTF-8 byte-order mark dropped)."""
    if _is_json_text(source):
        return source.lstrip("\ufeff")
    try:
        return Path(source).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not UTF-8 text"
        raise InputError(f"cannot read {str(source)!r}: {reason}") from None


@contextmanager
def _damaged(label: str):
    """A results.json whose structure is not what autopdp writes: one InputError naming the file."""
    try:
        yield
    except InputError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        what = f"no {exc.args[0]!r} where one is expected" if isinstance(exc, KeyError) and exc.args else str(exc)
        raise InputError(f"{label} is not a complete autopdp results.json ({what[:200]}); write it again with "
                         "autopdp (the CLI or Audit.to_json).") from None


def read_results(source, *, max_mb: float = RESULTS_MAX_MB) -> dict:
    """A results.json (a path, its text, or the dict of :meth:`Audit.to_dict`) as plain records: every column
    table expanded into one dict per score row, verdict, evidence item and PD (each PD with its ``grid``
    arrays), for scripts that read the numbers without building an :class:`Audit` (:meth:`Audit.from_json` does).

    ``scores``, ``results`` and ``utility_scores`` become lists of dicts (each verdict with its ``utility``),
    ``evidence`` and ``comparisons`` dicts of such lists; every evidence item is whole (its ``why``, ``null``
    and ``statistic`` filled in where the file leaves them null); the other keys are as written.  Files of
    the earlier one-record-per-item layout (schema ``autopdp.Audit/1``) read the same.
    ``pandas.DataFrame(read_results(path)["scores"])`` is the scores table.  ``max_mb``: as in
    :meth:`Audit.from_json`.
    """
    label = _source_label(source)
    d = _records_of(source, label, max_mb)
    with _damaged(label):
        return _complete_evidence(d)


def _source_bytes(source) -> int | None:
    """The size of a results.json given as a path or text (None for a dict)."""
    if isinstance(source, Mapping):
        return None
    if _is_json_text(source):
        return len(source.encode("utf-8", "surrogatepass"))
    try:
        return Path(source).stat().st_size
    except OSError:
        return None  # _json_source names the error


def _check_size(source, label: str, max_mb: float) -> None:
    """A results.json larger than ``max_mb`` is refused before it is read or parsed."""
    size = _source_bytes(source)
    if size is not None and size > float(max_mb) * 1e6:
        raise InputError(f"{label} is {size / 1e6:,.1f} MB, above the {float(max_mb):,.4g} MB a results.json may have "
                         "(max_mb); pass a larger max_mb if the file is yours.")


def _check_expansion(d: dict, label: str, size: int | None) -> None:
    """The arrays of every PD of ``d`` (grids, averages, spreads, counts, ICE) fit in the bound of
    :data:`RESULTS_EXPANSION`, checked on the records' lengths before any array is built."""
    if size is None:  # a dict in memory: the caller holds it already
        return
    cap = max(_RESULTS_FLOOR, RESULTS_EXPANSION * float(size))
    total = 0.0
    known: dict = {}  # id of a (shared) list -> its number of values, each list walked once

    def values(obj) -> int:
        if not isinstance(obj, list):
            return 1
        key = id(obj)
        if key not in known:
            known[key] = sum(values(x) for x in obj) if any(isinstance(x, list) for x in obj) else len(obj)
        return known[key]

    pds = list(d["results"]) + [r for rs in (d.get("comparisons") or {}).values() for r in rs]
    for rec in pds:
        cells = 1
        for g in rec["grid"]:
            cells *= len(g)
        try:
            arrays = sum(values(rec.get(k)) for k in ("average", "std", "stderr", "counts", "individual", "ice_rows"))
        except RecursionError:
            raise InputError(f"{label} nests its values too deeply to be an autopdp results.json.") from None
        total += 8.0 * (values(rec["grid"]) + arrays + cells * max(1, len(rec["targets"])))  # + stderr from std
        if total > cap:
            raise InputError(f"{label} would expand to more than {cap / 1e6:,.0f} MB of arrays ({len(pds):,} PDs; "
                             f"the PD of {rec.get('features')!r} alone has {cells:,} cells): it was not written by "
                             "autopdp as it stands; write it again with autopdp.")


def _weight_rows(d: dict, rows: np.ndarray, label: str, max_mb: float) -> int:
    """How many rows the loaded audit's sample weights cover: the file's ``metadata.data.rows`` (else the ICE
    file's last row), a whole number no smaller than the ICE file's rows whose weights (8 bytes a row) fit in
    ``max_mb``, checked before the array is made."""
    top = int(rows.max(initial=-1)) + 1
    n = ((d.get("metadata") or {}).get("data") or {}).get("rows")
    if n is None:
        n = top
    elif not isinstance(n, numbers.Integral) or isinstance(n, bool) or n < top:
        raise InputError(f"{label} gives metadata.data.rows = {n!r}, not a whole number of at least {top:,} (the ICE "
                         "file's rows); write it again with autopdp.")
    if 8.0 * n > float(max_mb) * 1e6:
        raise InputError(f"{label} with its ICE file names {n:,} data rows: their sample weights need "
                         f"{8.0 * n / 1e6:,.0f} MB, above max_mb ({float(max_mb):,.4g} MB); pass a larger max_mb if "
                         "the files are yours.")
    return int(n)


def _records_of(source, label: str, max_mb: float = RESULTS_MAX_MB) -> dict:
    """:func:`read_results` without filling in the evidence items (:meth:`Audit.from_json` builds them once)."""
    if not isinstance(max_mb, numbers.Real) or isinstance(max_mb, bool) or not max_mb > 0:
        raise InputError(f"max_mb must be a positive number of megabytes, got {max_mb!r}.")
    if isinstance(source, Mapping):
        d = dict(source)
    else:
        _check_size(source, label, max_mb)
        try:
            d = json.loads(_json_source(source))
        except json.JSONDecodeError as exc:
            raise InputError(f"{label} is not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}.") from None
        except RecursionError:
            raise InputError(f"{label} nests its values too deeply to be an autopdp results.json.") from None
    schema = d.get("schema") if isinstance(d, dict) else None
    if schema not in (JSON_SCHEMA, *OLD_JSON_SCHEMAS):
        raise InputError(f"{label} is not an autopdp audit (schema {schema!r}, expected {JSON_SCHEMA!r}).")
    with _damaged(label):
        if schema == JSON_SCHEMA:
            _check_table_fields(d, label, _source_bytes(source))
            return _as_records(d)
        return dict(d)


def _check_table_fields(d: dict, label: str, size: int | None) -> None:
    """The fields the column tables of ``d`` expand to (rows x (shared + own columns)) stay under one per byte of
    the file (autopdp's own files expand to under 0.1): a table whose ``same`` holds thousands of keys over
    thousands of empty rows would otherwise build gigabytes of records before any other check."""
    if size is None:
        return
    cap = 1_000_000 + size
    total = 0

    def walk(obj, depth=0):
        nonlocal total
        if depth > 8:
            return
        if _is_table(obj):
            same, columns, rows = obj.get("same"), obj.get("columns"), obj.get("rows")
            if isinstance(same, dict) and isinstance(columns, list) and isinstance(rows, list):
                total += len(rows) * (len(same) + len(columns))
            return
        for v in (obj.values() if isinstance(obj, dict) else obj if isinstance(obj, list) else ()):
            walk(v, depth + 1)

    walk(d)
    if total > cap:
        raise InputError(f"{label} would expand to {total:,} record fields from {size:,} bytes (over {cap:,}): it was "
                         "not written by autopdp as it stands; write it again with autopdp.")


def _complete_evidence(d: dict) -> dict:
    """``d`` with every evidence item whole: the ``why``, ``null`` and ``statistic`` the file leaves null
    (rebuilt word for word, or the criterion's ``evidence_meta``) filled in, as :meth:`Evidence.to_dict` gives."""
    config, _ = split_record(d["config"])
    meta = d.get("evidence_meta") or {}
    d["evidence"] = {c: [_evidence_from(e, meta.get(c, {}), config).to_dict() for e in items]
                     for c, items in d["evidence"].items()}
    return d


def _json_text(d: dict) -> str:
    """``d`` as JSON text, one record per line: the top-level keys, small tables indented, and every item of
    a list of records (scores, verdicts, evidence, PDs) on one compact line."""
    return _dumps(d, 0) + "\n"


def _dumps(obj, level: int) -> str:
    def one(x):
        return json.dumps(x, separators=(",", ":"), allow_nan=False)

    pad, close = " " * (level + 1), " " * level
    if _is_table(obj):  # one row per line
        rows = ",\n".join(pad + " " + one(r) for r in obj["rows"])
        extra = "".join(f',"{k}":{one(obj[k])}' for k in ("order", "at") if k in obj)
        return (f'{{"same":{one(obj["same"])},"columns":{one(obj["columns"])}{extra},"rows":[\n' + rows + "\n" + pad
                + "]}")
    if isinstance(obj, list) and obj and level < 4 and all(isinstance(v, (dict, str)) for v in obj):
        return "[\n" + ",\n".join(pad + (_dumps(v, level + 1) if _is_table(v) else one(v)) for v in obj) \
            + "\n" + close + "]"
    if isinstance(obj, dict) and obj and level < 4:
        flat = one(obj)
        if level == 0 or len(flat) > 2000:
            return "{\n" + ",\n".join(f"{pad}{json.dumps(str(k))}: {_dumps(v, level + 1)}" for k, v in obj.items()) \
                + "\n" + close + "}"
        return flat
    return one(obj)


def _ndim(record: Mapping) -> int:
    return len(record["features"])


def _is_table(obj) -> bool:
    return isinstance(obj, dict) and {"same", "columns", "rows"} <= set(obj) <= {"same", "columns", "rows", "at", "order"}


def _pd_record(result: PDResult, grids: dict) -> dict:
    """``result`` as results.json writes it: :meth:`PDResult.to_dict` without ICE curves, ``std`` to
    :data:`SPREAD_DIGITS`, and ``grid`` as ``grid_index``: per axis, the position of the axis's grid in
    ``grids[feature]`` (each distinct grid of a feature written once; added to ``grids`` here)."""
    d = result.to_dict(ice=False, spread_digits=SPREAD_DIGITS, stderr_factor=True)
    index = []
    for feature, grid in zip(d["features"], d.pop("grid")):
        known = grids.setdefault(feature, [])
        if grid not in known:
            known.append(grid)
        index.append(known.index(grid))
    return {"features": d["features"], "grid_index": index, **{k: v for k, v in d.items() if k != "features"}}


def _as_records(d: dict) -> dict:
    """A ``/2`` results.json (column tables) in the ``/1`` layout (one record per item) that
    :meth:`Audit.from_json` reads."""
    grids = d.get("grids", {})

    def pd_dict(rec: dict) -> dict:
        rec = dict(rec)
        index = rec.pop("grid_index")
        try:
            rec["grid"] = [grids[f][i] for f, i in zip(rec["features"], index)]
        except (KeyError, IndexError, TypeError):  # named with the file by _damaged
            raise ValueError(f"the PD of {rec.get('features')!r} refers to a grid that 'grids' does not hold") from None
        return rec

    out = dict(d)
    out["scores"] = records(d["scores"])
    out["results"] = [pd_dict(r) for r in records(d["results"])]
    out["comparisons"] = {k: [pd_dict(r) for r in records(v)] for k, v in d.get("comparisons", {}).items()}
    out["evidence"] = {c: [{"criterion": c, **e} for e in records(v)] for c, v in d["evidence"].items()}
    by_features: dict[tuple, list] = {}
    for uid, tbl in d["utility_scores"].items():
        for v in records(tbl):
            by_features.setdefault(tuple(v["features"]), []).append({"utility": uid, **v})
    out["utility_scores"] = [v for vs in by_features.values() for v in vs]
    return out


#: Significant digits of ``std`` and ``stderr`` in results.json.  Rounding moves a spread by at most 5e-4 of
#: itself, below the spread's own sampling error (about 1/sqrt(2 n) relative) for any PD over fewer than two
#: million rows; the PD averages keep every digit.
SPREAD_DIGITS = 4


def _kept_details(details: Mapping) -> dict:
    """A 2D score's details without its per-cell diagnostic arrays, apart from ``_DETAILS_2D``."""
    return {k: v for k, v in details.items()
            if k in _DETAILS_2D or not (isinstance(v, np.ndarray) and v.ndim >= 1 and v.size > 4)}


def _num(v) -> float:
    return float("nan") if v is None else float(v)


#: Evidence fields written once per criterion (``evidence_meta``) and left off the items that share them.
_EVIDENCE_SHARED = ("null", "statistic")


def _evidence_meta(evidence: Mapping) -> dict:
    """``{criterion: {"null": ..., "statistic": ...}}``: each field's most common value among the criterion's items,
    empty ones (an item not scored, e.g. monotonicity of an unordered feature) counted last."""
    from collections import Counter

    meta = {}
    for c, by in evidence.items():
        if by:
            meta[c] = {k: max(Counter(getattr(e, k) for e in by.values()).items(), key=lambda kv: (kv[0] != "", kv[1]))[0]
                       for k in _EVIDENCE_SHARED}
    return meta


def _evidence_dict(e, meta: Mapping, config) -> dict:
    """``e.to_dict()`` with null in the fields ``from_json`` rebuilds exactly: ``null`` and ``statistic`` when
    they are the criterion's (``evidence_meta``), ``why`` when :func:`~autopdp.findings.words.rebuilt_why` gives it word for word (a
    sentence with a reason the fields do not hold is written out).  Every item keeps the same keys, so the
    criterion's items stay one column table."""
    d = e.to_dict()
    for k in _EVIDENCE_SHARED:
        if k in meta and d[k] == meta[k]:
            d[k] = None
    if rebuilt_why(e, config) == e.why:
        d["why"] = None
    return d


def _evidence_from(e: Mapping, meta: Mapping | None = None, config=None):
    """The inverse of :func:`_evidence_dict` (a null or missing ``null``, ``statistic`` or ``why`` rebuilt)."""
    from ..findings.significance import Evidence

    meta = meta or {}

    def shared(k):
        return meta.get(k, "") if e.get(k) is None else e[k]

    item = Evidence(
        criterion=e["criterion"], features=tuple(e["features"]), value=_num(e["value"]), p_value=_num(e["p_value"]),
        adjusted_p=_num(e["adjusted_p"]), noise_level=_num(e["noise_level"]), threshold=_num(e["threshold"]),
        material=bool(e["material"]), significant=bool(e["significant"]), why=e.get("why") or "",
        test=e.get("test", ""), null=shared("null"), statistic=shared("statistic"), draws=int(e.get("draws", 0)),
        kind=e.get("kind", ""), details=dict(e.get("details") or {}),
        # issue 31's learner-level fields: absent from older files (not assessed)
        robust=None if e.get("robust") is None else bool(e["robust"]), robust_p=_num(e.get("robust_p")),
        robust_adjusted_p=_num(e.get("robust_adjusted_p")), stability=_num(e.get("stability")),
        robust_why=e.get("robust_why") or "",
    )
    if e.get("why") is None:
        item = dataclasses.replace(item, why=rebuilt_why(item, config))
    return item


def _table_from(rows: list, names, targets: list) -> pd.DataFrame:
    """The inverse of :func:`_table`: one column per target (the targets' own values where they match)."""
    if not rows:
        return pd.DataFrame()
    by_text = {str(t): t for t in targets}
    cols = [c for c in rows[0] if c != "features"]
    keys = [tuple(r["features"]) if isinstance(r["features"], list) else r["features"] for r in rows]
    index = pd.MultiIndex.from_tuples(keys, names=names) if isinstance(names, list) else pd.Index(keys, name=names)
    data = np.array([[_num(r[c]) for c in cols] for r in rows], dtype=float)
    return pd.DataFrame(data, index=index, columns=[by_text.get(c, c) for c in cols])


def _table(df: pd.DataFrame) -> list:
    if df.empty:
        return []
    names = [str(c) for c in df.columns]
    values = df.to_numpy(dtype=float)
    return [{"features": list(idx) if isinstance(idx, tuple) else idx,
             **{c: json_scalar(float(v)) for c, v in zip(names, row)}} for idx, row in zip(df.index, values)]
