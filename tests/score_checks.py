"""Checks shared by the tests: an audit has no failed score and every score column has values.

``check_no_failed_scores`` takes ``Audit.to_dict()`` or a loaded results.json, so the same
check runs on an in-memory audit and on what the CLI wrote.
"""

#: Score columns that are n/a by definition for one kind of PDP (the audit states why in each reason).
from autopdp import read_results

BY_DEFINITION = {
    "1d": {"correlation", "interaction", "intersection"},  # criteria of a pair
    "2d": {"stratpd", "ice_variance"},  # StratPD is 1D; 2D PDs keep no centred ICE curves
}


def check_no_failed_scores(d: dict, expected_na=()) -> None:
    """No stage failure, no failed score, and per kind every applicable column holds a value.

    ``expected_na``: columns n/a for this audit for a stated reason (e.g. incidence without y).
    """
    d = read_results(d)
    assert d["stage_failures"] == [], d["stage_failures"]
    failed = [v for v in d["utility_scores"] if v["reason"].startswith(("stage failure", "failed:"))]
    assert failed == [], failed[:3]
    columns = [c for c in d["scores"][0] if c not in ("features", "kind")]
    for kind in sorted({s["kind"] for s in d["scores"]}):
        rows = [s for s in d["scores"] if s["kind"] == kind]
        empty = [c for c in columns if c not in BY_DEFINITION[kind] and c not in expected_na
                 and all(r[c] is None for r in rows)]
        assert empty == [], (kind, empty)
