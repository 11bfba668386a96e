"""The link scale of a prediction: log-odds (or the centred log-probability) of probabilities, clipped where
a model gives exactly 0 or 1 (:data:`EPS`); the response itself otherwise.  A PD-stage primitive: the link
surfaces (:mod:`autopdp.pd.link`) and the ICE-variance utility both use it."""

from __future__ import annotations

import numpy as np

__all__ = ["EPS", "CLIP_NOTE", "clipped_share", "link_scale"]

_PROBABILITY_RESPONSES = ("predict_proba",)
#: probabilities are clipped to [EPS, 1 - EPS] before their log-odds: 2**-53, float64's resolution next to 1
EPS = float(np.finfo(np.float64).epsneg)



#: what the scale's name says when probabilities were clipped
CLIP_NOTE = (f"probabilities clipped to [{EPS:.2g}, 1 - {EPS:.2g}], float64's resolution next to 1: the model "
             "gives probabilities of exactly 0 or 1, which have no log-odds")


def clipped_share(values: np.ndarray) -> float:
    """Share of the finite probabilities outside ``[EPS, 1 - EPS]`` (the ones :func:`link_scale` clips)."""
    v = np.asarray(values, dtype=float)
    finite = np.isfinite(v)
    return float(((v < EPS) | (v > 1.0 - EPS))[finite].sum()) / max(int(finite.sum()), 1)


def link_scale(values: np.ndarray, response: str, *, all_classes: bool) -> tuple[np.ndarray, str]:
    """``values`` (targets first) on the model's link scale, and the scale's name (see module docs).

    ``all_classes``: the targets are every class of the model (their probabilities sum to 1).
    Probabilities are clipped to ``[EPS, 1 - EPS]``; the name says so when any value was.
    """
    v = np.asarray(values, dtype=float)
    if response not in _PROBABILITY_RESPONSES:
        return v, {"decision_function": "decision function", "crisp": "share of predicted class"}.get(
            response, "prediction")
    clipped = clipped_share(v) > 0
    c = np.clip(v, EPS, 1.0 - EPS)
    with np.errstate(invalid="ignore"):
        if all_classes and v.shape[0] >= 3:
            logs = np.log(c)
            why = f"{CLIP_NOTE}; " if clipped else ""
            return logs - logs.mean(axis=0, keepdims=True), f"centred log-probability ({why}the softmax's linear scale)"
        return np.log(c) - np.log1p(-c), f"log-odds ({CLIP_NOTE})" if clipped else "log-odds"
