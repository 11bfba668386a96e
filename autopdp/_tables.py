"""Lists of records as column tables, the layout results.json (schema ``autopdp.Audit/2``) stores them in.

A list of records (dicts) is written as consecutive *tables*, one per run of records that have the
same keys::

    {"same": {"kind": "2d", ...}, "columns": ["features", "value", ...], "rows": [[...], [...], ...]}

``same`` holds the fields equal in every row of the table (written once), ``columns`` the others and
``rows`` one list per record, in the records' order.  A field named in ``nested`` (a dict, such as a
score's ``details``) is spread into ``"details.<key>"`` columns, so its keys are written once too.
:func:`records` reads the tables back into the records, in order and field for field; in pandas,
``pd.DataFrame(t["rows"], columns=t["columns"]).assign(**t["same"])`` gives one table.
"""

from __future__ import annotations

import json
from typing import Callable, Iterable, Mapping

#: Fields spread into one column per key (their keys written once per table).
NESTED = ("details",)


def _flat(record: Mapping, nested: Iterable[str]) -> dict:
    out = {}
    for key, value in record.items():
        if key in nested and isinstance(value, Mapping) and value:  # an empty dict stays one value
            for inner, v in value.items():
                out[f"{key}.{inner}"] = v
        else:
            out[key] = value
    return out


def _same_in_every_row(run: list, key: str) -> bool:
    """Every record of ``run`` holds the same JSON value under ``key`` (``True`` is not ``1``; ``1`` and ``1.0``
    are the same number; lists and dicts equal by ``==`` are confirmed on their JSON text)."""
    first = run[0][key]
    if isinstance(first, (list, dict)):
        text = None
        for r in run[1:]:
            v = r[key]
            if v != first:
                return False
            if text is None:
                text = json.dumps(first, sort_keys=True)
            if json.dumps(v, sort_keys=True) != text:
                return False
        return True
    kind = type(first)
    strict = isinstance(first, (bool, str)) or first is None
    for r in run[1:]:
        v = r[key]
        if v != first or isinstance(v, (list, dict)) or ((strict or isinstance(v, bool)) and type(v) is not kind):
            return False
    return True


def tables(items: Iterable[Mapping], nested: Iterable[str] = NESTED, split: Callable | None = None) -> list[dict]:
    """``items`` (JSON-ready records) as column tables: one table per run of records with the same fields
    (and the same ``split(record)``, when given: e.g. 1D and 2D PDs apart, so each has its own ``same``)."""
    nested = tuple(nested)
    runs: list[list[dict]] = []
    keys_of: list = []
    for record in items:
        flat = _flat(record, nested)
        key = (list(flat), None if split is None else split(record))
        if runs and keys_of[-1] == key:
            runs[-1].append(flat)
        else:
            runs.append([flat])
            keys_of.append(key)
    out = []
    for run in runs:
        keys = list(run[0])
        if len(run) > 1:
            same_keys = [k for k in keys if _same_in_every_row(run, k)]
        else:
            same_keys = []
        columns = [k for k in keys if k not in same_keys]
        out.append({"same": {k: run[0][k] for k in same_keys}, "columns": columns,
                    "rows": [[r[k] for k in columns] for r in run]})
    return out


def records(table_list: Iterable[Mapping], nested: Iterable[str] = NESTED) -> list[dict]:
    """The records of :func:`tables`' output, in order (each record's fields: ``same``'s, then ``columns``')."""
    nested = tuple(nested)
    out = []
    for t in table_list:
        same, columns = dict(t.get("same") or {}), list(t["columns"])
        order = [*same, *columns]
        for row in t["rows"]:
            if len(row) != len(columns):
                raise ValueError(f"a row has {len(row)} values for {len(columns)} columns")
            flat = {**same, **dict(zip(columns, row))}
            record: dict = {}
            for key in order:
                head, dot, inner = key.partition(".")
                if dot and head in nested:
                    record.setdefault(head, {})[inner] = flat[key]
                else:
                    record[key] = flat[key]
            out.append(record)
    return out
