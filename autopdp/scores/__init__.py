"""Stage 2, scores: PD results -> utility scores -> ranking and selection.

Takes :class:`~autopdp.pd.result.PDResult` objects (and the data, for incidence rates and
associations); gives :class:`~autopdp.scores.utilities.UtilityScore` per PD and utility, the
PD-based importance and interaction tables, the 2D selection criteria, each finding's noise
test and the ranked, curated selection.

=====================  ==============================================================
module                 what
=====================  ==============================================================
utilities              the AutoPDP utilities, one module each (monotonicity,
                       lipschitz, incidence, similarity, slope, ice_variance)
importance             PD-based importance and interaction (Greenwell et al. 2018)
association            association tests of feature pairs (2D correlation criterion)
scoring                every utility of every PD, and the 2D criteria
significance           noise levels: Monte-Carlo and model-noise tests of a statistic
null_draws             each criterion's least favourable null curve and its statistic
evidence               which scores are findings: material with confidence
evidence_words         each decision's words (why), and the same words rebuilt from a stored item
comparison_noise       the noise of two models' PD difference, and their mean predictions' test
coverage               PD beyond the grid's range (what the grid leaves out)
selection              ranking, intersection scores and the curated selection
=====================  ==============================================================

Imports the PD stage and the base modules, never the trust checks, the report or the audit.
"""
