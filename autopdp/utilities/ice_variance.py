"""ICE variance utility (AutoPDP paper, section 3.2, eq. 12).

Eq. 12 is the mean over grid points of the variance of the ICE curves.
autopdp reports its square root, the root-mean-square spread of the ICE curves
around the PD, in the units of the prediction (the ranking is the same).  High
values mean heterogeneous effects (interactions the average hides); low values
homogeneous ones.  The ICE spread of every row is used (``PDResult.std``), not
only the sampled curves kept for drawing.
"""

from __future__ import annotations

import numpy as np

from .base import UtilityScore

__all__ = ["score_ice_variance"]

UTILITY = "ice_variance"


def score_ice_variance(result, *, target_index: int) -> UtilityScore:
    target = result.targets[target_index]
    var = np.asarray(result.std[target_index], dtype=float) ** 2
    value = float(np.sqrt(np.mean(var)))
    return UtilityScore(utility=UTILITY, value=value, target=target, details={"mean_variance": float(np.mean(var))})
