"""Stage: PD results -> utility scores, importance, interaction and 2D criteria.

Pure functions of the computed PDs and the data; no model calls.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .association import association_tests
from ..pd.data import Frame
from ..errors import InputError
from ..pd.grids import FeatureSpec, nearest_grid_index, small_index
from .importance import pd_importance, pd_interaction
from .utilities import (
    score_ice_variance,
    score_incidence,
    score_lipschitz,
    score_monotonicity,
    score_similarity,
    score_slope,
    similarity_id,
)
from .utilities import TRUST_IDS
from .utilities.base import UtilityScore, axis_positions, best_over_targets
from .utilities.incidence import KeptObserved, observed_values
from .utilities.lipschitz import default_bound
from .failures import failed_score
from ..pd.rows import map_rows
from ..pd.sampling import ice_row_weights
from .cells import CellTables, GridCells, cell_tables, flat_cells, grid_key
from .spread import THRESHOLD_VARIANCE_Z, ThresholdSpread, kept_spread_summary
from ..pd.kept import KeptValues, as_kept, map_kept

__all__ = ["ScoringInputs", "threshold_spread", "score_result", "grid_cells", "flat_cells", "importance_table", "interaction_table", "pair_criteria"]


def threshold_spread(predictions) -> np.ndarray | None:
    """The definition, as a row-long array (the audit keeps :class:`~autopdp.scores.spread.ThresholdSpread`, the
    same numbers summarised): each row's share of the relative sampling error of the prediction sd ``sd`` (population ``ddof=0``, as the
    materiality threshold takes it), linearised: ``sd_hat / sd - 1 ~ sum_i r_i`` with
    ``r_i = ((p_i - mean)^2 - sd_hat^2) / (2 n sd_hat^2)``.  ``predictions``: ``(n,)`` or ``(n, targets)``; returns
    the same shape (None when an sd is 0 or not finite).  The threshold ``materiality x sd`` then moves by
    ``threshold x sum_i r_i``: what the null of a minimum-effect test carries besides the PD's own noise.

    The shares are scaled so that their variance ``sum r_i^2`` (``(kurtosis - 1) / 4n``) is its one-sided 95% upper
    confidence limit, ``sum q_i + 1.645 x sqrt(sum (q_i - mean q)^2)`` with ``q_i = r_i^2``: a sample of
    heavy-tailed predictions underestimates its kurtosis exactly when it missed the tails, which is when its sd,
    and so its threshold, is low (issue 53: at skewness +2 and 300 rows an interaction at the population's
    threshold was a finding in 7.3% of 2,000 runs with the point estimate, 5.3% with the upper limit)."""
    if predictions is None:
        return None
    p = np.asarray(predictions, dtype=float)
    one = p.ndim == 1
    p = p.reshape(p.shape[0], -1)
    if p.shape[0] < 2 or not np.isfinite(p).all():
        return None
    d2 = (p - p.mean(axis=0)) ** 2
    var = d2.mean(axis=0)
    if not (var > 0).all():
        return None
    r = (d2 - var) / (2.0 * p.shape[0] * var)
    q = r * r
    total = q.sum(axis=0)
    upper = total + THRESHOLD_VARIANCE_Z * np.sqrt(((q - q.mean(axis=0)) ** 2).sum(axis=0))
    r = r * np.sqrt(np.where(total > 0, upper / np.where(total > 0, total, 1.0), 1.0))
    return r[:, 0] if one else r


class ScoringInputs:
    """What the utilities need besides the PD itself (shared by every PDP)."""

    def __init__(self, frame: Frame, y, is_classifier: bool, prediction_std: np.ndarray, config, comparisons,
                 sample_weight=None, predictions=None, comparison_predictions=None, link=None):
        self.frame = frame
        #: the model's margin as the ICE-variance link scale (:class:`autopdp.pd.margin.MarginLink`), or None
        self.link = link
        #: the model's response on every row, (n_rows, n_targets) in the PDs' target order (None: not given), as
        #: :class:`~autopdp.pd.kept.KeptValues`: this process's array, or kept on a cluster's row partitions
        self.response = None if predictions is None else as_kept(
            predictions if isinstance(predictions, KeptValues) else np.asarray(predictions, dtype=float))
        #: {name: (n_rows, n_targets)} the comparison models' responses on the same rows
        self.comparison_predictions = dict(comparison_predictions or {})
        self.sample_weight = None if sample_weight is None else np.asarray(sample_weight, dtype=float)
        #: every row's target: an array here, or :class:`~autopdp.pd.kept.KeptValues` kept with a cluster's rows
        self.y = None if y is None else (y if isinstance(y, KeptValues) else np.asarray(y))
        self.is_classifier = is_classifier
        self.prediction_std = prediction_std  # per target
        self.config = config
        self.comparisons = comparisons  # {name: {features: PDResult}}
        self._associations: dict[tuple, tuple] = {}
        self._observed: dict = {}
        self._tables = CellTables()  # each PD grid's cell masses and observed sums (cell_tables)
        #: per target, every row's share of the threshold's relative error, summarised (see spread_of)
        self.threshold_spread = None if self.response is None else [
            kept_spread_summary(self.response, t) for t in range(self.response.width)]
        self._link_spreads: dict = {}  # (scale, target): the threshold and its spread on a link scale (draws.py)

    @property
    def predictions(self) -> np.ndarray | None:
        """Every row's response as one array here (None: not given): for the readers that run here on every row
        (comparison models, cohorts); on a cluster it is brought from the partitions each time it is read."""
        return None if self.response is None else self.response.whole()

    def spread_of(self, target_index: int) -> ThresholdSpread | None:
        """Every row's share of the relative sampling error of target ``target_index``'s prediction sd, which the
        materiality threshold is a multiple of (:func:`threshold_spread`, summarised); None when the predictions
        are not known, not finite or constant."""
        s = self.threshold_spread
        return None if s is None or target_index >= len(s) else s[target_index]

    def observed(self, target):
        """:func:`~autopdp.scores.utilities.incidence.observed_values` of ``y`` for ``target`` (computed once)."""
        key = _target_key(target)
        if key not in self._observed and isinstance(self.y, KeptValues):  # made where the target is, when read
            numeric = self.is_classifier or all(map_kept(_numeric_part, None, self.y))
            self._observed[key] = KeptObserved(self.y, target, self.is_classifier) if numeric else None
        if key not in self._observed:
            values = None if self.y is None else observed_values(self.y, target, self.is_classifier)
            # a class indicator is 0 or 1: kept in 1 byte a row, not 8 (its users read it as numbers, a chunk of
            # rows at a time)
            self._observed[key] = values.astype(np.uint8) if values is not None and self.is_classifier else values
        return self._observed[key]

    def prepare_tables(self, results) -> None:
        """Every PD grid's cell table (:func:`autopdp.scores.cells.cell_tables`) in one pass over the rows: what
        the density weights and the incidence read, kept as a few numbers per cell instead of every row's cell."""
        wanted = "incidence" in getattr(self.config, "utilities", ("incidence",))  # the observed sums' only reader
        observed = self._observed_of([t for r in results for t in r.targets]) if wanted else {}
        cell_tables(self._tables, self.frame, [self._table_job(r) for r in results], observed, self.sample_weight)

    def _observed_of(self, targets) -> dict:
        """``{target key: observed values}`` of the targets (those with numbers to average)."""
        out = {}
        if self.y is None:
            return out
        for t in targets:
            key = _target_key(t)
            if key not in out:
                values = self.observed(t)
                if values is not None:
                    out[key] = values
        return out

    def _table_job(self, r) -> tuple:
        axes = [(self.frame.names.index(name), FeatureSpec(name=name, position=-1, kind=kind, grid=np.asarray(g),
                                                           ordered=o, n_missing=0))
                for name, kind, g, o in zip(r.features, r.kinds, r.grid, r.ordered)]
        return grid_key(r.features, r.kinds, r.grid, r.ordered), axes, tuple(r.grid_shape)

    def _table(self, r, targets=()) -> tuple:
        """``(mass, {target key: sums})`` of ``r``'s grid, made here when not prepared (or without ``targets``)."""
        key = grid_key(r.features, r.kinds, r.grid, r.ordered)
        observed = self._observed_of(targets)
        if key not in self._tables or any(k not in self._tables.sums[key] for k in observed):
            fresh = CellTables()
            cell_tables(fresh, self.frame, [self._table_job(r)], observed, self.sample_weight)
            self._tables.masses[key] = fresh.masses[key]
            self._tables.sums[key] = {**self._tables.sums.get(key, {}), **fresh.sums[key]}
        return self._tables.masses[key], self._tables.sums[key]

    def cell_weights(self, result) -> np.ndarray:
        """Share of the rows (of their sample weight) nearest each cell of ``result``'s grid (paper eq. 5), as
        :func:`autopdp.scores.cells.cell_weights` of :func:`grid_cells` gives it."""
        mass, _ = self._table(result)
        sw = self.sample_weight
        total = max(self.frame.n_rows, 1) if sw is None else max(float(np.sum(sw)), 1e-300)
        return (mass / total).reshape(result.grid_shape)

    def incidence(self, result, target) -> np.ndarray | None:
        """The mean observed value of ``target`` over each cell's rows (NaN: no rows), as
        :func:`~autopdp.scores.utilities.incidence.incidence_curve` of :func:`grid_cells` gives it; None without
        numbers to average."""
        mass, sums = self._table(result, (target,))
        total = sums.get(_target_key(target))
        if total is None:
            return None
        with np.errstate(invalid="ignore", divide="ignore"):
            curve = np.where(mass > 0, total / np.where(mass > 0, mass, 1.0), np.nan)
        return curve.reshape(result.grid_shape)

    def column(self, name: str) -> np.ndarray:
        """One column's values, read from the frame each time (nothing of it is kept: the scores keep each grid's
        cell table, :meth:`prepare_tables`; a kept column would be 8 bytes a row for the rest of the audit)."""
        return self.frame.column(self.frame.names.index(name))

    def associations(self, results_2d) -> dict:
        """``{features: (association, p-value)}`` of the 2D PDPs' feature pairs in the data (computed once)."""
        todo = [r for r in results_2d if r.features not in self._associations]
        if todo:
            kinds = {f: k for r in todo for f, k in zip(r.features, r.kinds)}
            self._associations.update(association_tests(self.frame, kinds, [r.features for r in todo]))
        return {r.features: self._associations[r.features] for r in results_2d}


