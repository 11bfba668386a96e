"""Choosing and running the exact tree path (see :mod:`autopdp.trees`) for a group of feature sets.

The model is split into its preprocessing (all Pipeline steps but the last) and
the final tree model.  Each explained column must reach the trees through an
elementwise map: setting the column to a grid value changes exactly one column
of the preprocessed data, to a value that depends on the grid value only, and
over the whole data that column is a function of the explained column alone.
That is checked numerically on the data, not assumed from the step types.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .data import Frame
from .engine import Augmenter
from .trees import TreePathUnavailable, TreePD, boosting_offset, extract_ensemble

__all__ = ["TreePlan", "plan_tree_path", "METHODS"]

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


class TreePlan:
    """The final tree model, the background as the trees see it, and the map of explained columns."""

    def __init__(self, model, adapter, frame: Frame):
        self.pre, self.final = _split(model)
        self.adapter = adapter
        self.frame = frame
        if self.pre is None:
            if frame.is_frame and not all(pd.api.types.is_numeric_dtype(t) for t in frame.data.dtypes):
                raise TreePathUnavailable("the data has non-numeric columns and the model has no preprocessing")
            self.Z = _as_array(frame.data)
        else:
            try:
                self.Z = _as_array(self.pre.transform(frame.data))
            except TreePathUnavailable:
                raise
            except Exception as exc:  # the brute path will report the model's own error if it matters
                raise TreePathUnavailable(f"the preprocessing failed: {type(exc).__name__}: {exc}") from None
        if np.isnan(self.Z).any():
            raise TreePathUnavailable("the data has missing values in columns the trees see")
        self.ensemble = extract_ensemble(self.final, adapter, self.Z.shape[1])
        self._engine = None
        self._maps: dict[tuple, tuple[int, np.ndarray]] = {}

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
        if self.pre is None:
            try:
                grid = np.asarray(spec.grid, dtype=float)
            except (TypeError, ValueError):
                raise TreePathUnavailable(f"{spec.name!r} has non-numeric levels") from None
            out = (spec.position, grid)
        else:
            out = self._probe(spec)
        self._maps[key] = out
        return out

    def _probe(self, spec):
        frame = self.frame
        m = min(frame.n_rows, 32)
        rows = np.linspace(0, frame.n_rows - 1, m).astype(np.int64)
        G = spec.size
        aug = Augmenter(frame, [spec])
        from .engine import assemble

        Xp = assemble(frame, [aug(rows, [spec.grid])])
        try:
            Zp = _as_array(self.pre.transform(Xp)).reshape(m, G, -1)
        except TreePathUnavailable:
            raise
        except Exception as exc:
            raise TreePathUnavailable(f"the preprocessing failed on grid values: {exc}") from None
        varies = np.any(Zp != Zp[:, :1, :], axis=(0, 1))
        base_changed = np.any(Zp[:, 0, :] != self.Z[rows], axis=0)
        cols = np.nonzero(varies | base_changed)[0]
        if cols.size != 1:
            raise TreePathUnavailable(
                f"{spec.name!r} does not reach the trees as one column (it changes {cols.size} columns)"
            )
        c = int(cols[0])
        if not np.all(Zp[:, :, c] == Zp[:1, :, c]):
            raise TreePathUnavailable(f"the model's input for {spec.name!r} depends on other columns")
        # over the whole data, that column must be a function of the explained column alone
        key = pd.Series(frame.column(spec.position), dtype=object).astype(str)
        if pd.Series(self.Z[:, c]).groupby(key.to_numpy()).nunique().max() > 1:
            raise TreePathUnavailable(f"the model's input for {spec.name!r} also depends on other columns")
        return c, Zp[0, :, c].astype(float)

    def averages(self, spec_sets, w) -> list[np.ndarray]:
        requests = []
        for specs in spec_sets:
            maps = [self.mapped(s) for s in specs]
            requests.append(([c for c, _ in maps], [g for _, g in maps]))
        if self._engine is None or self._engine[0] is not w:
            self._engine = (w, TreePD(self.ensemble, self.Z, w), self._offset())
        _, engine, offset = self._engine
        return [pdv + offset.reshape((-1,) + (1,) * len(positions))
                for (positions, _), pdv in zip(requests, engine.many(requests))]

    def _offset(self) -> np.ndarray:
        offset = self.ensemble.offset
        if np.isnan(offset).any():
            offset = boosting_offset(self.raw_predict, self.ensemble, self.Z[:1])
        return offset


def plan_tree_path(model, adapter, frame: Frame) -> TreePlan:
    """A :class:`TreePlan`, or :class:`TreePathUnavailable` with the reason."""
    if adapter.response in ("crisp", "callable"):
        raise TreePathUnavailable(f"response {adapter.response!r}")
    return TreePlan(model, adapter, frame)
