"""ICE curves in a columnar sidecar file (``ice.parquet``), beside a results.json that leaves them out.

One row per ICE curve (one data row of one PD, one target):

=============  ============  ==========================================================
column         type          what
=============  ============  ==========================================================
``model``      string        ``""`` for the audited model, else the comparison model's name
``features``   list<string>  the PD's feature(s), as in results.json
``target``     int32         position of the target in the PD's ``targets``
``row``        int64         row position in the audited data (``ice_rows``, or 0..n-1)
``ice``        list<double>  the curve on the PD's grid (a 2D grid flattened in C order)
``weight``     double        the row's sample weight (null when the audit is unweighted)
=============  ============  ==========================================================

Values are the float64 numbers of :attr:`PDResult.individual`, unrounded, so a round trip
is exact.  The file's schema metadata (key ``autopdp``) holds ``{"schema": "autopdp.ICE/1",
"index": [...]}``, one entry per PD in row order, so a reader rebuilds each PD's array without
grouping the rows; any Parquet reader (pandas, DuckDB, Arrow) reads the columns as a table.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np

from ..errors import InputError

__all__ = ["ICE_SCHEMA", "ICE_FILE", "ICE_MAX_MB", "ice_parquet_bytes", "ice_sidecar_name", "read_ice",
           "read_ice_weights", "read_ice_weight_totals", "SampledWeights"]

ICE_SCHEMA = "autopdp.ICE/1"
#: The sidecar's file name beside results.json (``--ice`` on the command line).
ICE_FILE = "ice.parquet"


def ice_parquet_bytes(items, sample_weight=None) -> bytes:
    """The Parquet file of the ICE curves of ``items``: ``(model name, PDResult)`` pairs (those without ICE skipped);
    ``sample_weight``: the audited rows' weights (None: unweighted), written beside each curve's row."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    models, feats, targets, rows, values, lengths, index = [], [], [], [], [], [], []
    start = 0
    for model, r in items:
        if r.individual is None:
            continue
        ice = np.asarray(r.individual, dtype=np.float64)
        n_t, n_r = ice.shape[0], ice.shape[1]
        length = int(np.prod(r.grid_shape))
        flat = ice.reshape(n_t * n_r, length)
        row_ids = np.arange(n_r, dtype=np.int64) if r.ice_rows is None else np.asarray(r.ice_rows, dtype=np.int64)
        n = n_t * n_r
        models.extend([str(model)] * n)
        feats.extend([list(r.features)] * n)
        targets.append(np.repeat(np.arange(n_t, dtype=np.int32), n_r))
        rows.append(np.tile(row_ids, n_t))
        values.append(flat.ravel())
        lengths.append(np.full(n, length, dtype=np.int64))
        index.append({"model": str(model), "features": list(r.features), "start": start, "targets": n_t, "rows": n_r,
                      "grid_shape": list(r.grid_shape), "sampled": r.ice_rows is not None})
        start += n
    cat = (lambda parts, dtype: np.concatenate(parts) if parts else np.empty(0, dtype=dtype))
    offsets = np.concatenate([[0], np.cumsum(cat(lengths, np.int64))]).astype(np.int64)
    ice_col = pa.ListArray.from_arrays(pa.array(offsets, type=pa.int64()), pa.array(cat(values, np.float64)))
    if not isinstance(ice_col, pa.LargeListArray) and offsets[-1] > np.iinfo(np.int32).max:  # pragma: no cover
        ice_col = pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(cat(values, np.float64)))
    row_col = cat(rows, np.int64)
    if sample_weight is None:
        weight_col = pa.nulls(len(row_col), type=pa.float64())
    else:
        weight_col = pa.array(np.asarray(sample_weight, dtype=np.float64)[row_col], type=pa.float64())
    table = pa.table({
        "model": pa.array(models, type=pa.string()),
        "features": pa.array(feats, type=pa.list_(pa.string())),
        "target": pa.array(cat(targets, np.int32), type=pa.int32()),
        "row": pa.array(row_col, type=pa.int64()),
        "ice": ice_col,
        "weight": weight_col,
    })
    meta = {"schema": ICE_SCHEMA, "index": index}
    if sample_weight is not None:  # aggregates of all rows' weights: the noise tests' design (no row's value)
        sw = np.asarray(sample_weight, dtype=np.float64)
        meta["weights"] = {"rows": int(sw.size), "total": float(sw.sum()), "total_of_squares": float(np.sum(sw * sw))}
    table = table.replace_schema_metadata({"autopdp": json.dumps(meta)})
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    return buf.getvalue()


def ice_sidecar_name(name) -> str:
    """The sidecar's file name as a results.json records it (``ice.file``), checked: a plain file name, read
    from beside the results.json.  A results.json is data from elsewhere, so it may not point at another
    file (``/etc/passwd``, ``../x``): the error says so without looking at, or revealing, that file."""
    text = name if isinstance(name, str) else ""
    if (not text or text in (".", "..") or "/" in text or "\\" in text or "\x00" in text
            or Path(text).is_absolute() or Path(text).name != text):
        raise InputError(
            f"the results.json names its ICE file {str(name)[:80]!r}, which is not a plain file name: the sidecar is "
            "read only from beside the results.json; pass its path explicitly (Audit.from_json(path, ice=PATH)).")
    return text


#: The most an ICE sidecar may hold once decompressed (MB) unless the reader is given ``max_mb``.
ICE_MAX_MB = 1024


