"""Stage 3, the findings' tests: scores -> findings that stand clear of noise, are material and hold across refits.

Takes the PD results and their scores (and, for robustness, the learner-level PDs of the refits); gives each
score's decision: a finding or not, with its noise level, its materiality threshold, its confidence and the
words that say why.

=====================  ==============================================================
module                 what
=====================  ==============================================================
significance           noise levels: Monte-Carlo and model-noise tests of a statistic
null_draws             each criterion's least favourable null curve and its statistic
evidence               which scores are findings: material with confidence
words                  each decision's words (why), and the same words rebuilt from a stored item
comparison_noise       the noise of two models' PD difference, and their mean predictions' test
robustness             a finding of this fit against the learner: the refits' test
=====================  ==============================================================

Imports the PD and score stages and the base modules, never the trust checks, the report or the audit.
"""
