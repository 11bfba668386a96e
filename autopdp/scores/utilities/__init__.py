"""The utility functions of the AutoPDP method: one module per utility.

=================  =====================================================  ==========
id                 comparison curve g / statistic                          paper
=================  =====================================================  ==========
monotonicity       isotonic regression of the PD                          eq. 6
lipschitz          least-squares fit with bounded slopes (cvxpy)           eq. 7
incidence          share of the target class (mean target) near each x    eq. 8-9
similarity:<name>  PD of a comparison model on the same grid              eq. 10
slope              largest absolute slope over the normalised range      eq. 11
ice_variance       spread of centred ICE curves (eq. 12 uncentred: option) eq. 12
=================  =====================================================  ==========

Every score is "higher = more interesting to a validator" and comes as a
:class:`UtilityScore` with the comparison curve g (where there is one) and the
reason when it is not applicable.
"""

from ...config import TRUST_IDS, UTILITY_IDS
from .base import UtilityScore, standard_utility
from .ice_variance import score_ice_variance
from .incidence import score_incidence
from .lipschitz import LipschitzSolveError, lipschitz_fit, score_lipschitz
from .monotonicity import isotonic_fit, score_monotonicity
from .similarity import score_similarity, similarity_id
from .slope import score_slope


__all__ = [
    "UTILITY_IDS",
    "TRUST_IDS",
    "UtilityScore",
    "standard_utility",
    "score_monotonicity",
    "score_lipschitz",
    "score_incidence",
    "score_similarity",
    "score_slope",
    "score_ice_variance",
    "isotonic_fit",
    "lipschitz_fit",
    "LipschitzSolveError",
    "similarity_id",
]
