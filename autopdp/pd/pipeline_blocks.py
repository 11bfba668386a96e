"""Brute force through a column-separable Pipeline: preprocess once, substitute the feature's block.

Most of a scikit-learn Pipeline's brute-force cost is often its preprocessing (pandas, a
OneHotEncoder on object columns) repeated on every augmented copy of the data, while the final
estimator is cheap.  When every output column of the preprocessing depends on exactly one input
column (*column-separable*), setting input column ``j`` to a grid value ``v`` changes only the
output columns ``j`` maps to (its *block*), and to values that depend on ``v`` alone.  So the
background is transformed once to ``Z``; for each grid point the block's values are read from the
transform of a tiny frame (one row per grid point), and the final estimator predicts on ``Z`` with
that block replaced (dense arrays or scipy.sparse CSR alike).  The final estimator then sees the
same rows as through the full pipeline: the PD, ICE and std are those of brute force.

Separability is recognised by type, never assumed: the preprocessing (every Pipeline step before
the final one) may only hold the transformers listed in :data:`SEPARABLE` (checked recursively
through ColumnTransformers and Pipelines, remainder ``drop`` or ``passthrough``), each with the
settings that keep it per-column (a SimpleImputer that drops all-missing columns is refused).
Anything else (a FunctionTransformer, PolynomialFeatures, a custom transformer) leaves the plain
brute-force path in charge.  Each feature set is also checked at run time: on a few probe rows at
every grid point the substituted predictions must equal the full pipeline's (else that set takes
the plain path).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .data import Frame
from .engine import Augmenter, assemble

__all__ = ["BlockPlan", "BlocksUnavailable", "plan_blocks", "SEPARABLE", "PROBE_TOLERANCE", "NOTE", "WORDS"]

#: The per-column transformers (by class name, checked with isinstance against scikit-learn's classes).
SEPARABLE = ("OneHotEncoder", "OrdinalEncoder", "StandardScaler", "MinMaxScaler", "MaxAbsScaler", "RobustScaler",
             "SimpleImputer", "KBinsDiscretizer")

#: Largest difference allowed between substituted and full-pipeline predictions on the probe rows,
#: relative to 1 + |prediction|: the same inputs reach the final estimator, so only the summation
#: order of a sparse product may differ (~1e-16).
PROBE_TOLERANCE = 1e-10

#: The note of every PD computed so (:func:`autopdp.pd.engine.brute_force_many` adds it; the audit words it).
NOTE = ("Brute force on the preprocessed data: the Pipeline's column-separable preprocessing applied once, the "
        "feature's encoded columns substituted at each grid value and the final estimator predicting (the same "
        "numbers as the full pipeline; checked on probe rows).")

#: How the audit's method notes word such PDs ("... computed <WORDS> on all rows ...").
WORDS = ("by brute force on the data preprocessed once (the Pipeline's final estimator predicted at every grid value "
         "with the feature's encoded columns substituted: the full pipeline's numbers)")

#: Rows of the background the run-time check predicts on (every grid point of the set on each).
PROBE_ROWS = 4


class BlocksUnavailable(Exception):
    """The substitution does not apply (the message says why)."""


# ---------------------------------------------------------------- structure, by type

def _classes():
    from sklearn import compose, impute, pipeline, preprocessing

    per_column = tuple(getattr(preprocessing, n, None) or getattr(impute, n) for n in SEPARABLE)
    return compose.ColumnTransformer, pipeline.Pipeline, per_column


def _column_map(est, n_in: int) -> np.ndarray:
    """``src`` with ``src[o]`` the input column output column ``o`` of fitted ``est`` depends on (alone)."""
    ColumnTransformer, Pipeline, per_column = _classes()
    if est is None or (isinstance(est, str) and est == "passthrough"):
        return np.arange(n_in)
    if isinstance(est, str):
        raise BlocksUnavailable(f"step {est!r}")
    if type(est) is Pipeline:
        src = np.arange(n_in)
        for _, step in est.steps:
            src = src[_column_map(step, len(src))]
        return src
    if type(est) is ColumnTransformer:
        return _column_transformer_map(est, n_in)
    if _is_identity(est):
        return np.arange(n_in)
    if type(est) not in per_column:
        raise BlocksUnavailable(f"{type(est).__name__} is not a per-column transformer autopdp recognises")
    name = type(est).__name__
    if getattr(est, "n_features_in_", n_in) != n_in:
        raise BlocksUnavailable(f"{name} was fitted on {est.n_features_in_} columns, not {n_in}")
    if name == "OneHotEncoder":
        sizes = getattr(est, "_n_features_outs", None)
        if sizes is None or len(sizes) != n_in:
            raise BlocksUnavailable("OneHotEncoder without per-feature output sizes")
        return np.repeat(np.arange(n_in), np.asarray(sizes, dtype=np.intp))
    if name == "KBinsDiscretizer":
        if est.encode == "ordinal":
            return np.arange(n_in)
        return np.repeat(np.arange(n_in), np.asarray(est.n_bins_, dtype=np.intp))
    if name == "SimpleImputer":
        empty = np.asarray(pd.isna(pd.Series(np.asarray(est.statistics_, dtype=object))), dtype=bool)
        if empty.any() and not getattr(est, "keep_empty_features", False):
            raise BlocksUnavailable("a SimpleImputer dropped all-missing columns")
        src = np.arange(n_in)
        indicator = getattr(est, "indicator_", None)
        if getattr(est, "add_indicator", False) and indicator is not None:
            src = np.concatenate([src, np.asarray(indicator.features_, dtype=np.intp)])
        return src
    return np.arange(n_in)  # the scalers and OrdinalEncoder: one output per input, in order


def _is_identity(est) -> bool:
    """A FunctionTransformer without a function: how a fitted ColumnTransformer stores 'passthrough'."""
    from sklearn.preprocessing import FunctionTransformer

    return type(est) is FunctionTransformer and est.func is None


def _column_transformer_map(ct, n_in: int) -> np.ndarray:
    inputs = getattr(ct, "_transformer_to_input_indices", None)
    outputs = getattr(ct, "output_indices_", None)
    if inputs is None or outputs is None:
        raise BlocksUnavailable("a ColumnTransformer without its column indices")
    width = max((s.stop for s in outputs.values()), default=0)
    src = np.full(width, -1, dtype=np.intp)
    for name, trans, _ in ct.transformers_:
        if isinstance(trans, str) and trans == "drop":
            continue
        cols = np.asarray(inputs.get(name, []), dtype=np.intp)
        out = outputs[name]
        if out.stop - out.start == 0:
            continue
        if np.any(cols >= n_in):
            raise BlocksUnavailable("a ColumnTransformer column outside its input")
        sub = _column_map(trans, len(cols))
        if len(sub) != out.stop - out.start:
            raise BlocksUnavailable(f"the outputs of {type(trans).__name__} could not be mapped to its inputs")
        src[out] = cols[sub]
    if np.any(src < 0):
        raise BlocksUnavailable("a ColumnTransformer output not mapped to an input")
    return src


def _split(model):
    """``(preprocessing, final)`` of a Pipeline of two or more steps (else BlocksUnavailable)."""
    from sklearn.pipeline import Pipeline

    if type(model) is not Pipeline or len(model.steps) < 2:
        raise BlocksUnavailable("the model is not a scikit-learn Pipeline with preprocessing")
    final = model.steps[-1][1]
    if final is None or isinstance(final, str):
        raise BlocksUnavailable("the Pipeline has no final estimator")
    if getattr(model, "transform_input", None):
        raise BlocksUnavailable("the Pipeline transforms metadata (transform_input)")
    return model[:-1], final


# ---------------------------------------------------------------- the plan


class BlockPlan:
    """The background transformed once, each input column's block, and the final estimator's adapter.

    Attributes
    ----------
    blocks : list of ndarray
        ``blocks[j]``: the preprocessed columns input column ``j`` maps to (empty when it is dropped).
    sparse : bool
        Whether the preprocessing gives a scipy.sparse matrix (kept as CSR).
    """

    def __init__(self, frame: Frame, adapter, pre, final, src: np.ndarray, Z):
        import dataclasses

        self.frame = frame
        self.pre = pre
        self.final_adapter = dataclasses.replace(adapter, model=final)
        self.full_adapter = adapter
        self.final = final
        self.blocks = [np.flatnonzero(src == j) for j in range(frame.n_features)]
        self.columns = None
        if isinstance(Z, pd.DataFrame):  # set_output(transform="pandas"): the final estimator knows the names
            self.columns = Z.columns
            Z = _numeric_array(Z)
        self.sparse = hasattr(Z, "tocsr")
        if self.sparse:
            Z = Z.tocsr()
            if Z.dtype.kind not in "biuf":
                raise BlocksUnavailable("the preprocessed data is not numeric")
            Z.sum_duplicates()
        else:
            Z = np.asarray(Z)
            if Z.dtype.kind not in "biuf":
                raise BlocksUnavailable("the preprocessed data is not numeric")
        if Z.shape != (frame.n_rows, src.shape[0]):
            raise BlocksUnavailable(f"the preprocessing gave {Z.shape[1]} columns, {src.shape[0]} expected")
        self.Z = Z
        self.note = NOTE
        self.checked: dict[tuple, str] = {}  # each set's grids -> "" (substitution exact) or why not
        self._values: dict[tuple, np.ndarray] = {}  # each feature grid's block values (G, block width)
        self._rest: tuple = ((), None)  # the last CSR Z without some columns (one set's segments run in a row)

    def __getstate__(self):  # sent to workers without the cached matrix
        state = dict(self.__dict__)
        state["_rest"] = ((), None)
        return state

    def without(self, cols: np.ndarray):
        """CSR ``Z`` without the stored entries of columns ``cols``; the last one is kept (a set's segments run
        one after another, so each set builds it once and only one is held)."""
        key = tuple(int(c) for c in cols)
        if self._rest[0] != key or self._rest[1] is None:
            self._rest = (key, _without(self.Z, cols))
        return self._rest[1]

    def row_bytes(self, n_targets: int) -> int:
        """Bytes one augmented row costs in a model call (its copies while it is built, and the output)."""
        if self.sparse:
            per = self.Z.nnz / max(self.Z.shape[0], 1) + 1
            return int(3 * 12 * per + 16 * max(n_targets, 1) + 64)
        return int(2 * self.Z.itemsize * self.Z.shape[1] + 16 * max(n_targets, 1) + 64)

    # -- feature sets

    @staticmethod
    def _key(spec) -> tuple:
        return spec.position, tuple(repr(v) for v in spec.grid)

    def substitution(self, specs, points: list[np.ndarray]) -> "_Substitution":
        """The augmenter of one feature set whose grid points (C order of the grids) are ``points``.

        The block values at a grid point are those of each feature at its own value (each output column
        depends on one input column), read from :meth:`prepare`'s transforms.
        """
        self.prepare([specs])
        cols = np.concatenate([self.blocks[s.position] for s in specs])
        per_feature = [self._values[self._key(s)] for s in specs]
        if len(specs) == 1:
            values = per_feature[0]
        else:
            n1 = per_feature[1].shape[0]
            G = per_feature[0].shape[0] * n1
            index = np.arange(G)
            values = np.concatenate([per_feature[0][index // n1], per_feature[1][index % n1]], axis=1)
        if len(points[0]) != values.shape[0]:
            raise BlocksUnavailable("the grid points do not match the feature grids")
        order = np.argsort(cols, kind="stable")
        return _Substitution(self, cols[order], values[:, order])

    def prepare(self, spec_sets) -> None:
        """Transform every feature's grid not seen yet, all in one call (one row per grid value)."""
        todo = {}
        for specs in spec_sets:
            for s in specs:
                if self._key(s) not in self._values:
                    todo.setdefault(self._key(s), s)
        if not todo:
            return
        parts = [Augmenter(self.frame, [s])(np.array([0]), [s.grid]) for s in todo.values()]
        out = self.pre.transform(assemble(self.frame, parts))
        if isinstance(out, pd.DataFrame):
            out = _numeric_array(out)
        out = out.tocsr() if hasattr(out, "tocsr") else np.asarray(out)
        start = 0
        dtype = self.Z.dtype if self.Z.dtype.kind == "f" else np.float64
        for key, s in todo.items():
            block = out[start:start + s.size][:, self.blocks[s.position]]
            block = block.toarray() if hasattr(block, "toarray") else block
            self._values[key] = np.asarray(block, dtype=dtype)
            start += s.size

    def check_many(self, spec_sets) -> None:
        """Check every set not checked yet on the probe rows at all its grid points, in one call each way:
        the substituted predictions must equal the full pipeline's (``checked`` records why not)."""
        from .engine import _grid_points

        todo = []
        for specs in spec_sets:
            key = tuple(self._key(s) for s in specs)
            if key not in self.checked and key not in [k for k, _ in todo]:
                todo.append((key, specs))
        if not todo:
            return
        n = self.frame.n_rows
        rows = np.unique(np.linspace(0, n - 1, min(PROBE_ROWS, n)).astype(np.intp))
        try:
            self.prepare([specs for _, specs in todo])
            subs, fulls = [], []
            probe_Z = self.Z[rows]
            for _, specs in todo:
                points = _grid_points(specs)
                subs.append(self.substitution(specs, points)(np.arange(rows.size), 0, len(points[0]), base=probe_Z))
                fulls.append(Augmenter(self.frame, specs)(rows, points))
            got = np.asarray(self.final_adapter(self.stack(subs)), dtype=float)
            want = np.asarray(self.full_adapter(assemble(self.frame, fulls)), dtype=float)
            if got.shape != want.shape:
                raise BlocksUnavailable("the final estimator's output differs in shape from the pipeline's")
        except Exception as exc:  # noqa: BLE001 - any failure of the shortcut leaves the plain path in charge
            reason = str(exc) if isinstance(exc, BlocksUnavailable) else f"{type(exc).__name__}: {exc}"
            for key, _ in todo:
                self.checked[key] = reason
            return
        diff = np.abs(got - want) / (1.0 + np.abs(want))
        bad = ~((diff <= PROBE_TOLERANCE) | (np.isnan(got) & np.isnan(want)))
        start = 0
        for (key, specs), part in zip(todo, subs):
            k = part.shape[0]
            worst = bad[start:start + k]
            self.checked[key] = "" if not worst.any() else (
                f"substituted predictions differ from the pipeline's on probe rows (by up to "
                f"{float(np.nanmax(np.abs(got - want)[start:start + k])):.3g})")
            start += k

    def check(self, specs) -> str:
        """"" when substitution reproduces the full pipeline on the probe rows for this set, else why not."""
        self.check_many([specs])
        return self.checked[tuple(self._key(s) for s in specs)]

    # -- rows with per-row values (ALE moves each row to its own interval's edges)

    def rows_with(self, rows: np.ndarray, changes: dict):
        """The preprocessed rows ``rows`` with column ``pos`` set to ``changes[pos][i]`` in row i (a few distinct
        values each, such as ALE's interval edges): what the preprocessing gives for those rows, read off
        one transform of the distinct values."""
        from types import SimpleNamespace

        specs, index = [], []
        for pos, vals in changes.items():
            grid, inverse = np.unique(np.asarray(vals), return_inverse=True)
            specs.append(SimpleNamespace(position=pos, grid=grid, size=grid.shape[0], kind="numeric"))
            index.append(inverse.reshape(-1))
        self.prepare([[s] for s in specs])
        values = [self._values[self._key(s)] for s in specs]
        cols = [self.blocks[s.position] for s in specs]
        if self.sparse:
            import scipy.sparse as sp

            out = self.without(np.sort(np.concatenate(cols)))[rows]
            for c, v, idx in zip(cols, values, index):
                dense = np.zeros((v.shape[0], self.Z.shape[1]), dtype=self.Z.dtype)
                dense[:, c] = v
                out = out + sp.csr_matrix(dense)[idx]
            return out.tocsr()
        out = self.Z[rows].copy()
        for c, v, idx in zip(cols, values, index):
            out[:, c] = v[idx]
        return out

    def wrap(self, Zaug):
        """Augmented preprocessed rows in the container the final estimator was fitted on."""
        if self.columns is not None:
            return pd.DataFrame(Zaug.toarray() if self.sparse else Zaug, columns=self.columns, copy=False)
        return Zaug

    def stack(self, parts):
        """Concatenate augmented segments for one model call."""
        if len(parts) == 1:
            return self.wrap(parts[0])
        if self.sparse:
            import scipy.sparse as sp

            return self.wrap(sp.vstack(parts, format="csr"))
        return self.wrap(np.concatenate(parts, axis=0))


