"""Input validation for :func:`autopdp.audit`, once at the entry: the data, the target, the weights, the
model's columns and classes, the pairs and the memory a run would need, each refused with a message that
names the problem and what to do (beside :mod:`autopdp.io.loading`, which validates the files).
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import pandas as pd

from ..config import AuditConfig, ReportOptions, split_config
from ..io.tree_arrays import check_tree_arrays
from ..pd.data import Frame, as_frame, check_unique_columns, describe_missing, probe_rows, refuse_dask, sample_rows
from ..pd.kept import KeptValues, map_kept
from ..errors import InputError, InputTypeError
from ..pd.grids import resolve_categorical
from ..pd.profiles import frame_profiles, one_part
from .columns import explained_columns
from ..io.loading import column_error, did_you_mean
from .summary import target_name_of
from ..pd.setup import _reject_infinite
from ..pd.response import make_adapter
from ..utils.jsonable import json_scalar
from ..scores.scoring import importance_table

__all__ = ["MIN_ROWS", "COMFORTABLE_ROWS", "choose_pairs", "pair_count"]



#: Fewer rows than this is an error: PDs, grids and scores need data to average over.
MIN_ROWS = 10
#: Below this many rows the report carries a sample-size warning.
COMFORTABLE_ROWS = 200


# ---------------------------------------------------------------- helpers
def _y_facts(values, _payload) -> tuple:
    """A row partition's target facts: its rows, missing values, first value and whether another differs."""
    v = values[:, 0]
    return v.size, int(np.count_nonzero(pd.isna(v))), (v[0] if v.size else None), bool(v.size and (v != v[0]).any())


def _check_kept_y(y: KeptValues, n: int) -> KeptValues:
    """:func:`_check_y` of a target kept on the row partitions, from each partition's facts."""
    facts = map_kept(_y_facts, None, y)
    rows, missing = sum(f[0] for f in facts), sum(f[1] for f in facts)
    if rows != n:
        raise InputError(f"y has {rows} values but X has {n} rows; give one target per row.")
    if missing:
        raise InputError(f"the target y has {missing} missing value(s); drop those rows or fill them before auditing.")
    firsts = [f[2] for f in facts if f[0]]
    if not (any(f[3] for f in facts) or any(v != firsts[0] for v in firsts)):
        raise InputError("the target y is constant (a single class or value); an audit needs a target that varies.")
    return y


def _check_y(y, n: int):
    if y is None:
        return None
    if isinstance(y, KeptValues):
        return _check_kept_y(y, n)
    refuse_dask(y, "y")
    if isinstance(y, pd.DataFrame):
        if y.shape[1] != 1:
            raise InputError(f"y must be one column, got a DataFrame with {y.shape[1]} columns.")
        y = y.iloc[:, 0]
    arr = np.asarray(y)
    if arr.ndim != 1:
        raise InputError(f"y must be 1-D (one target per row), got shape {arr.shape}.")
    if arr.shape[0] != n:
        raise InputError(f"y has {arr.shape[0]} values but X has {n} rows; give one target per row.")
    missing = pd.isna(arr)  # on the values' own type: no object copy of every value (40 bytes a number)
    if missing.any():
        raise InputError(f"the target y has {int(missing.sum())} missing value(s); drop those rows or fill them "
                         "before auditing.")
    if not arr.size or not (arr != arr[0]).any():
        raise InputError("the target y is constant (a single class or value); an audit needs a target that varies.")
    return arr


