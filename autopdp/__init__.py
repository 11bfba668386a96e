"""autopdp: curated partial-dependence validation reports (the AutoPDP method)."""

from ._version import __version__
from .partial_dependence import compute_all, partial_dependence
from .result import PDResult
from . import datasets

__all__ = [
    "__version__",
    "partial_dependence",
    "compute_all",
    "PDResult",
    "datasets",
]
