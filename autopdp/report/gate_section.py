"""The report's Gate section: every check of a gate run, measured against allowed, with the PD figure that is
its evidence where it failed (:func:`gate_context`)."""

from __future__ import annotations

from ..utils.formatting import fmt
from .context import _figure, _pd_figure

__all__ = ["gate_context"]


def gate_context(audit, result) -> dict:
    """The Gate section: every check, measured vs allowed, with its evidence plot."""
    figures = {}
    checks = []
    for c in result.checks:
        fig = None
        if c.evidence and c.evidence != "importance":
            key = (c.feature, c.evidence)
            if key not in figures:
                try:
                    svg, alt, _ = _pd_figure(audit, (c.feature,), c.evidence)
                    figures[key] = _figure(svg, c.message, alt)
                except (ValueError, KeyError):
                    figures[key] = None
            fig = figures[key] if not c.passed else None
        checks.append({
            "name": c.name, "check": c.check, "feature": c.feature, "passed": c.passed,
            "measured": fmt(c.measured), "allowed": f"{c.relation} {fmt(c.threshold)}", "message": c.message,
            "figure": fig,
        })
    evidence = [f for (feat, ev), f in figures.items() if f is not None and any(
        (c.feature, c.evidence) == (feat, ev) and not c.passed for c in result.checks)]
    prov = dict(getattr(result, "provenance", None) or {})
    inputs = prov.get("inputs") or {}
    return {
        "passed": result.passed, "n": len(result.checks), "failed": len(result.failures), "checks": checks,
        "evidence": evidence, "policy": inputs.get("policy"), "champion": prov.get("champion"),
        "champion_file": (inputs.get("champion") or {}).get("name"),
    }