def _apply_categories(X, categories):
    """Columns with a declared ordinal order become ordered pandas Categoricals (levels in that order)."""
    if not categories:
        return X
    if not isinstance(X, pd.DataFrame):
        raise InputError("config key 'categories' names columns, so X must be a DataFrame.")
    check_unique_columns(X)
    changed = {}
    for name, order in categories.items():
        if name not in X.columns:
            raise column_error("config key 'categories' names the column", name, X.columns)
        col = X[name]
        as_text = {str(v): v for v in order}
        values = col.dropna()
        unknown = sorted({str(v) for v in values.unique()} - set(as_text))
        if unknown:
            shown = ", ".join(repr(u) for u in unknown[:8]) + (" ..." if len(unknown) > 8 else "")
            raise InputError(
                f"column {name!r} has values that config key 'categories.{name}' does not list: {shown}; "
                "list every level in order."
            )
        mapped = col.map(lambda v: v if pd.isna(v) else as_text[str(v)])
        changed[name] = pd.Categorical(mapped, categories=list(order), ordered=True)
    return X.assign(**changed)


def _check_weights(sample_weight, n: int):
    if sample_weight is None:
        return None
    refuse_dask(sample_weight, "sample_weight")
    try:
        w = np.asarray(pd.to_numeric(pd.Series(np.asarray(sample_weight).ravel()), errors="raise"), dtype=float)
    except (ValueError, TypeError):
        raise InputError("sample_weight must be numbers (one weight per row).") from None
    if w.shape[0] != n:
        raise InputError(f"sample_weight has {w.shape[0]} values but X has {n} rows; give one weight per row.")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        bad = int((~np.isfinite(w) | (w < 0)).sum())
        raise InputError(f"sample_weight has {bad} missing, infinite or negative value(s); weights must be finite and >= 0.")
    if not w.sum() > 0:
        raise InputError("sample_weight sums to 0: at least one row needs a positive weight.")
    return w


def choose_pairs(spec, features: list, res1, names: list, notes: list, limit: tuple = (None, "")) -> list:
    """The 2D pairs to compute: every pair, none, the top N by a cheap screen, or a given list.

    ``top:N`` ranks every pair by the geometric mean of its two features' 1D PD
    importance (Greenwell's spread of the 1D PD, already computed), so no 2D PD
    is computed to choose them.  ``limit``: (the most pairs, why) from :func:`pair_limit`: every pair or
    ``top:N`` above it is the top pairs of the same screen, with a note.
    """
    all_pairs = list(itertools.combinations(features, 2))
    if spec is False or len(features) < 2:
        return []
    most, why = limit
    asked = len(all_pairs) if spec is True else (min(int(spec[4:]), len(all_pairs))
                                                   if isinstance(spec, str) and spec.startswith("top:") else None)
    if asked is not None and most is not None and asked > most:
        chosen = choose_pairs(f"top:{most}", features, res1, names, [])
        notes.append(f"2D PDs computed for {most:,} of the {asked:,} pairs asked for ({why}): the pairs whose two "
                     "features have the largest geometric mean of 1D PD importance, a screen that needs no 2D PD; "
                     "interactions between less important features are not examined.")
        return chosen
    if spec is True:
        return all_pairs
    if isinstance(spec, str) and spec.startswith("top:"):
        n = int(spec[4:])
        if n >= len(all_pairs):
            return all_pairs
        imp = importance_table(res1).max(axis=1)
        score = {p: float(np.sqrt(max(imp.get(p[0], 0.0), 0.0) * max(imp.get(p[1], 0.0), 0.0))) for p in all_pairs}
        order = sorted(range(len(all_pairs)), key=lambda i: (-score[all_pairs[i]], i))
        chosen = sorted(order[:n])  # keep column order among the chosen
        notes.append(
            f"2D PDs computed for {n} of the {len(all_pairs)} pairs (pairs = top:{n}): the pairs whose two features "
            "have the largest geometric mean of 1D PD importance, a screen that needs no 2D PD; interactions between "
            "less important features are not examined."
        )
        return [all_pairs[i] for i in chosen]
    out = []
    for a, b in spec:
        for f in (a, b):
            if f not in names:
                raise column_error("pairs (--pairs) feature", f, names, "data's features")
        if a not in features or b not in features:
            notes.append(f"Pair {a} × {b} was not computed: {a if a not in features else b} is constant in the data.")
            continue
        out.append((a, b))
    if out:
        notes.append(f"2D PDs computed only for the {len(out)} pair(s) asked for (pairs = {', '.join(f'{a}:{b}' for a, b in out)}).")
    return out


