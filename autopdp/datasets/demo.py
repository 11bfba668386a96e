"""The embedded demo: a model trained on German Credit."""

from __future__ import annotations

from . import load_german_credit

__all__ = ["demo_model", "DEMO_CONFIG", "DEMO_REPORT"]


def demo_model(random_state: int = 0):
    """Train the demo classifier on the embedded German Credit data.

    A scikit-learn Pipeline: categorical columns ordinal-encoded, then a
    RandomForestClassifier (200 trees).  Every explained column reaches the
    trees through an elementwise map, so autopdp's exact tree path computes
    all 190 2D PDs on every row in about a second.

    Returns
    -------
    model, X, y
    """
    from sklearn.compose import make_column_transformer
    from sklearn.ensemble import RandomForestClassifier
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
    clf = RandomForestClassifier(n_estimators=200, min_samples_leaf=5, max_features=0.4, n_jobs=1,
                                 random_state=random_state)
    model = make_pipeline(encoder, clf).fit(X, y)
    return model, X, y


def _demo_config():
    from ..config import AuditConfig, ReportOptions

    config = AuditConfig(expected_monotonic={"duration_months": "increasing"})
    report = ReportOptions(
        title="Partial dependence validation report",
        model_name="RandomForestClassifier (German Credit demo)",
        dataset_name="German Credit, UCI Statlog (Hofmann 1994, CC BY 4.0), 1,000 applicants",
        reviewer="(name, role)",
        sign_off="(date, decision)",
    )
    return config, report


#: the demo's audit settings and its report's cover (``audit(*demo_model(), config=DEMO_CONFIG, report=DEMO_REPORT)``)
DEMO_CONFIG, DEMO_REPORT = _demo_config()