def _numeric_part(values, _payload) -> bool:
    """Whether a row partition's kept target reads as numbers (a regressor's observed values)."""
    return observed_values(values[:, 0], None, False) is not None


def _target_key(target) -> tuple:
    return type(target).__name__, str(target)


def grid_cells(inputs: ScoringInputs, result) -> GridCells:
    """Every data row's flat grid-cell index for ``result``'s grid (-1 for none), made a chunk at a time."""
    return GridCells([_nearest(inputs, name, kind, grid, ordered) for name, kind, grid, ordered in
                       zip(result.features, result.kinds, result.grid, result.ordered)], result.grid_shape)


def _nearest(inputs: ScoringInputs, name, kind, grid, ordered) -> np.ndarray:
    """Every row's nearest index in ``grid`` of feature ``name``, found on each row partition (a Dask cluster's
    parts where they are) and not kept: the scores keep each grid's cell table instead (:meth:`ScoringInputs.
    prepare_tables`); only the incidence test, when it runs, reads every row's cell."""
    spec = FeatureSpec(name=name, position=-1, kind=kind, grid=np.asarray(grid), ordered=ordered, n_missing=0)
    frame = inputs.frame
    return np.concatenate(map_rows(_nearest_part, (frame.names.index(name), spec), frame))


def _nearest_part(rows: Frame, payload) -> np.ndarray:
    """One row partition's nearest grid indexes of one column (1 or 2 bytes a row, not 8)."""
    position, spec = payload
    return small_index(nearest_grid_index(rows.column(position), spec), np.asarray(spec.grid).size)


