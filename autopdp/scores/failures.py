"""Stage failures: an unexpected error inside one PDP's utility or trust statistic, recorded, never hidden.

Two kinds of "n/a" score exist, and they must not be confused:

expected conditions
    A statistic that is undefined or cannot be computed for a known reason: a
    slope of an unordered categorical, a Lipschitz fit whose solvers fail or
    stop short of optimal (cvxpy ``SolverError`` or a non-optimal status),
    StratPD without the observed target, ALE of a categorical feature.  The
    score is "n/a" and its ``reason`` names the condition.
anything else
    A bug (in autopdp or in a library it calls).  The score is "n/a" with the
    reason ``"stage failure (<stage>): <error>"``, the same error is recorded as
    a :class:`StageFailure` in :attr:`autopdp.Audit.stage_failures`, it is
    listed in the report's "Stage failures" section and in ``results.json``
    (``stage_failures``), :func:`autopdp.audit` warns
    (:class:`StageFailureWarning`), and the CLI exits 3 after writing the outputs.

Errors outside these per-PDP stages (validation, the PDs themselves, the
report) are not collected: they propagate.
"""

from __future__ import annotations

import os
import traceback
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from .utilities.base import UtilityScore

__all__ = ["StageFailure", "StageFailureWarning", "failed_score", "collect_stage_failures"]

#: Key of ``UtilityScore.details`` that marks a score as a stage failure.
DETAIL_KEY = "stage_failure"


class StageFailureWarning(RuntimeWarning):
    """An audit finished but some scores failed unexpectedly (see ``Audit.stage_failures``)."""


@dataclass(frozen=True)
class StageFailure:
    """One unexpected error of one statistic on one PDP.

    Attributes
    ----------
    stage : str
        ``"scoring"`` (the utilities) or ``"trust"`` (OOD share, StratPD, ALE).
    features : tuple of str
        The PDP's feature(s).
    item : str
        The statistic's id (``lipschitz``, ``stratpd``, ``similarity:<name>``, ...).
    error : str
        ``"<ExceptionType>: <message>"``.
    where : str
        The innermost frame that raised, ``file.py:line in function`` (file name only).
    """

    stage: str
    features: tuple
    item: str
    error: str
    where: str = ""

    def to_dict(self) -> dict:
        return {"stage": self.stage, "features": list(self.features), "item": self.item, "error": self.error,
                "where": self.where}

    @classmethod
    def from_dict(cls, d: Mapping) -> "StageFailure":
        return cls(stage=str(d["stage"]), features=tuple(str(f) for f in d["features"]), item=str(d["item"]),
                   error=str(d["error"]), where=str(d.get("where", "")))

    @property
    def text(self) -> str:
        """One line for the report and the CLI."""
        at = f" (at {self.where})" if self.where else ""
        return f"{self.stage}: {self.item} of {' × '.join(self.features)}: {self.error}{at}"


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return ""
    last = frames[-1]
    return f"{os.path.basename(last.filename)}:{last.lineno} in {last.name}"


def failed_score(utility: str, stage: str, exc: BaseException, target=None) -> UtilityScore:
    """The "n/a" score of a statistic that raised an unexpected error, carrying that error for collection."""
    error = f"{type(exc).__name__}: {exc}"
    return UtilityScore(
        utility=utility, value=float("nan"), target=target,
        reason=f"stage failure ({stage}): {error} (a bug: see the Stage failures section)",
        details={DETAIL_KEY: {"stage": stage, "error": error, "where": _where(exc)}},
    )


def collect_stage_failures(utility_scores: Mapping[tuple, Mapping[str, UtilityScore]]) -> tuple:
    """Every :class:`StageFailure` among the audit's scores, in PDP then statistic order."""
    out = []
    for features, by_id in utility_scores.items():
        for uid, s in by_id.items():
            info = s.details.get(DETAIL_KEY) if isinstance(s.details, Mapping) else None
            if info and not np.isfinite(s.value):
                out.append(StageFailure(stage=info["stage"], features=tuple(features), item=uid, error=info["error"],
                                        where=info.get("where", "")))
    return tuple(out)