def _check_rows(n: int, notes: list) -> None:
    """Too few rows is an error; few rows is a warning in the report."""
    if n < MIN_ROWS:
        raise InputError(
            f"too few rows: the data has {n} row{'s' if n != 1 else ''}; an audit needs at least {MIN_ROWS} "
            f"(and {COMFORTABLE_ROWS}+ for scores that stand clear of sampling noise)."
        )
    if n < COMFORTABLE_ROWS:
        notes.append(
            f"Small sample: the data has only {n} rows (fewer than {COMFORTABLE_ROWS}). Each grid point's PD, "
            "incidence and density weight rest on few rows, so scores and rankings carry sampling noise; do not read "
            "small differences between features as findings."
        )


def _check_labels(y: np.ndarray | None, model, adapter) -> None:
    """A classifier's observed labels must be among its classes, or incidence compares nothing."""
    if y is None or not adapter.is_classifier:
        return
    classes = adapter.classes
    if classes is None:
        return
    classes = list(np.asarray(classes).tolist())
    known = {str(c) for c in classes}
    if isinstance(y, KeptValues):  # each partition's labels, found there
        seen = list(pd.unique(np.concatenate(map_kept(_labels_of, None, y))))
    else:
        seen = list(pd.unique(np.asarray(y)))  # on the labels' own type: no object copy of every value
    # a label is known by its text, or (a model without classes_, whose classes are 0 .. k-1) by its value:
    # y of 0.0/1.0 or False/True for the classes 0, 1
    unknown = [v for v in seen if str(v) not in known and not (adapter.inferred_classes and _numeric_in(v, classes))]
    if unknown:
        shown = ", ".join(repr(json_scalar(v)) for v in unknown[:8]) + (" ..." if len(unknown) > 8 else "")
        observed = ", ".join(repr(json_scalar(v)) for v in seen[:8]) + (" ..." if len(seen) > 8 else "")
        source = (f" (it has no classes_: they are the positions of its {len(classes)} predict_proba columns)"
                  if adapter.inferred_classes else "")
        raise InputError(
            f"the target y holds values that are not classes of the model: {shown}. The model's classes are "
            f"{', '.join(repr(json_scalar(c)) for c in classes)}{source}; y holds {observed}. Encode y the way the "
            "model was trained (e.g. map '>50K' to 1; on the command line --target-map '>50K=1,<=50K=0')"
            + (", give the model a classes_ attribute" if adapter.inferred_classes else "")
            + " or pass the matching target column."
        )


def _labels_of(values, _payload) -> np.ndarray:
    return np.asarray(pd.unique(values[:, 0]))


def _numeric_in(value, classes) -> bool:
    """``value`` equals one of ``classes`` as a number (``1.0`` or ``True`` for the class ``1``)."""
    if isinstance(value, (str, bytes)) or value is None:
        return False
    try:
        return any(float(value) == float(c) for c in classes)
    except (TypeError, ValueError):
        return False


def _predictions(adapter, frame: Frame, max_batch_rows: int = 200_000) -> np.ndarray:
    """The model's response on every data row, (n_rows, n_targets), predicted once per audit."""
    parts = []
    for r0 in range(0, frame.n_rows, max_batch_rows):
        rows = np.arange(r0, min(frame.n_rows, r0 + max_batch_rows))
        parts.append(adapter(frame.take_rows(rows).data))
    return np.vstack(parts)


