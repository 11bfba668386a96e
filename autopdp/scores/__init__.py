"""Stage 2, scores: PD results -> utility scores -> ranking and selection.

Takes :class:`~autopdp.pd.result.PDResult` objects (and the data, for incidence rates and
associations); gives :class:`~autopdp.scores.utilities.UtilityScore` per PD and utility, the
PD-based importance and interaction tables, the 2D selection criteria and the ranked, curated
selection.  Whether a score is a finding is the next stage's question (:mod:`autopdp.findings`).

=====================  ==============================================================
module                 what
=====================  ==============================================================
utilities              the AutoPDP utilities, one module each (monotonicity,
                       lipschitz, incidence, similarity, slope, ice_variance)
importance             PD-based importance and interaction (Greenwell et al. 2018)
association            association tests of feature pairs (2D correlation criterion)
scoring                every utility of every PD, and the 2D criteria
calibration            the incidence criterion's two tests (the model against the data)
failures               stage failures: a score that failed unexpectedly, recorded, never hidden
coverage               PD beyond the grid's range (what the grid leaves out)
selection              ranking, intersection scores and the curated selection
=====================  ==============================================================

Imports the PD stage and the base modules, never the findings' tests, the trust checks, the report or the audit.
"""