def _slopes(inputs: ScoringInputs, result, target_index: int) -> list[float]:
    cfg = inputs.config
    f = np.asarray(result.average[target_index], dtype=float)
    pd_range = float(np.nanmax(f) - np.nanmin(f)) if f.size else 0.0
    out = []
    for axis, name in enumerate(result.features):
        if name in cfg.lipschitz:
            out.append(float(cfg.lipschitz[name]))
            continue
        x = axis_positions(result, axis)
        out.append(default_bound(x, pd_range, cfg.lipschitz_scale) if x is not None else float("inf"))
    return out


def score_result(inputs: ScoringInputs, result) -> dict[str, UtilityScore]:
    """Every configured utility of one PDP, best over targets.

    A utility returns "n/a" with a named reason for the conditions it expects
    (see each utility).  Any other error is a bug: it is kept for that PDP and
    utility as a stage failure (:mod:`autopdp.scores.failures`), which the audit
    collects, the report lists and the CLI turns into exit code 3.
    """
    w = inputs.cell_weights(result)
    out: dict[str, UtilityScore] = {}
    for utility in inputs.config.utilities:
        if utility in TRUST_IDS:  # need the model and data: autopdp.trust.checks
            continue
        try:
            out.update(_score_utility(inputs, result, utility, w))
        except Exception as exc:  # noqa: BLE001 - not an expected condition: collected as a stage failure
            uids = [similarity_id(n) for n in inputs.comparisons] if utility == "similarity" else [utility]
            for uid in uids:
                out[uid] = failed_score(uid, "scoring", exc, result.targets[0])
    return out