class _Substitution:
    """Augmented preprocessed rows of one feature set: ``Z[rows]`` with the set's block set per grid point."""

    def __init__(self, plan: BlockPlan, cols: np.ndarray, values: np.ndarray):
        self.plan = plan
        self.cols = cols
        self.values = values  # (G, k)
        if plan.sparse:
            self._prepare_sparse()

    def _prepare_sparse(self):
        import scipy.sparse as sp

        Z = self.plan.Z
        G, k = self.values.shape
        dense = np.zeros((G, Z.shape[1]), dtype=Z.dtype)
        dense[:, self.cols] = self.values
        self.block = sp.csr_matrix(dense)  # explicit zeros dropped, as a sparse transform stores none

    def __call__(self, rows: np.ndarray, g0: int, g1: int, base=None):
        """Rows ``rows`` repeated once per grid point g0..g1-1, row-major (as :class:`Augmenter`).

        ``base``: the preprocessed rows ``rows`` index (default: the whole background ``Z``)."""
        m, gb = rows.shape[0], g1 - g0
        if self.plan.sparse:
            rest = self.plan.without(self.cols) if base is None else _without(base, self.cols)
            part = rest[np.repeat(rows, gb)]
            block = self.block[np.tile(np.arange(g0, g1), m)]
            return (part + block).tocsr()
        aug = np.repeat((self.plan.Z if base is None else base)[rows], gb, axis=0)
        aug[:, self.cols] = np.tile(self.values[g0:g1], (m, 1))
        return aug


