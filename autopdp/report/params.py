"""The model's parameters on the cover: the ones a validator needs first, at most :data:`COVER_PARAMS`.

First the parameters set away from the estimator's defaults (recorded by the audit when the estimator's
class, or a pipeline's final step's, can be constructed without arguments), then those that shape the
model's behaviour (constraints, depth and size, number of trees or iterations, learning rate,
regularisation; one left as None, the library's own default, after those given a value); every other
parameter goes to the appendix.
"""

from __future__ import annotations

__all__ = ["COVER_PARAMS", "BEHAVIOUR_PARAMS", "split_params"]

#: Parameters on the cover at most.
COVER_PARAMS = 12

#: Parameters that shape a model's behaviour, most telling first (scikit-learn, XGBoost, LightGBM, CatBoost,
#: interpret's EBM and linear models' names).
BEHAVIOUR_PARAMS = (
    "monotone_constraints", "monotonic_cst", "interaction_constraints", "interaction_cst", "interactions",
    "max_depth", "depth", "num_leaves", "max_leaf_nodes", "max_leaves",
    "n_estimators", "max_iter", "num_boost_round", "iterations", "outer_bags", "max_rounds",
    "learning_rate", "eta",
    "reg_alpha", "reg_lambda", "l2_regularization", "l2_leaf_reg", "alpha", "lambda", "C", "penalty", "l1_ratio",
    "min_samples_leaf", "min_child_weight", "min_child_samples", "min_samples_split", "gamma", "min_split_gain",
    "subsample", "colsample_bytree", "max_features", "max_bins", "loss", "objective", "criterion",
)


def split_params(params: dict, changed=None, limit: int = COVER_PARAMS) -> tuple[list[dict], list[dict]]:
    """``(cover, rest)``: rows ``{"name", "value", "set"}`` (``set``: differs from the default).

    ``changed`` lists the parameters that differ from the estimator's defaults (None: unknown, so only
    the behaviour-shaping parameters lead).
    """
    changed = set(changed or ())
    rank = {name: i for i, name in enumerate(BEHAVIOUR_PARAMS)}
    far = len(rank)

    def key(name):
        # a parameter left as None (the library's own default, e.g. XGBoost's) says least: after the others
        return (name not in changed, params[name] is None, rank.get(name, far), name)

    order = sorted(params, key=key)
    cover = [n for n in order if n in changed or n in rank][:limit]
    shown = set(cover)
    rows = [{"name": n, "value": str(params[n]), "set": n in changed} for n in order]
    return [r for r in rows if r["name"] in shown], [r for r in rows if r["name"] not in shown]
