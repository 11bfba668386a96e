"""The audit's last stages, run side by side by :func:`autopdp.auditing.pipeline._after_pds`: the findings' noise
tests and the data summary, the regions and cohorts, the held-out permutation importance."""

from __future__ import annotations

import time

import numpy as np

from ..config import AuditConfig
from ..findings.cohorts import cohort_pds, cohort_tests
from ..findings.evidence import assess
from ..findings.regions import audit_regions, regions_across_refits
from ..findings.robustness import learner_level, with_robustness
from ..scores.skill import permutation_importance
from ..utils.progress import announce
from .summary import summarise_data

__all__ = ["regions_stage", "permutation_stage", "tests_and_summary"]


def regions_stage(model, data, pds, scored, evidence, refits, config: AuditConfig, random_state, progress,
                  timings: dict) -> tuple:
    """``(regions, cohorts)``: the tested regions of the heterogeneous features and the named cohorts' tests."""
    t0 = time.perf_counter()
    with announce("regions and cohorts of the heterogeneous features", progress):
        regions = regions_across_refits(audit_regions(scored.inputs, pds.res1, evidence, config, random_state),
                                        pds.res1, refits, scored.inputs, config)
        cohorts = None if data.cohort is None else cohort_tests(
            scored.inputs, pds.res1, data.cohort[1], data.cohort[0], evidence, config, random_state,
            exact=cohort_pds(model, data.frame, pds.res1, data.cohort[1], data.weights, dict(
                response=config.response, target=config.target, method=config.method,
                categorical_features=pds.categorical, max_batch_mb=config.max_batch_mb)))
    timings["regions"] = time.perf_counter() - t0
    return regions, cohorts


def permutation_stage(model, data, scored, config: AuditConfig, random_state, scheduler, progress, timings: dict):
    """The held-out permutation importance: the data's evidence beside the PD importance."""
    t0 = time.perf_counter()
    with announce("held-out permutation importance", progress):
        pfi = permutation_importance(data.adapter, data.frame, data.y_pd, scored.inputs.response,
                                     [f for f in data.features if f in data.frame.names], data.weights,
                                     getattr(model, "classes_", None), seed=random_state,
                                     significance=config.significance, scheduler=scheduler)
    timings["permutation_importance"] = time.perf_counter() - t0
    return pfi


def tests_and_summary(data, pds, scored, scores, refits, config: AuditConfig, random_state, progress, timings):
    """The findings' noise tests (and learner-level tests with refits), and the binned data summary."""
    t0 = time.perf_counter()
    with announce("noise tests of the material scores", progress):
        evidence = assess(scored.inputs, pds.results, scored.utility_scores, scores, surrogate=scored.surrogate)
    timings["noise_tests"] = time.perf_counter() - t0
    if refits is not None:
        t0 = time.perf_counter()
        with announce(f"learner-level tests on {refits.fitted} refits", progress):
            evidence = with_robustness(evidence, *learner_level(scored.inputs, pds.results, refits), refits)
        timings["learner_tests"] = time.perf_counter() - t0
    data_summary = summarise_data(data.frame, pds.res1, np.random.default_rng(random_state), results_2d=pds.res2,
                                  keep_points=config.keep_points)
    return evidence, data_summary

