"""Stage 4, trust checks: can a PDP be trusted?  PD results -> trust scores.

Takes the PD results, the data and the model; gives the ``stratpd``, ``ale_divergence`` and
``ood_share`` scores per PD (:mod:`autopdp.trust.checks`) and the surrogate's importances.

=====================  ==============================================================
module                 what
=====================  ==============================================================
checks                 the stage: every trust score of every PD
ale                    accumulated local effects, by prediction or from exact ICE
modelfree              StratPD / CatStratPD: the data's own partial dependence
strat_kernel           StratPD's stratifying tree, grown on columns sorted once (numba)
ood                    the out-of-distribution share of a PD's augmented rows
ood_kernel             its compiled counting kernel (numba)
surrogate              an additive surrogate of the model (2D criterion)
=====================  ==============================================================

Imports the PD, score and findings stages and the base modules, never the report or the audit.
"""