def _comparison_predictions(data, compare: dict, config, shape) -> dict:
    """Each comparison model's response on the rows, in the audited model's target order (when it has the same)."""
    out = {}
    frame = data.frame
    for name, other in compare.items():
        try:
            other_adapter = make_adapter(other, config.response, config.target,
                                         probe=frame.take_rows(np.arange(min(5, frame.n_rows))).data)
            pred = _predictions(other_adapter, frame)
        except (ValueError, TypeError, AttributeError) as exc:
            raise InputError(f"comparison model {name!r}: {exc}") from exc
        if pred.shape == tuple(shape) and list(getattr(other_adapter, "targets", [])) == list(getattr(data.adapter, "targets", [])):
            out[name] = pred
    return out


def _align_columns(model, frame: Frame, notes: list) -> Frame:
    """Match X to the columns the model was fitted on: missing ones are an error, extra ones are left out."""
    needed = getattr(model, "feature_names_in_", None)
    if needed is None or not frame.is_frame:
        return frame
    needed = [str(c) for c in needed]
    have = list(frame.names)
    missing = [c for c in needed if c not in have]
    if missing:
        spare = [c for c in have if c not in needed]  # a near match among the columns the model does not know
        named = ", ".join(f"{c!r}" + (f" ({hint.strip().rstrip('?').replace('Did you mean', 'did you mean')}?)"
                                      if (hint := did_you_mean(c, spare)) else "") for c in missing[:10])
        raise InputError(
            f"X lacks {len(missing)} column(s) the model was fitted on: {named}"
            f"{' and more' if len(missing) > 10 else ''}; pass the data with every feature the model needs, named "
            "as in training."
        )
    extra = [c for c in have if c not in needed]
    if not extra and have == needed:
        return frame
    if extra:
        notes.append(f"Columns the model does not use were left out: {', '.join(extra)}.")
    keys = [frame.keys[have.index(c)] for c in needed]
    return frame.select(keys)


def _check_comparison(name: str, other, model, frame: Frame):
    cols = getattr(other, "feature_names_in_", None)
    mine = getattr(model, "feature_names_in_", None)
    if cols is not None and mine is not None and list(cols) != list(mine):
        missing = sorted(set(mine) - set(cols))
        extra = sorted(set(cols) - set(mine))
        raise InputError(
            f"comparison model {name!r} was trained on other columns than the audited model "
            f"(missing {missing}, extra {extra}); compare models trained on the same features."
        )
    if cols is not None and frame.is_frame and not set(cols) <= set(frame.names):
        raise InputError(f"comparison model {name!r} needs columns {sorted(set(cols) - set(frame.names))} that X lacks.")


def dask_inputs(X, y, sample_weight, scheduler) -> tuple:
    """``(X, y, sample_weight, scheduler, client to close)``: a dask DataFrame ``X`` as a
    :class:`~autopdp.pd.partframe.PartFrame` on its cluster (:mod:`autopdp.pd.daskframe`), with its target (a
    column's name or a dask Series) and weights (a column or a dask Series), both kept in its parts, matched to
    its rows partition by partition; the client made for an address is closed by the
    caller.  Any other ``X`` passes unchanged (a dask ``y`` or ``sample_weight`` beside it is refused later)."""
    from ..pd.daskframe import is_dask_collection, is_dask_frame

    if not is_dask_frame(X):
        return X, y, sample_weight, scheduler, None
    from ..pd.daskframe import _client_of, dask_frame_and_target

    client, own = _client_of(scheduler)
    target = y if isinstance(y, str) or is_dask_collection(y) else None
    try:
        frame, values = dask_frame_and_target(client, X, weight=sample_weight, target=target)
    except BaseException:
        if own:
            client.close()
        raise
    return frame, (y if target is None else values), None, client, client if own else None


