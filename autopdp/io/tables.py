"""Lists of records as column tables, the layout results.json (schema ``autopdp.Audit/2``) stores them in.

A list of records (dicts) is written as *tables*, one per set of fields the records have::

    {"same": {"kind": "2d", ...}, "columns": ["features", "value", ...], "rows": [[...], [...], ...]}

``same`` holds the fields equal in every row of the table (written once), ``columns`` the others and
``rows`` one list per record.  Rows are in the records' order; where records of several tables
interleave, each table also has ``at``, its rows' positions among the records; where a shared field
comes before another in the records, ``order`` lists the fields in the records' order.  A field named in
``nested`` (a dict, such as a score's ``details``) is spread into ``"details.<key>"`` columns, so its
keys are written once too.  :func:`records` reads the tables back into the records, in order and field
for field (``autopdp.read_results`` does it for a whole results.json).
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
    """``items`` (JSON-ready records) as column tables: one table per set of fields (and per ``split(record)``,
    when given: e.g. 1D and 2D PDs apart, so each has its own ``same``), in the order each first appears.
    Where the tables' rows, one table after another, are not the records' order, each table also has
    ``at``: every row's position among the records."""
    nested = tuple(nested)
    groups: dict = {}
    for position, record in enumerate(items):
        flat = _flat(record, nested)
        groups.setdefault((tuple(flat), None if split is None else split(record)), []).append((position, flat))
    in_order = [p for g in groups.values() for p, _ in g] == list(range(sum(len(g) for g in groups.values())))
    out = []
    for (keys, _), group in groups.items():
        run = [flat for _, flat in group]
        same_keys = [k for k in keys if _same_in_every_row(run, k)] if len(run) > 1 else []
        columns = [k for k in keys if k not in same_keys]
        table = {"same": {k: run[0][k] for k in same_keys}, "columns": columns,
                 "rows": [[r[k] for k in columns] for r in run]}
        if [*same_keys, *columns] != list(keys):  # the records' own field order, where same-then-columns is not it
            table["order"] = list(keys)
        if not in_order:
            table["at"] = [p for p, _ in group]
        out.append(table)
    return out


def records(table_list: Iterable[Mapping], nested: Iterable[str] = NESTED) -> list[dict]:
    """The records of :func:`tables`' output, in their order, each with its fields in their order.  Raises ValueError on a table that does not hold together (a row of the wrong length,
    positions ``at`` that are not each record's once)."""
    nested = tuple(nested)
    placed: list = []
    for t in table_list:
        same, columns = dict(t.get("same") or {}), list(t["columns"])
        order = list(t.get("order") or [*same, *columns])
        if sorted(order) != sorted([*same, *columns]):
            raise ValueError("a table's 'order' does not list its fields")
        at = t.get("at")
        if at is not None and len(at) != len(t["rows"]):
            raise ValueError(f"a table has {len(t['rows'])} rows and {len(at)} positions")
        for i, row in enumerate(t["rows"]):
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
            placed.append((None if at is None else at[i], record))
    if any(p is None for p, _ in placed):
        if any(p is not None for p, _ in placed):
            raise ValueError("some tables give their rows' positions ('at') and others do not")
        return [r for _, r in placed]
    if sorted(p for p, _ in placed) != list(range(len(placed))):
        raise ValueError("the tables' positions ('at') are not each record's once")
    return [r for _, r in sorted(placed, key=lambda x: x[0])]