def _without(Z, cols: np.ndarray):
    """CSR ``Z`` with the stored entries of columns ``cols`` removed (the rest as they were)."""
    import scipy.sparse as sp

    keep = ~np.isin(Z.indices, cols)
    row_of = np.repeat(np.arange(Z.shape[0]), np.diff(Z.indptr))
    counts = np.bincount(row_of[keep], minlength=Z.shape[0])
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(Z.indptr.dtype)
    rest = sp.csr_matrix((Z.data[keep], Z.indices[keep], indptr), shape=Z.shape)
    rest.has_sorted_indices = Z.has_sorted_indices
    return rest


def _numeric_array(df: pd.DataFrame) -> np.ndarray:
    if not all(pd.api.types.is_numeric_dtype(dt) and not isinstance(dt, pd.CategoricalDtype) for dt in df.dtypes):
        raise BlocksUnavailable("the preprocessing gives non-numeric columns")
    return df.to_numpy(dtype=np.float64)


def plan_blocks(model, adapter, frame: Frame) -> BlockPlan:
    """A :class:`BlockPlan` for ``model`` on ``frame``, or :class:`BlocksUnavailable` with the reason."""
    if adapter.response == "callable":
        raise BlocksUnavailable("the model is a plain callable")
    if adapter.model is not model:
        raise BlocksUnavailable("the adapter does not call the model itself")
    pre, final = _split(model)
    names = getattr(pre, "feature_names_in_", None)
    if names is not None:
        if not frame.is_frame or [str(c) for c in names] != [str(k) for k in frame.keys]:
            raise BlocksUnavailable("the data's columns are not those the preprocessing was fitted on, in order")
    elif getattr(pre, "n_features_in_", frame.n_features) != frame.n_features:
        raise BlocksUnavailable("the data's column count differs from the preprocessing's")
    src = _column_map(pre, frame.n_features)
    Z = pre.transform(frame.data)
    return BlockPlan(frame, adapter, pre, final, src, Z)
