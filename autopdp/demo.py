"""The embedded demo: a model trained on German Credit."""

from __future__ import annotations

from .datasets import load_german_credit

__all__ = ["demo_model"]


def demo_model(random_state: int = 0):
    """Train the demo classifier on the embedded German Credit data.

    A scikit-learn Pipeline: categorical columns ordinal-encoded and handled
    natively by a HistGradientBoostingClassifier (fast to predict, so every
    1D and 2D PD of the demo takes seconds, not minutes).

    Returns
    -------
    model, X, y
    """
    from sklearn.compose import make_column_transformer
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OrdinalEncoder

    X, y = load_german_credit()
    categorical = X.select_dtypes(exclude="number").columns.tolist()
    numeric = [c for c in X.columns if c not in categorical]
    encoder = make_column_transformer(
        (OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1), categorical),
        ("passthrough", numeric),
        verbose_feature_names_out=False,
    )
    clf = HistGradientBoostingClassifier(
        max_iter=150, learning_rate=0.05, max_leaf_nodes=15,
        categorical_features=list(range(len(categorical))), random_state=random_state,
    )
    model = make_pipeline(encoder, clf).fit(X, y)
    return model, X, y
