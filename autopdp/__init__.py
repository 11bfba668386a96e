"""autopdp: curated partial-dependence validation reports (the AutoPDP method).

The public names below load on first use (PEP 562), so ``autopdp --help`` and the command
line's checks of its arguments (an unusable ``--out``, a missing file) answer before pandas,
scikit-learn, scipy and cvxpy are imported.
"""

from __future__ import annotations

import importlib

from ._version import __version__

# public name -> the submodule that defines it
_EXPORTS = {
    "partial_dependence": ".pd.partial_dependence",
    "compute_all": ".pd.partial_dependence",
    "PDOptions": ".pd.options",
    "PDResult": ".pd.result",
    "audit": ".auditing.pipeline",
    "Audit": ".auditing.record",
    "read_results": ".io.results",
    "AuditConfig": ".config",
    "ReportOptions": ".config",
    "SelectedPDP": ".scores.selection",
    "gate": ".gating.verdict",
    "GatePolicy": ".gating.policy",
    "GateResult": ".gating.verdict",
    "GateCheck": ".gating.verdict",
    "UtilityScore": ".scores.utilities",
    "stratpd": ".trust.modelfree",
    "ale": ".trust.ale",
    "ModelFreePD": ".trust.modelfree",
    "StageFailure": ".scores.failures",
    "StageFailureWarning": ".scores.failures",
    "InputError": ".errors",
    "InputTypeError": ".errors",
    "load_model": ".io.loading",
}

__all__ = [
    "__version__",
    "partial_dependence",
    "compute_all",
    "PDOptions",
    "PDResult",
    "audit",
    "Audit",
    "read_results",
    "AuditConfig",
    "ReportOptions",
    "SelectedPDP",
    "gate",
    "GatePolicy",
    "GateResult",
    "GateCheck",
    "UtilityScore",
    "stratpd",
    "ale",
    "ModelFreePD",
    "StageFailure",
    "StageFailureWarning",
    "InputError",
    "InputTypeError",
    "load_model",
    "datasets",
]


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    elif name == "datasets":
        value = importlib.import_module(".datasets", __name__)
    else:
        raise AttributeError(f"module 'autopdp' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
