"""Stage: scores -> rankings and the curated selection of PDPs a validator must see.

Rankings
    One per score column; the 1D utilities rank the 1D PDPs, the 2D criteria
    (correlation, importance, interaction, intersection) rank the pairs.
    Higher is more interesting except ``ice_variance`` with
    ``AuditConfig.ice_variance="low"``.
Intersection (paper section 4.3)
    For each pair, the mean over the 2D columns (the utilities applied to the
    surfaces and the correlation/importance/interaction criteria) of its
    percentile rank (1 = top of that column): pairs that rank high under
    several criteria come first.
Selection
    The ``top_k`` of every ranking among the PDPs that are findings under that
    criterion (material with confidence, see :mod:`autopdp.findings.significance`),
    duplicates merged with their reasons kept ("monotonicity #1,
    lipschitz #2"); 1D items first, each group ordered by best rank, then by
    number of reasons.  The rank is the PDP's place in the full ranking, which
    still lists every PDP.  A criterion with no finding selects nothing: "no
    material finding under this criterion" is a result.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import InputError

__all__ = ["SelectedPDP", "rank_scores", "intersection_scores", "curate", "score_columns", "set_aside_features"]

META_COLUMNS = ("features", "kind")
PAIR_CRITERIA = ("correlation", "importance", "interaction", "intersection", "surrogate_importance")


@dataclass(frozen=True)
class SelectedPDP:
    """A PDP the curated selection keeps, and why."""

    features: tuple[str, ...]
    kind: str  # "1d" | "2d"
    reasons: tuple[tuple[str, int], ...]  # (criterion id, rank)
    evidence: tuple = ()  # one autopdp.findings.significance.Evidence per reason (when tested)
    finding_ranks: tuple = ()  # per reason: the PDP's place among that criterion's findings (1 = first)

    @property
    def reason_text(self) -> str:
        """The selection's reasons: "monotonicity #1, lipschitz #2".

        A rank in the full ranking is shown only when it is the reason: when every PDP ranked above is a finding
        too, so the PDP is in the criterion's top ``top_k``.  Otherwise the PDP was selected as the criterion's
        j-th finding and reads "intersection (finding #j)", not its far place in the ranking.
        """
        places = self.finding_ranks if len(self.finding_ranks) == len(self.reasons) else (None,) * len(self.reasons)
        return ", ".join(f"{c} #{r}" if j is None or j == r else f"{c} (finding #{j})"
                         for (c, r), j in zip(self.reasons, places))

    def evidence_for(self, criterion: str):
        """The :class:`~autopdp.findings.significance.Evidence` behind one reason (None when untested)."""
        for e in self.evidence:
            if e.criterion == criterion:
                return e
        return None

    @property
    def best_rank(self) -> int:
        return min(r for _, r in self.reasons)

    @property
    def label(self) -> str:
        return " x ".join(self.features)


def score_columns(scores: pd.DataFrame) -> list[str]:
    return [c for c in scores.columns if c not in META_COLUMNS]


def default_kind(name: str) -> str:
    return "2d" if name in PAIR_CRITERIA else "1d"


def rank_scores(scores: pd.DataFrame, name: str, *, ascending: bool = False, kind: str | None = None) -> pd.DataFrame:
    """Rows with a value for ``name``, best first, with a 1-based ``rank`` column.

    ``kind``: "1d", "2d" or "all"; default "2d" for the pair criteria and "1d"
    for the utilities.  Ties keep the table's order.
    """
    if name not in scores.columns or name in META_COLUMNS:
        known = ", ".join(score_columns(scores))
        raise InputError(f"Unknown score {name!r}; the audit has: {known}.")
    kind = kind or default_kind(name)
    if kind not in ("1d", "2d", "all"):
        raise InputError(f"kind must be '1d', '2d' or 'all', got {kind!r}.")
    rows = scores if kind == "all" else scores[scores["kind"] == kind]
    rows = rows[np.isfinite(rows[name].astype(float))]
    rows = rows.sort_values(name, ascending=ascending, kind="stable")
    rows = rows.copy()
    rows.insert(0, "rank", np.arange(1, len(rows) + 1))
    return rows.reset_index(drop=True)


def intersection_scores(scores_2d: pd.DataFrame, columns: list[str]) -> pd.Series:
    """Mean percentile rank of each pair over ``columns`` (1 = best everywhere).  Scores equal to 12 significant
    digits tie: a rank must not turn on floating-point rounding (the same audit summed in another order, on a
    cluster's row partitions, differs in the last bits)."""
    if scores_2d.empty or not columns:
        return pd.Series(np.nan, index=scores_2d.index)
    values = scores_2d[columns].astype(float)
    settled = values.apply(lambda col: col.map(lambda v: float(f"{v:.12g}") if np.isfinite(v) else v))
    pct = settled.rank(pct=True, ascending=True, na_option="keep")
    return pct.mean(axis=1, skipna=True)


def curate(scores: pd.DataFrame, rankings: dict[str, str], top_k: int, evidence=None,
           set_aside=()) -> list[SelectedPDP]:
    """Merge the ``top_k`` of each ranking (``{column: 'desc'|'asc'}``) into one list.

    ``evidence`` (``{criterion: {features: Evidence}}``): when given for a
    criterion, only its PDPs whose evidence passed can be selected under it.
    ``set_aside``: features whose 1D PDPs are not selected (the held-out data do not show them to matter:
    :func:`set_aside_features`); the report lists their patterns apart.
    """
    set_aside = frozenset(set_aside)
    reasons: dict[tuple, list] = {}
    kinds: dict[tuple, str] = {}
    proof: dict[tuple, list] = {}
    places: dict[tuple, list] = {}
    for name, order in rankings.items():
        ranked = rank_scores(scores, name, ascending=(order == "asc"))
        judged = None if evidence is None else evidence.get(name)
        taken = 0
        for _, row in ranked.iterrows():
            if taken >= top_k:
                break
            key = tuple(row["features"])
            if row["kind"] == "1d" and key[0] in set_aside:
                continue
            e = None if judged is None else judged.get(key)
            if judged is not None and (e is None or not e.passed):
                continue
            taken += 1
            reasons.setdefault(key, []).append((name, int(row["rank"])))
            places.setdefault(key, []).append(taken)
            if e is not None:
                proof.setdefault(key, []).append(e)
            kinds[key] = row["kind"]
    items = [SelectedPDP(features=k, kind=kinds[k], reasons=tuple(v), evidence=tuple(proof.get(k, ())),
                         finding_ranks=tuple(places[k])) for k, v in reasons.items()]
    items.sort(key=lambda s: (s.kind != "1d", s.best_rank, -len(s.reasons)))
    return items


def set_aside_features(metadata) -> tuple:
    """The features whose 1D patterns are set aside from the findings: the model shows skill on the audit rows'
    target, and the held-out permutation importance (``metadata["permutation_importance"]``, Benjamini-Hochberg
    across the features) does not show the feature to matter to the predictions' accuracy.  A booster fitted to
    noise moves its PD on a pure-noise feature for real (issue 53: slope findings on 77% and 99% of the noise
    features of a GBM and an HGB): a pattern of the fitted model, not a finding about the data.  Empty without
    a target, without skill (then every finding says the model has none) or without the importance."""
    meta = metadata or {}
    if ((meta.get("skill") or {}).get("shows_skill")) is not True:
        return ()
    features = ((meta.get("permutation_importance") or {}).get("features")) or {}
    return tuple(f for f, v in features.items() if v and v.get("shown") is False)
