"""Provenance: what exactly was audited, with what, where and how, in a form an auditor can check.

* every input file (data, model, comparison models, policy, config) by path, size and its sha256
  exactly as ``sha256sum`` prints it, so anyone can re-check the file they hold;
* the target column, the positive class (the explained class of a classifier), the sample-weight
  column, the random seed;
* a content hash of the data *as loaded* (features and target, after the CSV options), labelled as
  such: it identifies the table the numbers come from, whichever file format carried it;
* the versions of every library the numbers or the report depend on, and the platform.

The command line and the date are properties of one run and live in ``Audit.run`` (the only part of
``results.json`` that differs between identical runs).
"""

from __future__ import annotations

import dataclasses
import hashlib
import platform
import shlex
import sys
from importlib import metadata as _metadata
from pathlib import Path
from typing import Any, Mapping

from ..utils.secrets import redact, redact_argv
from ..utils.atomic import sha256_file
from .._version import __version__
from ..errors import InputError

__all__ = ["file_record", "library_versions", "platform_info", "content_sha256", "attach_provenance",
           "command_line", "LIBRARIES"]

#: Distributions whose versions go into every report (import name differs for some).
LIBRARIES = ("numpy", "pandas", "scikit-learn", "scipy", "cvxpy", "clarabel", "osqp", "numba", "joblib", "skops",
             "matplotlib", "jinja2", "weasyprint", "python-docx", "pyarrow", "tqdm", "dask", "distributed", "xgboost", "xgboost-cpu",
             "lightgbm", "mlflow")
_REQUIRED = {"numpy", "pandas", "scikit-learn", "scipy", "cvxpy", "numba", "joblib", "skops", "matplotlib", "jinja2",
             "weasyprint", "python-docx", "pyarrow", "tqdm"}


def file_record(path, role: str) -> dict:
    """``{"role", "path", "name", "bytes", "sha256"}`` of an input file (sha256 as ``sha256sum`` prints it)."""
    from .loading import parquet_parts

    p = Path(path)
    parts = parquet_parts(path) if role in ("data", "training data") else None
    if parts is not None:  # a folder or pattern of Parquet parts: each part, and the digest of their sha256sum list
        records = [file_record(f, role) for f in parts]
        listing = "".join(f"{r['sha256']}  {r['name']}\n" for r in records).encode()
        return {"role": role, "path": str(path), "name": p.name, "bytes": sum(r["bytes"] for r in records),
                "sha256": hashlib.sha256(listing).hexdigest(),
                "parts": [{k: r[k] for k in ("name", "bytes", "sha256")} for r in records]}
    try:
        digest = sha256_file(p)
        size = p.stat().st_size
    except OSError as exc:
        raise InputError(f"cannot read {role} file {str(p)!r} to hash it: {exc.strerror or exc}.") from None
    return {"role": role, "path": str(p), "name": p.name, "bytes": int(size), "sha256": digest}


def library_versions() -> dict:
    """autopdp, Python and every library in :data:`LIBRARIES` ("not installed" for required ones missing)."""
    out = {"autopdp": __version__, "python": platform.python_version()}
    for dist in LIBRARIES:
        try:
            out[dist] = _metadata.version(dist)
        except _metadata.PackageNotFoundError:
            if dist in _REQUIRED:
                out[dist] = "not installed"
    return out


def platform_info() -> dict:
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "python_implementation": platform.python_implementation(),
        "python_build": " ".join(platform.python_build()),
    }


def content_sha256(X, y=None, sample_weight=None) -> str:
    """sha256 of the table as loaded: column names, pandas row hashes of the features, then the target and weights.

    Not a file hash (the file's sha256 is in ``inputs``): it identifies the values the audit used,
    the same whether they came from CSV or Parquet, or from a Parquet folder whose rows stay on a Dask cluster's
    workers (a :class:`~autopdp.pd.partframe.PartFrame`: each part's row hashes are made on its worker and added
    here part after part).
    """
    import numpy as np  # here, not at module level: the CLI reads the command line before the heavy imports
    import pandas as pd

    h = hashlib.sha256()
    chunks = getattr(X, "hash_chunks", None)  # a frame whose rows are on a cluster: its parts' row hashes, in order
    if chunks is not None:
        h.update("\x1f".join(map(str, X.names)).encode())
        for chunk in chunks():
            h.update(chunk)
    elif isinstance(X, pd.DataFrame):
        h.update("\x1f".join(map(str, X.columns)).encode())
        for a, b in _chunks(len(X)):  # each row's hash is its own: the same bytes as one pass, fed in order
            h.update(pd.util.hash_pandas_object(X.iloc[a:b], index=False).to_numpy().tobytes())
    else:
        arr = np.asarray(X)
        h.update(np.ascontiguousarray(arr).tobytes() if arr.dtype != object else repr(arr.tolist()).encode())
    for label, extra in (("y", y), ("w", sample_weight)):
        if extra is not None:
            h.update(b"\x1e" + label.encode())
            if hasattr(extra, "hash_chunks"):  # values kept on a cluster's row partitions: their row hashes, in order
                for chunk in extra.hash_chunks():
                    h.update(chunk)
                continue
            values = np.asarray(extra)
            for a, b in _chunks(values.shape[0]):
                h.update(pd.util.hash_pandas_object(pd.Series(values[a:b], dtype=object), index=False).to_numpy()
                         .tobytes())
    return h.hexdigest()


#: rows hashed at a time by :func:`content_sha256`: its passing arrays (codes, hashes, their bytes: about 24 bytes
#: a row) stay bounded, where one pass made them for every row at once (240 MB at 10M rows)
HASH_CHUNK_ROWS = 262_144


def _chunks(n: int):
    return [(a, min(a + HASH_CHUNK_ROWS, n)) for a in range(0, n, HASH_CHUNK_ROWS)]


def command_line(argv=None) -> str:
    """The command as typed (shell-quoted) with credentials redacted (:func:`redact_argv`), e.g.
    ``autopdp report --model m.skops ... --scheduler 'tls://user:***@host:8786'``: it is recorded in
    results.json, gate.json, gate.xml, the manifest and the reports, which are shared."""
    argv = list(sys.argv[1:] if argv is None else argv)
    return " ".join(["autopdp", *(shlex.quote(a) for a in redact_argv(argv))])


def attach_provenance(audit, *, inputs: Mapping[str, Mapping] | None = None, command: str | None = None, **fields: Any):
    """A copy of ``audit`` whose ``metadata["provenance"]`` also holds ``inputs`` (file records) and ``fields``,
    and whose ``run`` holds the command line."""
    meta = dict(audit.metadata)
    prov = dict(meta.get("provenance") or {})
    if inputs:
        prov["inputs"] = {**dict(prov.get("inputs") or {}), **{k: dict(v) for k, v in inputs.items()}}
    prov.update({k: v for k, v in fields.items() if v is not None})
    meta["provenance"] = prov
    run = dict(audit.run)
    if command is not None:
        run["command"] = redact(command)  # also for a command given through the API
    return dataclasses.replace(audit, metadata=meta, run=run)