def check_part_frame(X, config: AuditConfig) -> None:
    """A frame whose rows are on a cluster's workers (:class:`autopdp.pd.partframe.PartFrame`) is refused, in one
    line, with the config keys that still read every row of a column group or label here."""
    if getattr(X, "parts", None) is None:
        return
    used = [key for key, on in (("groups", config.groups), ("cohort", config.cohort), ("categories", config.categories))
            if on]
    if used:
        raise InputError(f"config key {used[0]!r} is not available for data whose rows stay on the Dask cluster's "
                         "workers (a Parquet folder with --scheduler, or a dask DataFrame); leave it out, or read the "
                         "data here (without --scheduler, or a single file).")
    from ..pd.partframe import MAX_GATHER_ROWS

    if config.max_rows is not None and X.n_rows > config.max_rows > MAX_GATHER_ROWS:
        raise InputError(f"max_rows = {config.max_rows:,} on data whose rows stay on the Dask cluster's workers: a row "
                         f"sample is brought to this process, at most {MAX_GATHER_ROWS:,} rows; lower max_rows, or "
                         "leave it out to audit every row on the workers.")


def _resolved(config, compare, report=None) -> tuple[AuditConfig, dict, ReportOptions]:
    """The config as an :class:`AuditConfig`, the comparison models as a checked dict and the report's cover
    as :class:`ReportOptions` (``report``, else the cover keys of a dict ``config``, else those given to
    ``AuditConfig`` the deprecated way, else the defaults)."""
    cover = None
    if config is None:
        config = AuditConfig()
    elif isinstance(config, Mapping):
        config, cover = split_config(config)
    elif not isinstance(config, AuditConfig):
        raise InputTypeError(f"config must be an AuditConfig or a dict, got {type(config).__name__}.")
    if report is None:
        report = cover or config.legacy_report() or ReportOptions()
    elif isinstance(report, Mapping):
        report = ReportOptions.from_dict(report)
    elif not isinstance(report, ReportOptions):
        raise InputTypeError(f"report must be a ReportOptions or a dict, got {type(report).__name__}.")
    compare = dict(compare or {})
    for name in compare:
        if not isinstance(name, str) or not name or any(c in name for c in "=:"):
            raise InputError(f"comparison model names must be non-empty text without '=' or ':', got {name!r}.")
    return config, compare, report


@dataclass(frozen=True, eq=False)
class _Inputs:
    """Stage 0's output: the validated data and what every later stage reads from it."""

    full: Frame  # every row, columns aligned to the model
    frame: Frame  # the rows the PDs average over (``max_rows``)
    y: np.ndarray | None  # every row's target
    y_pd: np.ndarray | None  # the target of ``frame``'s rows
    weights_full: np.ndarray | None
    weights: np.ndarray | None
    target_name: str | None
    names: list  # the features asked for
    features: list  # those that are not constant
    adapter: Any  # the model's response (:func:`autopdp.pd.response.make_adapter`)
    rng: np.random.Generator  # row sampling, continued by the 2D stage
    notes: tuple
    rows: Any = None  # the positions in ``full`` of ``frame``'s rows (None: every row, in order)
    cohort: Any = None  # (column name, every row's cohort label) of cohort=, or None


def on_cluster(data: _Inputs, scheduler) -> _Inputs:
    """``data`` with its PDs' rows bound to ``scheduler`` (:attr:`autopdp.pd.data.Frame.scheduler`): every per-row
    pass of the audit over them (the scores' cell tables and associations, the self-check's PD on every row, the
    data summary) then runs on the workers' row partitions, as a ``PartFrame``'s does.  None: ``data`` as it is."""
    if scheduler is None or data.frame.scheduler is not None:
        return data
    return dataclasses.replace(data, frame=dataclasses.replace(data.frame, scheduler=scheduler))