def _score_utility(inputs: ScoringInputs, result, utility: str, w) -> dict[str, UtilityScore]:
    """One utility (or one per comparison model for ``similarity``), best over targets."""
    cfg = inputs.config
    targets = range(result.n_targets)
    if utility == "similarity":
        out = {}
        for name, by_features in inputs.comparisons.items():
            other = by_features.get(result.features)
            out[similarity_id(name)] = best_over_targets([
                score_similarity(result, other, name=name, target_index=t, weights=w, loss=cfg.loss) for t in targets
            ])
        return out
    if utility == "monotonicity":
        directions = tuple(cfg.expected_monotonic.get(f) for f in result.features)
        per = [score_monotonicity(result, target_index=t, weights=w, directions=directions, loss=cfg.loss) for t in targets]
    elif utility == "lipschitz":
        per = [score_lipschitz(result, target_index=t, weights=w, slopes=_slopes(inputs, result, t), loss=cfg.loss)
               for t in targets]
    elif utility == "incidence":
        per = [score_incidence(result, target_index=t, weights=w, cells=None, y=inputs.y,
                               is_classifier=inputs.is_classifier, loss=cfg.loss, sample_weight=inputs.sample_weight,
                               y_values=inputs.observed(result.targets[t]),
                               curve=None if inputs.y is None else inputs.incidence(result, result.targets[t]))
               for t in targets]
    elif utility == "slope":
        per = [score_slope(result, target_index=t) for t in targets]
    elif utility == "ice_variance":
        row_weights = ice_row_weights(result, inputs.sample_weight)
        link = inputs.link
        margin = None if link is None else link.curves.get(result.features)
        note = "" if link is None or margin is not None else (link.reason or "")
        per = [score_ice_variance(result, target_index=t, weights=w, centering=cfg.ice_variance_centering,
                                  scale=cfg.ice_variance_scale, row_weights=row_weights, link_curves=margin,
                                  link_name=None if margin is None else link.name,
                                  margin_note=note)
               for t in targets]
    else:  # pragma: no cover - guarded by AuditConfig
        raise InputError(f"unknown utility {utility!r}")
    return {utility: best_over_targets(per)}


def importance_table(results_1d) -> pd.DataFrame:
    """Greenwell importance: one row per feature, one column per target."""
    if not results_1d:
        return pd.DataFrame()
    targets = [str(t) for t in results_1d[0].targets]
    data = [pd_importance(r) for r in results_1d]
    df = pd.DataFrame(np.vstack(data), index=pd.Index([r.features[0] for r in results_1d], name="feature"), columns=targets)
    return df


def interaction_table(results_2d) -> pd.DataFrame:
    """Greenwell interaction: one row per pair (MultiIndex), one column per target."""
    if not results_2d:
        return pd.DataFrame()
    targets = [str(t) for t in results_2d[0].targets]
    data = [pd_interaction(r)[0] for r in results_2d]
    index = pd.MultiIndex.from_tuples([r.features for r in results_2d], names=["feature_1", "feature_2"])
    return pd.DataFrame(np.vstack(data), index=index, columns=targets)


def pair_criteria(inputs: ScoringInputs, results_2d, importance: pd.DataFrame, interaction: pd.DataFrame) -> dict:
    """Correlation, importance and interaction of every pair: {features: {criterion: value}}."""
    imp = importance.max(axis=1) if not importance.empty else pd.Series(dtype=float)
    inter = interaction.max(axis=1) if not interaction.empty else pd.Series(dtype=float)
    associations = inputs.associations(results_2d)
    out = {}
    for r in results_2d:
        a, b = r.features
        ia = float(imp.get(a, np.nan))
        ib = float(imp.get(b, np.nan))
        out[r.features] = {
            "correlation": associations[r.features][0],
            "importance": float(np.sqrt(ia * ib)) if np.isfinite(ia) and np.isfinite(ib) else float("nan"),
            "interaction": float(inter.get((a, b), np.nan)),
        }
    return out