def read_ice(source, max_mb: float = ICE_MAX_MB) -> dict:
    """``{(model name, features): (individual, ice_rows)}`` from an ICE sidecar (a path or its bytes).

    ``individual`` has the shape of :attr:`PDResult.individual`; ``ice_rows`` is None when the
    curves are of every row in order.  A file that decompresses to more than ``max_mb`` is refused
    before it is read; the index's counts and shapes are checked against the curves the file holds.
    """
    table, meta = _read(source, max_mb)
    ice = table.column("ice").combine_chunks()
    values = ice.flatten().to_numpy(zero_copy_only=False)
    offsets = ice.offsets.to_numpy()
    rows = table.column("row").to_numpy()
    out = {}
    try:
        for item in meta["index"]:
            n = int(item["targets"]) * int(item["rows"])
            start = int(item["start"])
            if n < 0 or start < 0 or start + n >= offsets.size:
                raise ValueError(f"the index names curves {start}..{start + n} of {offsets.size - 1}")
            a, b = offsets[start], offsets[start + n]
            individual = values[a:b].reshape(item["targets"], item["rows"], *item["grid_shape"])
            ice_rows = rows[start:start + int(item["rows"])].copy() if item["sampled"] else None
            out[(item["model"], tuple(item["features"]))] = (individual.copy(), ice_rows)
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"the ICE file {_name(source)} does not hold together ({str(exc)[:200]}); write it again "
                         "with autopdp.") from None
    return out


class SampledWeights(np.ndarray):
    """The sample weights of an audit read back from its ICE sidecar: each row's weight where the sidecar has a
    curve of it, NaN elsewhere, with the aggregates of all rows the noise tests need (``total``,
    ``total_of_squares``): the ICE rows' inclusion probabilities and the effective rows follow from them."""

    def __new__(cls, values, total: float, total_of_squares: float):
        obj = np.asarray(values, dtype=float).view(cls)
        obj.total = float(total)
        obj.total_of_squares = float(total_of_squares)
        return obj

    def __array_finalize__(self, obj):
        self.total = getattr(obj, "total", float("nan"))
        self.total_of_squares = getattr(obj, "total_of_squares", float("nan"))


def read_ice_weight_totals(source, max_mb: float = ICE_MAX_MB) -> dict | None:
    """``{"rows", "total", "total_of_squares"}`` of the audit's sample weights as the sidecar records them (None:
    unweighted, or a sidecar written before they were recorded).  Read from the file's footer alone: no curve
    is decompressed (``max_mb`` is kept for the readers' common signature)."""
    meta = _footer_metadata(source)
    got = (meta or {}).get("weights") if isinstance(meta, dict) else None
    if not isinstance(got, dict):
        return None
    try:
        out = {"rows": int(got["rows"]), "total": float(got["total"]),
               "total_of_squares": float(got["total_of_squares"])}
    except (KeyError, TypeError, ValueError):
        return None
    return out if out["total"] > 0 and out["total_of_squares"] > 0 and out["rows"] > 0 else None


def read_ice_weights(source, max_mb: float = ICE_MAX_MB) -> tuple[np.ndarray, np.ndarray] | None:
    """``(rows, weights)``: the sample weight of each data row the sidecar has a curve of (rows ascending), or
    None when the audit was unweighted (or the file predates the ``weight`` column)."""
    table, _ = _read(source, max_mb)
    if "weight" not in table.column_names or table.column("weight").null_count == table.num_rows:
        return None
    rows = table.column("row").to_numpy()
    weights = table.column("weight").to_numpy(zero_copy_only=False).astype(float)
    rows, first = np.unique(rows, return_index=True)
    return rows, weights[first]


def _name(source) -> str:
    return "(bytes)" if isinstance(source, (bytes, bytearray)) else repr(str(source))


def _footer_metadata(source) -> dict:
    """The sidecar's ``autopdp`` metadata from its Parquet footer (an InputError for anything else)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    where = pa.BufferReader(source) if isinstance(source, (bytes, bytearray)) else str(Path(source))
    try:
        raw = pq.ParquetFile(where).schema_arrow.metadata or {}
        meta = json.loads(raw.get(b"autopdp", b"{}"))
    except (OSError, pa.ArrowInvalid, ValueError) as exc:
        raise InputError(f"cannot read the ICE file {_name(source)}: {exc}") from None
    if not isinstance(meta, dict) or meta.get("schema") != ICE_SCHEMA:
        raise InputError(f"not an autopdp ICE file (expected schema {ICE_SCHEMA!r}).")
    return meta


def _read(source, max_mb: float = ICE_MAX_MB):
    """The sidecar's Arrow table and its ``autopdp`` metadata (an InputError for anything else); its
    decompressed size (the Parquet footer's) is checked against ``max_mb`` before the data is read."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    where = pa.BufferReader(source) if isinstance(source, (bytes, bytearray)) else str(Path(source))
    try:
        footer = pq.ParquetFile(where).metadata
        size = sum(footer.row_group(i).total_byte_size for i in range(footer.num_row_groups))
        if isinstance(source, (bytes, bytearray)):
            where = pa.BufferReader(source)
    except (OSError, pa.ArrowInvalid) as exc:
        raise InputError(f"cannot read the ICE file {source if not isinstance(source, bytes) else '(bytes)'}: {exc}") from None
    if size > float(max_mb) * 1e6:
        raise InputError(f"the ICE file {_name(source)} holds {size / 1e6:,.0f} MB once decompressed, above max_mb "
                         f"({float(max_mb):,.4g} MB); pass a larger max_mb if the file is yours.")
    try:
        table = pq.read_table(where)
    except (OSError, pa.ArrowInvalid) as exc:
        raise InputError(f"cannot read the ICE file {source if not isinstance(source, bytes) else '(bytes)'}: {exc}") from None
    meta = json.loads((table.schema.metadata or {}).get(b"autopdp", b"{}"))
    if meta.get("schema") != ICE_SCHEMA:
        raise InputError(f"not an autopdp ICE file (schema {meta.get('schema')!r}, expected {ICE_SCHEMA!r}).")
    return table, meta