def _validated_inputs(model, X, y, sample_weight, config: AuditConfig, compare: dict, random_state) -> _Inputs:
    """Stage 0: validate X once (:func:`autopdp.pd.data.as_frame`), y, the weights, the config's
    feature names and the model's response; sample rows (``max_rows``); drop constant features."""
    X = _apply_categories(X, config.categories)
    full = as_frame(X)
    notes: list[str] = []
    full = _align_columns(model, full, notes)
    for label, m in {"the model": model, **{f"comparison model {n!r}": c for n, c in compare.items()}}.items():
        check_tree_arrays(m, label, n_columns=len(full.names))  # before anything predicts: trees in bounds of X
    _check_rows(full.n_rows, notes)
    if hasattr(full, "with_target") and (isinstance(y, str) or isinstance(y, KeptValues)):
        # a PartFrame: the target is a column of its parts, kept beside their rows on the workers
        full = full.with_target(y) if isinstance(y, str) else full
        y = full.target_values()
    target_name = full.target_name if isinstance(y, KeptValues) else target_name_of(y)
    y = _check_y(y, full.n_rows)
    weights_full = _check_weights(sample_weight, full.n_rows)
    if hasattr(full, "weight_source"):  # a PartFrame: its weights are its weight column, brought here
        if sample_weight is not None:
            raise InputError("the rows of X are on a Dask cluster's workers: their sample weights are a column of its "
                             "parts (parquet_frame(..., weight=NAME)), not sample_weight.")
        weights_full = full.weights()
        if weights_full is not None:
            _check_weights(weights_full, full.n_rows)
        what = "partitions of a dask DataFrame computed" if full.sources else "Parquet parts read"
        notes.append(f"The data's {full.n_rows:,} rows stayed on the Dask cluster's workers, each of its "
                     f"{len(full.parts):,} {what} and kept by one worker"
                     f"{' with its target' if isinstance(y, KeptValues) else ''}; the per-row work ran "
                     f"there, and the calling process brought over "
                     f"{'' if isinstance(y, KeptValues) or y is None else 'the target, '}the weights, one feature "
                     "column at a time and the sampled rows.")
    rng = np.random.default_rng(random_state)
    rows = sample_rows(full.n_rows, config.max_rows, rng)
    frame = full if rows is None else full.take_rows(rows)
    y_pd = None if y is None else (y if rows is None else y.at(rows)[:, 0] if isinstance(y, KeptValues) else y[rows])
    weights = None if weights_full is None else (weights_full if rows is None else weights_full[rows])
    if rows is not None:
        notes.append(f"PDs average over a random sample of {frame.n_rows:,} of the {full.n_rows:,} rows (max_rows).")

    names = list(frame.names) if config.features is None else [frame.names[frame.position_of(f)] for f in config.features]
    for f in list(config.expected_monotonic) + list(config.lipschitz):
        frame.position_of(f)  # unknown feature names in the config are errors
    for f in config.regions:
        if f not in frame.names:
            raise column_error("regions (--regions) feature", f, frame.names, "data's features")
    if isinstance(config.pairs, tuple):  # misspelled pair names are errors before any PD is computed
        for f in {f for pair in config.pairs for f in pair}:
            if f not in frame.names:
                raise column_error("pairs (--pairs) feature", f, frame.names, "data's features")
    columns = frame_profiles(frame, cap=max(0, int(config.integer_as_categorical or 0)))  # one pass, every column
    kinds = resolve_categorical(frame, config.categorical_features, config.integer_as_categorical, columns)
    features, unresolvable, levels, skipped = explained_columns(frame, names, kinds, columns, one_part(frame))
    notes.extend(skipped)
    if not features:
        if not unresolvable:
            raise InputError("every feature is constant in the data: there is nothing to audit.")
        shown = ", ".join(repr(n) for n in unresolvable[:5]) + (" ..." if len(unresolvable) > 5 else "")
        raise InputError(
            "every feature is constant in the data, or effectively constant (the values of "
            f"{shown} span too small a range to resolve in floating point): there is nothing to audit."
        )
    _reject_infinite(frame, kinds, columns)
    _check_pair_count(config, features)
    adapter = make_adapter(model, config.response, config.target, probe=frame.take_rows(probe_rows(frame, columns=columns)).data,
                           missing=describe_missing(frame, columns))
    missing = {f for f in features if columns[frame.names.index(f)].n_missing}
    _check_memory(config, frame, features, {f: levels.get(f) for f in features}, max(1, len(adapter.targets)), missing)
    _check_labels(y, model, adapter)
    if adapter.inferred_classes:
        notes.append(
            f"The model ({type(model).__name__}) has no classes_ attribute; it offers predict_proba, so it is explained "
            f"as a classifier through its probabilities ({adapter.response}), with classes "
            f"{', '.join(str(c) for c in np.asarray(adapter.classes).tolist())}: the positions of its predict_proba "
            "columns, as for a target encoded 0, 1, ... (give the model a classes_ attribute to name them)."
        )
    for name, other in compare.items():
        _check_comparison(name, other, model, frame)
    return _Inputs(full=full, frame=frame, y=y, y_pd=y_pd, weights_full=weights_full, weights=weights,
                   target_name=target_name, names=names, features=features, adapter=adapter, rng=rng,
                   notes=tuple(notes), rows=rows)


