"""Choosing and running the exact tree path (see :mod:`autopdp.pd.tree.exact_pd`) for a group of feature sets.

The model is split into its preprocessing (all Pipeline steps but the last) and
the final tree model.  Each explained column must reach the trees through an
elementwise map: setting the column to a grid value changes exactly one column
of the preprocessed data, to a value that depends on the grid value only, and
over the whole data that column is a function of the explained column alone.
That is checked numerically on the data, not assumed from the step types.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pandas as pd

from ..data import Frame
from ..engine import Augmenter
from ..selfcheck import float32_sums
from .extract import MAX_TREE_BYTES, check_forest_size, extract_forest
from .onnx_trees import onnx_forest
from .ice import RowKernel
from .exact_pd import TreePathUnavailable, TreePD, boosting_offset, extract_ensemble

__all__ = ["TreePlan", "model_response", "plan_tree_path", "shared_plans", "METHODS"]

METHODS = ("auto", "brute", "tree", "recursion")


def _split(model):
    steps = getattr(model, "steps", None)
    if steps:
        if len(steps) == 1:
            return None, steps[0][1]
        return model[:-1], steps[-1][1]
    return None, model


def _as_array(Z) -> np.ndarray:
    if hasattr(Z, "toarray"):
        raise TreePathUnavailable("the preprocessing produces a sparse matrix")
    if isinstance(Z, pd.DataFrame):
        Z = Z.to_numpy()
    Z = np.asarray(Z)
    if Z.dtype.kind not in "biuf":
        raise TreePathUnavailable("the model's input is not numeric")
    return Z.astype(np.float64)


def _internal_encoding(final, P):
    """The final model's own input encoding (HGB's category encoder; XGBoost/LightGBM category codes)."""
    if getattr(final, "_preprocessor", None) is not None and hasattr(final, "_preprocess_X"):
        return np.asarray(final._preprocess_X(P, reset=False), dtype=np.float64)
    module = type(final).__module__
    if isinstance(P, pd.DataFrame) and (module.startswith("xgboost") or module.startswith("lightgbm")):
        cats = None
        if module.startswith("lightgbm"):
            cats = getattr(getattr(final, "booster_", None), "pandas_categorical", None)
        out = np.empty(P.shape, dtype=np.float64)
        k = 0
        for j, name in enumerate(P.columns):
            col = P[name]
            if isinstance(col.dtype, pd.CategoricalDtype):
                if cats is not None:
                    col = col.cat.set_categories(cats[k])
                k += 1
                codes = col.cat.codes.to_numpy().astype(np.float64)
                codes[codes < 0] = np.nan
                out[:, j] = codes
            else:
                try:
                    out[:, j] = col.to_numpy(dtype=np.float64, na_value=np.nan)
                except (TypeError, ValueError):
                    raise TreePathUnavailable("the model's input is not numeric") from None
        return out
    return None


class TreePlan:
    """The final tree model, the background as the trees see it, and the map of explained columns.

    Two exact engines: leaf counting (:mod:`autopdp.pd.tree.exact_pd`, PD averages of
    identity-link models with numeric splits and no missing values) and the
    per-row kernel (:mod:`autopdp.pd.tree.ice`: ICE, std, links, categorical
    splits, missing values).  At least one applies, or construction fails.
    """

    def __init__(self, model, adapter, frame: Frame, max_bytes: float = MAX_TREE_BYTES, rows_elsewhere: bool = False):
        self.pre, self.final = _split(model)
        self.adapter = adapter
        self.frame = frame
        self.encodes = self.pre is not None
        # rows_elsewhere (Dask): the rows' model matrix is made where they are (:meth:`filled`), from their own rows;
        # here only the first rows are encoded, for the checks below, and the whole matrix on first use (:attr:`Z`)
        P = self._pre(frame.take_rows(np.arange(min(frame.n_rows, 1000))).data if rows_elsewhere else frame.data)
        Z = _internal_encoding(self.final, P)
        if Z is not None:
            self.encodes = True
        else:
            if self.pre is None and frame.is_frame and not all(
                    pd.api.types.is_numeric_dtype(frame.dtype(j)) for j in range(frame.n_features)):
                raise TreePathUnavailable("the data has non-numeric columns and the model has no preprocessing")
            Z = _as_array(P)
        self.Z = None if rows_elsewhere else Z
        self.counting_unavailable = ""
        self._ensemble, self._ensemble_built = None, False  # leaf counting's, built when first needed (:attr:`ensemble`)
        self.rows_unavailable = ""
        self.forest = None
        try:
            if hasattr(self.final, "tree_ensemble"):  # an ONNX file's trees (autopdp.io.onnx_model.OnnxModel)
                self.forest, self.n_out = onnx_forest(self.final, adapter)
                check_forest_size(self.forest, max_bytes)
            else:
                self.forest, self.n_out = extract_forest(self.final, adapter, max_bytes)
            if self.forest.feature.size and int(self.forest.feature.max()) >= Z.shape[1]:
                raise TreePathUnavailable(f"the trees split on column {int(self.forest.feature.max())} of an input "
                                          f"of {Z.shape[1]} columns")
        except TreePathUnavailable as exc:
            self.rows_unavailable = str(exc)
        # leaf counting reads every row's model matrix here: not for a frame whose rows are on a cluster's workers
        if self.forest is None and (getattr(frame, "parts", None) is not None or self.ensemble is None):
            raise TreePathUnavailable(self.rows_unavailable or self.counting_unavailable)
        self._engine = None
        self._kernel = None
        self._maps: dict[tuple, tuple[int, np.ndarray]] = {}
        # (feature position, column of Z) pairs found to be a function of that feature alone over every row
        self._function_of: set[tuple[int, int]] = set()
        self._checked_offset = None  # a subset's: its parent's kernel offset, checked on every parent row
        self._own_raw_rows = None  # a subset's: its rows' own raw scores from the parent's kernel, when it had them
        self.model_response = None  # the model's own response on every row of the frame, once the kernel is checked
        self._checked_in_parts = False  # every row checked on its partition (:meth:`checked_elsewhere`)

    @property
    def Z(self) -> np.ndarray | None:
        """The rows as the trees see them (every row of :attr:`frame`), encoded on first use when the plan was made
        without them (``rows_elsewhere``, or a shell :meth:`filled` with its rows only); None for a shell."""
        if self._Z is None and self.frame is not None:
            self._Z = self._to_Z(self.frame.data)
        return self._Z

    @Z.setter
    def Z(self, value) -> None:
        self._Z = value

    def _rows_Z(self, rows) -> np.ndarray:
        """The model matrix of ``rows`` of the frame, encoding only those rows when the whole one is not made."""
        rows = np.asarray(rows, dtype=np.intp)
        return self._Z[rows] if self._Z is not None else self._to_Z(self.frame.take_rows(rows).data)

    def subset(self, rows, frame: Frame) -> "TreePlan":
        """This plan on ``frame``, the rows ``rows`` of this plan's frame, without new checks.

        The trees, the feature maps and the per-row kernel's offset carry over: this plan's kernel reproduced the
        model's response on every row, these rows included, and a feature map that held over all rows holds over
        some of them.  The kernel itself is rebuilt on the rows; leaf counting is rebuilt when first used.
        """
        return self.subset_shell().filled(frame, *self.rows_of(rows))

    def subset_shell(self) -> "TreePlan":
        """:meth:`subset` without its rows (no frame, no model matrix): what a row partition's task carries beside
        rows already on the worker (:meth:`filled` puts them in)."""
        import copy

        other = copy.copy(self)
        other.frame, other.Z, other._own_raw_rows, other.model_response = None, None, None, None
        other._ensemble, other._ensemble_built, other.counting_unavailable = None, False, ""
        other._checked_in_parts = False
        other._engine = None
        other._kernel = None
        other._maps = dict(self._maps)
        other._function_of = set(self._function_of)
        checked = self._checked_offset if self._kernel is None else self._kernel[1].offset
        other._checked_offset = None if checked is None else np.array(checked, dtype=float)
        return other

    def rows_of(self, rows) -> tuple:
        """``(Z, own)``: the model matrix of ``rows`` and their own raw scores when this plan's kernel has them (the
        same sums, read instead of walked again), or None."""
        rows = np.asarray(rows, dtype=np.intp)
        own = self._own_raw_rows if self._kernel is None else self._kernel[1]._own_raw
        Z = None if self._Z is None else np.ascontiguousarray(self._Z[rows])  # None: encoded where the rows go
        return Z, (None if own is None else np.ascontiguousarray(own[rows]))

    def filled(self, frame: Frame, Z, own) -> "TreePlan":
        """This shell (:meth:`subset_shell`) on ``frame`` with its model matrix ``Z`` and raw scores ``own``."""
        import copy

        other = copy.copy(self)
        other.frame, other.Z, other._own_raw_rows = frame, Z, own
        return other

    @property
    def ensemble(self):
        """Leaf counting's ensemble (None when counting does not apply: ``counting_unavailable`` says why), built
        on first use: a run that takes the per-row kernel (ICE, std) never pays for it."""
        if not self._ensemble_built:
            ensemble = None
            try:
                if np.isnan(self.Z).any():
                    raise TreePathUnavailable("the data has missing values in columns the trees see")
                ensemble = extract_ensemble(self.final, self.adapter, self.Z.shape[1])
            except TreePathUnavailable as exc:
                self.counting_unavailable = str(exc)
            self._ensemble, self._ensemble_built = ensemble, True
        return self._ensemble

    def _pre(self, X):
        if self.pre is None:
            return X
        try:
            return self.pre.transform(X)
        except (ValueError, TypeError) as exc:  # the preprocessing refuses this input (scikit-learn's input errors);
            # the brute path then calls the whole model, which reports that error if it matters
            raise TreePathUnavailable(f"the preprocessing failed: {type(exc).__name__}: {exc}") from None

    def _to_Z(self, X) -> np.ndarray:
        P = self._pre(X)
        Z = _internal_encoding(self.final, P)
        return _as_array(P) if Z is None else Z

    def raw_predict(self, z: np.ndarray) -> np.ndarray:
        final = self.final
        names = getattr(final, "feature_names_in_", None)
        zin = pd.DataFrame(z, columns=names) if names is not None else z
        method = "decision_function" if self.adapter.response == "decision_function" else "predict"
        return np.asarray(getattr(final, method)(zin), dtype=float)

    def mapped(self, spec) -> tuple[int, np.ndarray]:
        """(column of Z, grid values as the trees see them) for one explained feature."""
        key = (spec.position, tuple(spec.grid.tolist()))
        if key in self._maps:
            return self._maps[key]
        if not self.encodes:
            try:
                grid = np.asarray(spec.grid, dtype=float)
            except (TypeError, ValueError):
                raise TreePathUnavailable(f"{spec.name!r} has non-numeric levels") from None
            out = (spec.position, grid)
        else:
            out = self._probe(spec)
        self._maps[key] = out
        return out

    def _probe_rows(self) -> np.ndarray:
        return np.linspace(0, self.frame.n_rows - 1, min(self.frame.n_rows, 32)).astype(np.int64)

    def probe_many(self, specs) -> None:
        """Map every feature of ``specs`` not mapped yet with one preprocessing call for all of them (the
        preprocessing's fixed cost per call dominates a probe).  A feature whose probe fails here is left unmapped:
        :meth:`mapped` probes it alone and says why."""
        if not self.encodes:
            return
        todo, keys = [], set()
        for spec in specs:
            key = (spec.position, tuple(spec.grid.tolist()))
            if key not in self._maps and key not in keys:
                todo.append((key, spec))
                keys.add(key)
        if len(todo) < 2:
            return
        from ..engine import assemble

        rows = self._probe_rows()
        parts = [Augmenter(self.frame, [spec])(rows, [spec.grid]) for _, spec in todo]
        try:
            Z_all = self._to_Z(assemble(self.frame, parts))
        except (TreePathUnavailable, ValueError, TypeError):
            return  # a grid the preprocessing refuses: the one-by-one probes find which
        start = 0
        for key, spec in todo:
            stop = start + rows.size * spec.size
            try:
                self._maps[key] = self._check_probe(spec, rows, Z_all[start:stop].reshape(rows.size, spec.size, -1))
            except TreePathUnavailable:
                pass
            start = stop

    def _probe(self, spec):
        frame = self.frame
        rows = self._probe_rows()
        aug = Augmenter(frame, [spec])
        from ..engine import assemble

        Xp = assemble(frame, [aug(rows, [spec.grid])])
        try:
            Zp = self._to_Z(Xp).reshape(rows.size, spec.size, -1)
        except TreePathUnavailable:
            raise
        except (ValueError, TypeError) as exc:  # the preprocessing refuses grid values (e.g. an unknown category)
            raise TreePathUnavailable(f"the preprocessing failed on grid values: {type(exc).__name__}: {exc}") from None
        return self._check_probe(spec, rows, Zp)

    def _check_probe(self, spec, rows, Zp):
        """(column of Z, grid as the trees see it) from the probe rows' preprocessed grid ``Zp`` (rows, G, cols)."""
        frame = self.frame
        same = (Zp == Zp[:, :1, :]) | (np.isnan(Zp) & np.isnan(Zp[:, :1, :]))
        varies = ~np.all(same, axis=(0, 1))
        base = self._rows_Z(rows)
        base_changed = ~np.all((Zp[:, 0, :] == base) | (np.isnan(Zp[:, 0, :]) & np.isnan(base)), axis=0)
        cols = np.nonzero(varies | base_changed)[0]
        if cols.size != 1:
            raise TreePathUnavailable(
                f"{spec.name!r} does not reach the trees as one column (it changes {cols.size} columns)"
            )
        c = int(cols[0])
        col = Zp[:, :, c]
        if not np.all((col == col[:1]) | (np.isnan(col) & np.isnan(col[:1]))):
            raise TreePathUnavailable(f"the model's input for {spec.name!r} depends on other columns")
        # over the whole data, that column must be a function of the explained column alone (checked once per
        # feature and column: the data does not change with the grid)
        if (spec.position, c) not in self._function_of:
            key = pd.Series(frame.column(spec.position), dtype=object).astype(str)
            if pd.Series(self.Z[:, c]).groupby(key.to_numpy()).nunique().max() > 1:
                raise TreePathUnavailable(f"the model's input for {spec.name!r} also depends on other columns")
            self._function_of.add((spec.position, c))
        return c, Zp[0, :, c].astype(float)

    def _requests(self, spec_sets):
        self.probe_many([spec for specs in spec_sets for spec in specs])  # one preprocessing call for every grid
        requests = []
        for specs in spec_sets:
            maps = [self.mapped(s) for s in specs]
            requests.append(([c for c, _ in maps], [g for _, g in maps]))
        return requests

    @property
    def counting(self) -> bool:
        """Whether PD averages can come from leaf counting (identity link, numeric splits, no NaN)."""
        return self.ensemble is not None

    @property
    def per_row(self) -> bool:
        return self.forest is not None

    def averages(self, spec_sets, w) -> list[np.ndarray]:
        """PD averages by leaf counting."""
        if self.ensemble is None:
            raise TreePathUnavailable(self.counting_unavailable)
        requests = self._requests(spec_sets)
        if self._engine is None or not _same_weights(self._engine[0], w):
            self._engine = (w, TreePD(self.ensemble, self.Z, w), self._offset())
        _, engine, offset = self._engine
        return [pdv + offset.reshape((-1,) + (1,) * len(positions))
                for (positions, _), pdv in zip(requests, engine.many(requests))]

    def kernel(self, w) -> RowKernel:
        """The per-row kernel on this background, checked against the model's own predictions."""
        if self.forest is None:
            raise TreePathUnavailable(self.rows_unavailable)
        if self._kernel is not None and _same_weights(self._kernel[0], w):
            return self._kernel[1]
        kernel = RowKernel(self.forest, self.Z, w, np.zeros(self.forest.value.shape[1]))
        if self._checked_offset is not None:  # rows of a plan whose kernel was checked on them (:meth:`subset`)
            kernel.set_offset(self._checked_offset, self._own_raw_rows)
            self._kernel = (w, kernel)
            return kernel
        recon = kernel.predictions()  # raw scores without the constant
        offset = self.first_offset(recon[0])
        self.model_response = _verify(kernel, recon + offset, self.adapter, self.frame, self.n_out)
        # checked against the model: kept for :func:`autopdp.pd.tree.moves.moved_response` and the kernel's own check
        kernel.set_offset(offset, recon + offset)
        self._kernel = (w, kernel)
        return kernel

    def constant_in_trees(self) -> bool:
        """Whether the trees' sum is the raw score itself (no constant left out)."""
        return _constant_in_trees(self.final, self.forest)

    def first_offset(self, recon0=None) -> np.ndarray:
        """The constant the trees leave out of the raw score, read off the first row (``recon0``: the trees' sum
        on it, when known)."""
        offset = np.zeros(self.forest.value.shape[1])
        if not self.constant_in_trees():
            if recon0 is None:
                recon0 = RowKernel(self.forest, self._rows_Z([0]), np.ones(1), offset).predictions()[0]
            raw0 = _raw_score(self.final, self._pre(self.frame.take_rows(np.arange(1)).data))
            offset = raw0.reshape(-1)[: offset.size] - recon0
        return offset

    def checked_elsewhere(self, offset, model_response, own_raw) -> None:
        """Every row was checked against the model in parts (:func:`autopdp.pd.tree.parts.check_on_dask`): the kernel
        takes ``offset`` (and the rows' raw scores ``own_raw`` when known here; the parts keep theirs) without
        predicting again."""
        self._checked_offset = np.asarray(offset, dtype=float).copy()
        self.model_response, self._own_raw_rows = model_response, own_raw
        self._kernel, self._checked_in_parts = None, True

    def prepare(self, w, rows: bool = False) -> None:
        """Build what every feature set shares (once, before work is shared out).

        A per-row kernel that fails its check against the model is dropped; when
        no engine is left, :class:`TreePathUnavailable` says why.  ``rows``: the
        work needs every row's values (ICE, std), so leaf counting is built only
        when the per-row kernel is unavailable.
        """
        if self.forest is not None and self._checked_in_parts:
            return  # every row checked in parts (:meth:`checked_elsewhere`): the engines are built where the rows are
        if self.forest is not None:
            try:
                self.kernel(w)
            except TreePathUnavailable as exc:
                self.forest, self.rows_unavailable = None, str(exc)
        if rows and self.forest is not None:
            return
        if self.ensemble is not None:
            self.averages([], w)
        if self.forest is None and self.ensemble is None:
            raise TreePathUnavailable(self.rows_unavailable or self.counting_unavailable)

    def exact(self, spec_sets, w, keep_rows=None, keeps=None):
        """Exact (average, std, individual) per feature set from the per-row kernel."""
        kernel = self.kernel(w)
        cols = self.adapter.columns if self.adapter.columns is not None else np.arange(self.n_out)
        return kernel.run(self._requests(spec_sets), cols, keep_rows, keeps)

    def moved(self, spec_sets, w, lower):
        """Each row's response at the ends of its interval (1D sets) or corners of its cell (2D sets)
        (:func:`autopdp.pd.tree.moves.moved_response` on the per-row kernel)."""
        from .moves import moved_response

        kernel = self.kernel(w)
        cols = self.adapter.columns if self.adapter.columns is not None else np.arange(self.n_out)
        return moved_response(kernel, self._requests(spec_sets), cols, lower)

    def _offset(self) -> np.ndarray:
        offset = self.ensemble.offset
        if np.isnan(offset).any():
            offset = boosting_offset(self.raw_predict, self.ensemble, self._rows_Z([0]))
        return offset


def _constant_in_trees(final, forest) -> bool:
    """Whether the trees hold the model's whole constant: scikit-learn's averaging forests, and an ONNX file's trees
    (its base values are a one-leaf tree, :mod:`autopdp.pd.tree.onnx_trees`); else the constant is read off the
    model's raw score on one row."""
    if hasattr(final, "tree_ensemble"):
        return True
    return forest.link == 0 and _is_averaging_forest(final)


def _is_averaging_forest(final) -> bool:
    from sklearn.ensemble import BaseEnsemble
    from sklearn.tree import BaseDecisionTree

    module = type(final).__module__
    if module.startswith(("xgboost", "lightgbm")):
        return False
    return isinstance(final, BaseDecisionTree) or (
        isinstance(final, BaseEnsemble) and not hasattr(final, "learning_rate"))


def _raw_score(final, P) -> np.ndarray:
    """The model's raw score (margin) on the rows ``P`` (input of the final step)."""
    module = type(final).__module__
    if module.startswith("xgboost"):
        return np.asarray(final.predict(P, output_margin=True), dtype=float)
    if module.startswith("lightgbm"):
        return np.asarray(final.predict(P, raw_score=True), dtype=float)
    if hasattr(final, "_raw_predict"):
        if not hasattr(final, "_bin_mapper"):  # classic gradient boosting predicts on float32
            P = np.ascontiguousarray(np.asarray(P, dtype=np.float32))
        return np.asarray(final._raw_predict(P), dtype=float)
    raise TreePathUnavailable(f"cannot read the raw score of {type(final).__name__}")


def _verify(kernel, raw, adapter, frame, n_out):
    """The reconstructed response of every row must be the model's own; else the path is refused.  Returns the
    model's own response (n_rows, n_targets), as ``adapter`` gives it."""
    theirs, gap, top = verify_parts(kernel, raw, adapter, frame, n_out)
    verify_verdict(gap, top, adapter)
    return theirs


def verify_parts(kernel, raw, adapter, frame, n_out):
    """``(theirs, gap, top)``: the model's own response on the rows, the largest gap of the reconstructed one to it
    and the largest size of it (rows checked in parts combine by max: :func:`verify_verdict`)."""
    from .ice import apply_link

    mine = apply_link(raw, kernel.forest.link, kernel.forest.scale)
    cols = adapter.columns if adapter.columns is not None else np.arange(n_out)
    mine = mine[:, cols]
    theirs = np.vstack([adapter(frame.take_rows(np.arange(r0, min(frame.n_rows, r0 + 100_000))).data)
                        for r0 in range(0, frame.n_rows, 100_000)])
    if theirs.shape != mine.shape:
        raise TreePathUnavailable(f"the tree dump gives {mine.shape[1]} outputs, the model {theirs.shape[1]}")
    gap = float(np.max(np.abs(mine - theirs))) if mine.size else 0.0
    top = float(np.max(np.abs(theirs))) if theirs.size else 0.0
    return theirs, gap, top


def verify_verdict(gap: float, top: float, adapter) -> None:
    """Refuse the path when the largest gap exceeds the tolerance (relative to the response's size, at least 1)."""
    tol = 2e-5 if float32_sums(adapter.model) else 1e-9
    if not np.isfinite(gap) or gap > tol * max(1.0, top):
        raise TreePathUnavailable(
            f"the extracted trees do not reproduce the model's predictions (largest gap {gap:.2e})")


_SHARED: list | None = None  # [(key, model, data, plan or the reason it is unavailable)] inside shared_plans()


@contextmanager
def shared_plans():
    """Within the block, :func:`plan_tree_path` builds one plan per model, response and data.

    An audit computes 1D PDs, 2D PDs and ALE of the same model on the same
    rows: the trees are extracted and checked against the model's predictions
    once instead of for every call.  Data and model are matched by identity
    (the same objects), and the plans are dropped when the block ends.
    """
    global _SHARED
    outer = _SHARED
    _SHARED = [] if outer is None else outer
    try:
        yield
    finally:
        if outer is None:
            _SHARED = None


def share_subset(model, frame: Frame, rows, sub: Frame) -> None:
    """Within :func:`shared_plans`: the plans of ``model`` on ``frame`` also serve ``sub``, the rows ``rows`` of
    ``frame`` (:meth:`TreePlan.subset`), so a PD on a row sample of data already planned is not planned and checked
    again (a refit's 2D PDs on the ICE rows of its 1D PDs' data).  Nothing happens outside the block or when no
    plan of ``model`` on ``frame`` was built."""
    if _SHARED is None:
        return
    for k, m, data, plan in list(_SHARED):
        if m is model and data is frame.data and isinstance(plan, TreePlan):
            _SHARED.append((k, model, sub.data, plan.subset(rows, sub)))


def shared_adapter(model, response, target, make):
    """Within :func:`shared_plans`: one response adapter per model, ``response`` and ``target`` (``make()`` builds
    it, probing the model, the first time); outside the block, ``make()``.  A refit's 1D PDs, 2D PDs and link
    probe its model once instead of three times."""
    if _SHARED is None:
        return make()
    key = ("adapter", str(response), repr(target))
    for k, m, _, adapter in list(_SHARED):
        if k == key and m is model:
            return adapter
    adapter = make()
    _SHARED.append((key, model, None, adapter))
    return adapter


def model_response(model, adapter, frame: Frame):
    """Within :func:`shared_plans`: the model's own response on every row of ``frame`` (as ``adapter`` gives it,
    predicted in row chunks) when a plan of ``model`` on ``frame`` for ``adapter`` (of any table bound) checked its
    trees against it; else None."""
    if _SHARED is None or adapter.response in ("crisp", "callable"):
        return None
    key = (adapter.response, None if adapter.columns is None else tuple(np.asarray(adapter.columns).tolist()))
    for k, m, data, plan in _SHARED:
        if k[:2] == key and m is model and data is frame.data and isinstance(plan, TreePlan) \
                and plan.adapter is adapter and plan.model_response is not None:
            return plan.model_response
    return None


def forget_plans(model) -> None:
    """Within :func:`shared_plans`: drop the plans (and adapters) of ``model`` (a refit's, once its PDs are
    done)."""
    if _SHARED is not None:
        _SHARED[:] = [entry for entry in _SHARED if entry[1] is not model]


def _same_weights(a, b) -> bool:
    return a is b or (np.shape(a) == np.shape(b) and np.array_equal(a, b))


def plan_tree_path(model, adapter, frame: Frame, max_bytes: float = MAX_TREE_BYTES,
                   rows_elsewhere: bool = False) -> TreePlan:
    """A :class:`TreePlan` whose tables stay within ``max_bytes`` (``max_batch_mb``), or :class:`TreePathUnavailable`
    with the reason; ``rows_elsewhere`` (made here, not found): see :class:`TreePlan`."""
    if adapter.response in ("crisp", "callable"):
        raise TreePathUnavailable(f"response {adapter.response!r}")
    if _SHARED is None:
        return TreePlan(model, adapter, frame, max_bytes, rows_elsewhere)
    key = (adapter.response, None if adapter.columns is None else tuple(np.asarray(adapter.columns).tolist()),
           float(max_bytes))
    for k, m, data, plan in _SHARED:
        if k == key and m is model and data is frame.data:
            if isinstance(plan, str):
                raise TreePathUnavailable(plan)
            return plan
    try:
        plan = TreePlan(model, adapter, frame, max_bytes, rows_elsewhere)
    except TreePathUnavailable as exc:
        _SHARED.append((key, model, frame.data, str(exc)))
        raise
    _SHARED.append((key, model, frame.data, plan))
    return plan
