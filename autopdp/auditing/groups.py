"""Feature groups: one-hot columns audited as one categorical feature.

A model trained on one-hot (dummy) columns ``state_CA, state_NY, state_TX`` has no column
``state``: a PD of ``state_NY`` alone sets that dummy to 1 in rows whose ``state_CA`` is also 1,
rows no data holds.  ``groups={"state": "state_*"}`` (``--group state=state_*``) declares the
columns one feature.  The data's dummies are collapsed into one categorical column ``state``
(level ``NY`` where ``state_NY`` is 1; ``(all 0)`` where a row has none set, the reference level
of a ``drop="first"`` encoding), placed where the first dummy was, and the model is wrapped in a
scikit-learn :class:`~sklearn.pipeline.Pipeline` whose first step writes the dummies back: each
dummy is a :class:`~sklearn.preprocessing.OneHotEncoder` of ``state`` with that one level
(``handle_unknown="ignore"``: 0 at every other level), under the dummy's own name, in the model's
column order and dtype.  So every stage sees one feature ``state``, its PD sets exactly one dummy
to 1 per level, and the model receives exactly the columns it was fitted on.  The OOD check,
importance and the report treat ``state`` as one feature; the PDs are computed by brute force
through the Pipeline (its column-separable path, :mod:`autopdp.pd.pipeline_blocks`).

Refits clone the Pipeline and fit it on the training data collapsed the same way (the dummies'
encoders have their levels fixed); comparison models are wrapped as the audited model is.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ..errors import InputError
from ..io.loading import column_error

__all__ = ["parse_group", "resolve_groups", "collapse", "wrap_model", "apply_groups", "grouped_names", "NONE_LEVEL"]

#: The level of a row with none of the group's dummies set.
NONE_LEVEL = "(all 0)"


def parse_group(text: str) -> tuple[str, object]:
    """``("state", ("state_CA", "state_NY"))`` from ``--group state=state_CA,state_NY``; a single item ending in
    ``*`` is a prefix (``state=state_*`` -> ``("state", "state_*")``)."""
    name, sep, cols = str(text).partition("=")
    name, cols = name.strip(), cols.strip()
    if not sep or not name or not cols:
        raise InputError(f"--group takes NAME=COL1,COL2,... or NAME=PREFIX* (e.g. state=state_*), got {text[:60]!r}.")
    items = [c.strip() for c in cols.split(",") if c.strip()]
    if len(items) == 1 and items[0].endswith("*"):
        return name, items[0]
    return name, tuple(items)


def _members(name: str, spec, columns: list) -> list:
    if isinstance(spec, str):
        if not spec.endswith("*") or len(spec) < 2:
            raise InputError(f"group {name!r}: a prefix ends in '*' (e.g. '{name}_*'), got {spec!r}; or list the "
                             "columns.")
        found = [c for c in columns if str(c).startswith(spec[:-1])]
        if not found:
            raise InputError(f"group {name!r}: no column of the data starts with {spec[:-1]!r}.")
        return found
    for c in spec:
        if c not in columns:
            raise column_error(f"group {name!r} names the column", c, columns, "data's columns")
    return list(spec)


def resolve_groups(groups: Mapping, columns) -> dict[str, list]:
    """``{name: [member columns, in the data's order]}``: prefixes expanded, every member a column of the data, at
    least two members, no column in two groups, no group named as another column."""
    columns = list(columns)
    out, owner = {}, {}
    for name, spec in groups.items():
        members = _members(name, spec, columns)
        if len(members) < 2:
            raise InputError(f"group {name!r} has {len(members)} column ({members}); a group joins two or more "
                             "one-hot columns.")
        for c in members:
            if c in owner:
                raise InputError(f"column {c!r} is in two groups ({owner[c]!r} and {name!r}); give it to one.")
            owner[c] = name
        out[name] = sorted(members, key=columns.index)
    for name in out:
        if name in columns and owner.get(name) != name:
            raise InputError(f"group name {name!r} is already a column of the data; name the group otherwise.")
    return out


def grouped_names(groups: Mapping, columns) -> list:
    """The feature names an audit with ``groups`` sees: each group's name where its first column was, the other
    columns as they are (``columns`` unchanged without groups)."""
    columns = list(columns)
    if not groups:
        return columns
    resolved = resolve_groups(groups, columns)
    first = {members[0]: g for g, members in resolved.items()}
    inside = {c for members in resolved.values() for c in members}
    return [first.get(c, c) for c in columns if c not in inside or c in first]


def _levels(name: str, members: list) -> list[str]:
    """Each dummy's level: its name without ``name_`` when every member starts so, else the column name."""
    prefix = f"{name}_"
    if all(str(c).startswith(prefix) and len(str(c)) > len(prefix) for c in members):
        return [str(c)[len(prefix):] for c in members]
    return [str(c) for c in members]


def _indicator(X: pd.DataFrame, name: str, members: list) -> np.ndarray:
    """The group's dummies as a 0/1 integer matrix, after the checks that make them one-hot."""
    block = X[members]
    if block.isna().to_numpy().any():
        bad = [c for c in members if block[c].isna().any()]
        raise InputError(f"group {name!r}: column {bad[0]!r} has missing values; one-hot columns hold 0 or 1.")
    try:
        values = block.to_numpy(dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"group {name!r}: its columns must be numeric or boolean 0/1 (one-hot columns).") from None
    if not np.isin(values, (0.0, 1.0)).all():
        col = members[int(np.flatnonzero(~np.isin(values, (0.0, 1.0)).all(axis=0))[0])]
        raise InputError(f"group {name!r}: column {col!r} holds values other than 0 and 1; a group joins one-hot "
                         "columns.")
    hot = values.sum(axis=1)
    if (hot > 1).any():
        raise InputError(f"group {name!r}: {int((hot > 1).sum()):,} row(s) have more than one of its columns set; "
                         "a group joins one-hot columns, at most one of which is 1 in a row.")
    return values.astype(np.int8)


def collapse(X: pd.DataFrame, resolved: Mapping) -> tuple[pd.DataFrame, dict]:
    """``X`` with each group's dummies replaced by one categorical column (where the first dummy was), and
    ``{name: {member column: level}}``."""
    if not isinstance(X, pd.DataFrame):
        raise InputError("groups (--group) name columns, so the data must be a table with column names.")
    out, level_of = X, {}
    for name, members in resolved.items():
        ind = _indicator(out, name, members)
        levels = _levels(name, members)
        if len(set(levels)) < len(levels) or NONE_LEVEL in levels:
            levels = [str(c) for c in members]
        values = np.where(ind.any(axis=1), np.asarray(levels, dtype=object)[ind.argmax(axis=1)], NONE_LEVEL)
        cats = levels + ([NONE_LEVEL] if (~ind.any(axis=1)).any() else [])
        column = pd.Categorical(values, categories=cats, ordered=False)
        at = list(out.columns).index(members[0])
        out = out.drop(columns=members)
        out.insert(at, name, column)
        level_of[name] = dict(zip(members, levels))
    return out, level_of


class _Named:
    """A OneHotEncoder's ``feature_name_combiner``: the dummy's own column name (a class, so the Pipeline pickles)."""

    def __init__(self, column):
        self.column = column

    def __call__(self, feature, category):
        return str(self.column)


def wrap_model(model, columns, level_of: Mapping, dtypes: Mapping, collapsed: pd.DataFrame):
    """A Pipeline: the dummies written back from the collapsed columns (in ``columns``' order and ``dtypes``), then
    ``model``.  Its first step is fitted on ``collapsed``; the model is not refitted."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder

    if not (hasattr(model, "predict") or hasattr(model, "predict_proba")):
        raise InputError("groups (--group) need a model with predict or predict_proba (an estimator or Pipeline), "
                         "not a plain function; collapse the columns in the function instead.")
    group_of = {c: g for g, members in level_of.items() for c in members}
    steps = []
    for c in columns:
        if c in group_of:
            g = group_of[c]
            dt = dtypes[c] if isinstance(dtypes[c], np.dtype) and dtypes[c].kind in "biuf" else np.float64
            enc = OneHotEncoder(categories=[[level_of[g][c]]], handle_unknown="ignore", sparse_output=False, dtype=dt,
                                feature_name_combiner=_Named(c))
            steps.append((f"{g}={level_of[g][c]}", enc, [g]))
        else:
            steps.append((f"column {c}", "passthrough", [c]))
    ct = ColumnTransformer(steps, remainder="drop", verbose_feature_names_out=False).set_output(transform="pandas")
    ct.fit(collapsed)
    return Pipeline([("groups", ct), ("model", model)])


def apply_groups(groups: Mapping, model, X, compare: Mapping, train):
    """``(model, X, compare, train, notes)`` with every group collapsed and every model wrapped (all unchanged
    when ``groups`` is empty)."""
    if not groups:
        return model, X, compare, train, ()
    if not isinstance(X, pd.DataFrame):
        raise InputError("groups (--group) name columns, so the data must be a table with column names.")
    resolved = resolve_groups(groups, X.columns)
    collapsed, level_of = collapse(X, resolved)
    dtypes = dict(X.dtypes.items())

    def wrap(m):
        return wrap_model(m, list(X.columns), level_of, dtypes, collapsed)

    model = wrap(model)
    compare = {k: wrap(m) for k, m in compare.items()}
    if train is not None and isinstance(train, (tuple, list)) and len(train) in (2, 3):
        if not isinstance(train[0], pd.DataFrame) or list(train[0].columns) != list(X.columns):
            raise InputError("train= X_train must have the audit data's columns for the groups (--group) to apply.")
        train = (collapse(train[0], resolved)[0], *train[1:])
    notes = tuple(
        f"Feature group {g!r}: the one-hot columns {', '.join(map(str, members))} are audited as one categorical "
        f"feature; at each of its levels exactly one of them is 1"
        + (f" (at level {NONE_LEVEL!r}, none)" if NONE_LEVEL in collapsed[g].cat.categories else "")
        + ", so no PD sets two, and its PDs are computed through the model with the columns written back."
        for g, members in resolved.items())
    return model, collapsed, compare, train, notes