def pair_count(pairs, n_features: int) -> int:
    """How many 2D PDs the config's ``pairs`` asks for among ``n_features`` audited features."""
    every = n_features * (n_features - 1) // 2
    if pairs is True:
        return every
    if not pairs:
        return 0
    if isinstance(pairs, str):  # "top:N"
        return min(int(pairs.split(":", 1)[1]), every)
    return len(pairs)


def _check_pair_count(config: AuditConfig, features: list) -> None:
    """A list of pairs longer than ``max_pairs`` is an error before any PD is computed, naming the count (every
    pair, or ``top:N``, above the bounds is audited on the top pairs instead: :func:`pair_limit`)."""
    if not isinstance(config.pairs, (tuple, list)):
        return
    count = pair_count(config.pairs, len(features))
    if count > config.max_pairs:
        raise InputError(
            f"pairs (--pairs) lists {count:,} 2D PDs, above max_pairs ({config.max_pairs:,}); list fewer, use "
            f"--pairs top:N (pairs = \"top:N\"), or raise max_pairs (--max-pairs).")


def pair_limit(config: AuditConfig, rows: int, cells: int) -> tuple[int, str]:
    """The most 2D PDs an audit computes, of ``rows`` rows and ``cells`` grid cells each, and why (for the note):
    ``max_pair_cells`` bounds rows x pairs x cells, ``max_pairs`` the count."""
    per_pair = max(1, int(rows) * int(cells))
    by_cost = max(1, int(config.max_pair_cells) // per_pair)
    if by_cost < config.max_pairs:
        return by_cost, (f"a pair of {rows:,} rows x {cells:,} grid cells evaluates {per_pair:,} cells, and "
                         f"max_pair_cells ({config.max_pair_cells:,}) allows {by_cost:,} of them; raise it with "
                         "--max-pair-cells")
    return config.max_pairs, f"more than max_pairs ({config.max_pairs:,}; raise it with --max-pairs)"


def _check_memory(config: AuditConfig, frame: Frame, features: list, levels: dict, n_targets: int,
                  missing: set) -> None:
    """Each array that grows with the input (one PD's ICE curves, the out-of-distribution check's model) fits in
    ``max_batch_mb``, checked before any work; the augmented rows are batched to it by the engine."""
    from ..trust.ood import support_bytes, support_width
    from ..trust.surrogate import BYTES_PER_CELL, MIN_ROWS as SURROGATE_MIN_ROWS, surrogate_width

    cap = float(config.max_batch_mb) * 1e6
    hint = "or raise max_batch_mb"

    def axis(f, resolution):
        n = levels.get(f)
        return resolution if n is None else min(n, config.max_levels)

    rows = frame.n_rows
    ice_rows = rows if config.subsample is None else min(rows, config.subsample)
    if features:  # every 1D PD keeps its ICE curves: all of them together
        cells = sum(axis(f, config.grid_resolution) for f in features)
        need = 8.0 * ice_rows * cells * n_targets
        if need > cap:
            raise InputError(
                f"the ICE curves of the {len(features):,} 1D PDs ({ice_rows:,} rows x {cells:,} grid points in all x "
                f"{n_targets} target(s)) need {need / 1e6:,.0f} MB, above max_batch_mb ({config.max_batch_mb:,.0f} MB); "
                f"lower subsample or grid_resolution, audit fewer features, {hint}.")
    n_pairs = min(pair_count(config.pairs, len(features)), config.max_pairs)
    if n_pairs:  # the 2D PDs' ICE surfaces (std_rows rows; every row when std_rows = 0), held until the noise tests ran
        sizes = sorted((axis(f, config.grid_resolution_2d) for f in features), reverse=True)[:2]
        cells = sizes[0] * sizes[-1]
        rows_2d = min(config.std_rows, rows) if config.std_rows else rows
        need = 8.0 * n_pairs * rows_2d * cells * n_targets
        if need > cap:
            raise InputError(
                f"the ICE surfaces of the {n_pairs:,} 2D PDs ({rows_2d:,} rows x up to {cells:,} cells x {n_targets} "
                f"target(s) each) need {need / 1e6:,.0f} MB, above max_batch_mb ({config.max_batch_mb:,.0f} MB); "
                f"lower std_rows or grid_resolution_2d, fewer pairs (--pairs top:N), {hint}.")
    categorical = {f: "categorical" if levels.get(f) is not None else "numeric" for f in features}
    facts = {f: (levels[f], f in missing) for f, k in categorical.items() if k != "numeric"}  # levels, any missing
    if "correlation" in config.criteria_2d and pair_count(config.pairs, len(features)):
        # the test of independence of two categorical features tabulates every level against every level
        if isinstance(config.pairs, tuple):
            candidates = [p for p in config.pairs if levels.get(p[0]) and levels.get(p[1])]
        else:  # every pair, or a top:N screen not yet known: the two with the most levels
            most = sorted((f for f in features if levels.get(f)), key=lambda f: -levels[f])[:2]
            candidates = [tuple(most)] if len(most) == 2 else []
        for a, b in candidates:
            need = 24.0 * levels[a] * levels[b]  # the table, its expected counts and a temporary
            if need > cap:
                raise InputError(
                    f"the association test of {a!r} x {b!r} ({levels[a]:,} x {levels[b]:,} levels) needs "
                    f"{need / 1e6:,.0f} MB, above max_batch_mb ({config.max_batch_mb:,.0f} MB); leave an ID-like "
                    f"column out (features), leave 'correlation' out of criteria_2d, list the pairs, {hint}.")
    if "surrogate_importance" in config.criteria_2d and features:
        width = surrogate_width(frame, categorical, max_levels=config.max_levels, facts=facts)
        need = float(BYTES_PER_CELL * min(rows, SURROGATE_MIN_ROWS) * width)  # wider designs sample fewer rows
        if need > cap:
            raise InputError(
                f"the surrogate model of {len(features):,} features needs {need / 1e6:,.0f} MB on its "
                f"{min(rows, SURROGATE_MIN_ROWS):,} fewest rows ({width:,} columns: a "
                f"categorical feature takes one per level, up to max_levels = {config.max_levels}), above max_batch_mb "
                f"({config.max_batch_mb:,.0f} MB); audit fewer features (features), lower max_levels, leave "
                f"'surrogate_importance' out of criteria_2d {hint}.")
    if "ood_share" in config.utilities and features:
        width = support_width(frame, categorical, config.max_levels, facts)
        need = support_bytes(min(rows, 4000), width)
        if need > cap:
            raise InputError(
                f"the out-of-distribution check of {len(features):,} features needs {need / 1e6:,.0f} MB ({width:,} "
                f"embedded columns: a categorical feature takes one per level, up to max_levels = {config.max_levels}), "
                f"above max_batch_mb ({config.max_batch_mb:,.0f} MB); audit fewer features (features), lower "
                f"max_levels, leave 'ood_share' out of utilities {hint}.")
