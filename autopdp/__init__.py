"""autopdp: curated partial-dependence validation reports (the AutoPDP method)."""

from ._version import __version__
from .partial_dependence import compute_all, partial_dependence
from .result import PDResult
from .config import AuditConfig
from .audit import Audit, audit
from .selection import SelectedPDP
from .gate import GateCheck, GatePolicy, GateResult, gate
from .utilities import UtilityScore
from .modelfree import ModelFreePD, stratpd
from .ale import ale
from . import datasets

__all__ = [
    "__version__",
    "partial_dependence",
    "compute_all",
    "PDResult",
    "audit",
    "Audit",
    "AuditConfig",
    "SelectedPDP",
    "gate",
    "GatePolicy",
    "GateResult",
    "GateCheck",
    "UtilityScore",
    "stratpd",
    "ale",
    "ModelFreePD",
    "datasets",
]
