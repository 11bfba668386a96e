"""The report's overview lists: the criteria with no finding, the criteria whose noise test could not run, and the
PDPs that rest mostly on out-of-distribution rows."""

from __future__ import annotations

import numpy as np

from ..scores.selection import PAIR_CRITERIA
from ..trust.ood import OOD_MOSTLY, OOD_OK, ood_verdict
from ..utils.formatting import share

__all__ = ["no_findings", "untested", "cautions"]


def no_findings(audit) -> list[str]:
    """The criteria under which no PDP is a material finding clear of noise."""
    if not audit.evidence:
        return []
    out = []
    for c, by in audit.evidence.items():
        if c == "importance_1d" or c not in audit.scores.columns:
            continue
        if c in PAIR_CRITERIA and c not in audit.config.criteria_2d:
            continue
        if (not any(e.passed for e in by.values()) and any(np.isfinite(e.value) for e in by.values())
                and not any(e.untested for e in by.values())):
            out.append(c)
    return out


def untested(audit) -> list[str]:
    """The criteria with material scores whose noise test could not be run (never called 'no finding')."""
    out = []
    for c, by in (audit.evidence or {}).items():
        n = sum(1 for e in by.values() if e.untested)
        if n and c != "importance_1d":
            out.append(f"{c} ({n} PDP{'s' if n > 1 else ''})")
    return out


def cautions(audit):
    """PDPs computed mostly from unrealistic rows (OOD share above OOD_MOSTLY, the trust column's verdict), worst first."""
    if "ood_share" not in audit.scores.columns:
        return []
    share = audit.scores["ood_share"].astype(float)
    mostly = share.map(lambda v: bool(np.isfinite(v)) and ood_verdict(float(v)) == "mostly unrealistic")
    rows = audit.scores[mostly].sort_values("ood_share", ascending=False, kind="stable")
    out = []
    for _, row in rows.head(8).iterrows():
        moved = " and ".join(row["features"])
        out.append(
            f"{' × '.join(row['features'])}: {share(row['ood_share'], OOD_OK, OOD_MOSTLY)} of the rows this PD averages over are out of distribution "
            f"(above {OOD_MOSTLY:.0%}: mostly unrealistic): with {moved} set to the grid values, they fall outside the "
            f"data in the space of {moved} or are implausible given the rows' other values; read it as extrapolation."
        )
    n_more = len(rows) - len(out)
    if n_more > 0:
        out.append(f"... and {n_more} more PDPs with more than {OOD_MOSTLY:.0%} of their rows out of distribution "
                   "(see the ood_share ranking).")
    return out
