"""The result of an audit: :class:`Audit`, what the report renders from and what ``to_json`` writes
(its records are in :mod:`autopdp.io.results`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import pandas as pd

from ..config import AuditConfig, ReportOptions
from ..errors import InputError
from ..io.audit_json import RUN_KEY, audit_dict, audit_ice, audit_json, read_audit
from ..io.results import RESULTS_MAX_MB
from ..pd.result import PDResult
from ..scores.selection import SelectedPDP, curate, rank_scores, score_columns, set_aside_features
from ..scores.utilities import TRUST_IDS, UtilityScore

__all__ = ["Audit", "RUN_KEY"]

@dataclass(frozen=True, eq=False)
class Audit:
    """Everything an audit found.

    Attributes
    ----------
    config : AuditConfig
        The audit's settings; the cover is in ``report``.
    results : tuple of PDResult
        Every 1D PD (in column order) then every 2D PD.
    comparisons : mapping of name -> tuple of PDResult
        The comparison models' PDs on the same grids.
    utility_scores : mapping of features -> {utility id: UtilityScore}
        The full verdicts, with comparison curves and n/a reasons.
    scores : DataFrame
        One row per PDP: ``features``, ``kind`` ("1d"/"2d") and one column per
        utility and criterion id (NaN where not applicable).
    importance : DataFrame
        Greenwell importance, indexed by feature, one column per target.
    interaction : DataFrame
        Greenwell interaction, indexed by (feature_1, feature_2), one column per target.
    notes : tuple of str
        Features skipped and other things the report must say.
    metadata : mapping
        Model, data (rows, features), versions and ``provenance`` (input files with their sha256, target,
        positive class, seed, a content hash of the data as loaded, platform; see :mod:`autopdp.io.provenance`).
    data_summary : mapping
        Binned summaries the report draws under the PDs, no row of the data: ``distributions``
        (per feature: histogram on the grid's range, or rows per level) and ``occupancy`` (per 2D
        PD, ``features`` and the rows in each cell of its grid).  Only with ``keep_points=True``
        also ``points`` (the raw values of a fixed random sample of up to 400 rows per feature).
    run : mapping
        Date, timings per stage (``scoring`` and ``trust`` run side by side, so their times
        overlap) and (from the CLI) the command line: the only part that differs between runs.
    evidence : mapping
        Per criterion, each PDP's :class:`~autopdp.findings.significance.Evidence`.
    stage_failures : tuple of StageFailure
        Unexpected errors of a utility or trust statistic on one PDP (a bug, not an expected
        "n/a"; see :mod:`autopdp.scores.failures`).  Empty in a sound audit; the CLI exits 3
        when it is not.
    report : ReportOptions
        What the report's cover says: title, model and dataset names, reviewer, sign-off.  Another cover
        on the same findings: ``dataclasses.replace(audit, report=audit.report.replace(reviewer=...))``.
    """

    config: AuditConfig
    results: tuple
    comparisons: Mapping[str, tuple]
    utility_scores: Mapping[tuple, Mapping[str, UtilityScore]]
    scores: pd.DataFrame
    importance: pd.DataFrame
    interaction: pd.DataFrame
    notes: tuple = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    data_summary: Mapping[str, Any] = field(default_factory=dict)
    run: Mapping[str, Any] = field(default_factory=dict)
    evidence: Mapping[str, Mapping[tuple, Any]] = field(default_factory=dict)
    stage_failures: tuple = ()
    #: the rows' sample weights (None: unweighted), for noise tests run after the audit (the gate's); not in JSON
    sample_weight: Any = field(default=None, repr=False)
    #: the refits of the learner (issue 31, :class:`autopdp.pd.refits.Refits` without their PDs), None without
    refits: Any = None
    #: ``{features: (K, n_targets, grid)}``: every refit's 1D PD (the report's refit band); empty without refits
    refit_curves: Mapping = field(default_factory=dict, repr=False)
    #: what the report's cover says (:class:`~autopdp.config.ReportOptions`): no number depends on it
    report: ReportOptions = field(default_factory=ReportOptions)
    #: ``{feature: record}``: the tested regions of every 1D PD with an ICE-spread or interaction finding
    #: (:func:`autopdp.findings.regions.audit_regions`); None when not assessed (a results.json of an earlier version)
    region_records: Mapping[str, Any] | None = None
    #: the cohorts of ``cohort=`` (:func:`autopdp.findings.cohorts.cohort_tests`): ``{column, levels, level_gap,
    #: features}``; None without a cohort column
    cohort_record: Mapping[str, Any] | None = None

    # ------------------------------------------------------------ queries
    def ranking(self, name: str, ascending: bool = False, kind: str | None = None) -> pd.DataFrame:
        """The PDPs ordered by score ``name`` (best first) with a ``rank`` column.

        ``kind`` defaults to "1d" for utilities and "2d" for the pair criteria
        (correlation, importance, interaction, intersection); "all" mixes both.
        """
        return rank_scores(self.scores, name, ascending=ascending, kind=kind)

    @property
    def selection(self) -> list[SelectedPDP]:
        """The curated list: ``top_k`` per utility and per 2D criterion, merged."""
        return list(self._curated)

    @functools.cached_property
    def _curated(self) -> tuple:
        """:attr:`selection`, curated once per audit (the report asks for it from several places)."""
        return tuple(curate(self.scores, self._ranking_orders(), self.config.top_k, evidence=self.evidence or None,
                            set_aside=self.set_aside))

    @property
    def set_aside(self) -> tuple:
        """Features whose 1D patterns are not findings: the model shows skill, but the held-out permutation
        importance does not show them to matter (:func:`~autopdp.scores.selection.set_aside_features`)."""
        return set_aside_features(self.metadata)

    def set_aside_patterns(self) -> dict:
        """``{feature: [criteria]}``: the 1D criteria under which each set-aside feature passed its tests (patterns
        of the fitted model the held-out data do not support), in the evidence's order."""
        out = {}
        for f in self.set_aside:
            passed = [c for c, by in (self.evidence or {}).items()
                      if c not in ("importance_1d",) and (f,) in by and by[(f,)].passed]
            if passed:
                out[f] = passed
        return out

    def regions(self, feature: str | None = None):
        """The tested regions of ``feature`` (a record: ``feature``, ``explained``, ``gap``, ``p``, ``adjusted_p``,
        ``finding``, ``regions`` of ``{rule, share, grid, average}``; see :mod:`autopdp.findings.regions`), or of
        every feature examined (``feature=None``: a list).  A feature not examined (no ICE-spread or interaction
        finding), or an audit read from a results.json written before regions existed, gives a record whose
        ``reason`` says so and whose ``finding`` is False."""
        records = self.region_records
        if feature is None:
            return [] if records is None else list(records.values())
        if records is None:
            return {"feature": feature, "finding": False, "regions": [], "reason": "not assessed (this results.json "
                    "was written before regions were examined)"}
        return records.get(feature) or {"feature": feature, "finding": False, "regions": [],
                                        "reason": "not examined: no ICE-spread or interaction finding"}

    def cohorts(self) -> dict | None:
        """The cohorts record (``column``, ``levels``, ``level_gap``, and per feature ``shape_gap``, ``p``,
        ``adjusted_p``, ``finding`` and the cohorts' ``curves``; see :mod:`autopdp.findings.cohorts`), or None when
        the audit named no cohort column."""
        return None if self.cohort_record is None else dict(self.cohort_record)

    def findings(self, criterion: str) -> list:
        """Every PDP's :class:`~autopdp.findings.significance.Evidence` under ``criterion``, best score first.

        Each says whether the score is material and clear of noise (``passed``)
        and why; an empty list of passed items means no material finding under
        this criterion.
        """
        if criterion not in self.evidence:
            known = ", ".join(k for k in self.evidence if k != "importance_1d")
            raise InputError(f"No evidence for {criterion!r}; this audit tested: {known}.")
        items = list(self.evidence[criterion].values())
        return sorted(items, key=lambda e: -e.value if np.isfinite(e.value) else np.inf)

    def _ranking_orders(self) -> dict[str, str]:
        orders = {}
        one_d = self.scores[self.scores["kind"] == "1d"]
        for col in score_columns(self.scores):
            if col in ("correlation", "interaction", "intersection", "importance", "surrogate_importance", *TRUST_IDS):
                continue
            if one_d[col].notna().any():
                orders[col] = "asc" if (col == "ice_variance" and self.config.ice_variance == "low") else "desc"
        for crit in self.config.criteria_2d:
            if crit in self.scores.columns and self.scores[crit].notna().any():
                orders[crit] = "desc"
        return orders

    def pd(self, features) -> PDResult:
        """The PDResult of a feature (``"age"``) or a pair (``("age", "duration")``)."""
        key = (features,) if isinstance(features, str) else tuple(features)
        for r in self.results:
            if r.features == key or (len(key) == 2 and r.features == key[::-1]):
                return r
        raise InputError(f"No PD for {key!r} in this audit.")

    def score(self, features, utility: str) -> UtilityScore:
        key = self.pd(features).features
        try:
            return self.utility_scores[key][utility]
        except KeyError:
            raise InputError(f"No {utility!r} score for {key!r}.") from None

    @property
    def results_1d(self) -> list[PDResult]:
        return [r for r in self.results if r.ndim == 1]

    @property
    def results_2d(self) -> list[PDResult]:
        return [r for r in self.results if r.ndim == 2]

    # ------------------------------------------------------------ JSON (autopdp.io.audit_json)
    def to_dict(self, *, ice_file: str | None = None) -> dict:
        """Every number of the audit as plain JSON values, without the ICE curves (:func:`autopdp.io.audit_json.audit_dict`)."""
        return audit_dict(self, self._finding_texts(), ice_file=ice_file)

    def _finding_texts(self) -> list[dict]:
        """The report's sentence and trust cell of each selected PDP (the same functions the report uses)."""
        from ..report.context import findings_context

        return findings_context(self, self.selection)

    def to_json(self, path=None, *, ice=None, ice_file: str | None = None) -> str:
        """Every number of the audit (ICE curves apart) as JSON; written atomically to ``path`` when given; ``ice``:
        also the ICE sidecar (``True``: ice.parquet beside ``path``, or a path) (:func:`autopdp.io.audit_json.audit_json`)."""
        return audit_json(self, self._finding_texts(), path, ice=ice, ice_file=ice_file)

    def to_ice(self, path=None) -> bytes:
        """The ICE curves of every PD (and the comparison models') as Parquet bytes (:mod:`autopdp.io.ice`);
        written atomically to ``path`` when given."""
        return audit_ice(self, path)

    @classmethod
    def from_json(cls, source, *, ice=None, max_mb: float = RESULTS_MAX_MB) -> "Audit":
        """An audit read back from :meth:`to_json` output (a path or the JSON text): the report renders the same.
        ``ice``: its ICE sidecar (a path, or ``True`` for the file results.json names, beside it); ``max_mb``: the
        largest results.json read (:func:`autopdp.io.audit_json.read_audit`)."""
        return cls(**read_audit(source, ice=ice, max_mb=max_mb))

    # ------------------------------------------------------------ report (autopdp.report.writer)
    def to_html(self, path=None, *, page_size: str = "A4", gate=None, comparison=None, template_dir=None) -> str:
        """The report as one self-contained HTML file; written atomically to ``path`` when given
        (:func:`autopdp.report.writer.audit_html`)."""
        from ..report.writer import audit_html

        return audit_html(self, path, page_size=page_size, gate=gate, comparison=comparison, template_dir=template_dir)

    def to_pdf(self, path=None, *, page_size: str = "A4", gate=None, comparison=None, template_dir=None) -> bytes:
        """The report as PDF: the curated document; written atomically to ``path`` when given
        (:func:`autopdp.report.writer.audit_pdf`)."""
        from ..report.writer import audit_pdf

        return audit_pdf(self, path, page_size=page_size, gate=gate, comparison=comparison, template_dir=template_dir)

    def to_docx(self, path=None, template=None, *, page_size: str = "A4", gate=None, comparison=None,
                template_dir=None) -> bytes:
        """The report as an editable Word document on the organisation's ``template``; written atomically to
        ``path`` when given (:func:`autopdp.report.writer.audit_docx`)."""
        from ..report.writer import audit_docx

        return audit_docx(self, path, template, page_size=page_size, gate=gate, comparison=comparison,
                          template_dir=template_dir)

    def log_to_mlflow(self, run_id: str | None = None, *, experiment: str | None = None,
                      formats=("json", "html", "pdf"), gate=None) -> str:
        """Log the report (``formats``, written to a temporary folder), results.json and the findings' counts to
        MLflow: to ``run_id``, else the run of the model when it was loaded from an MLflow URI, else a new run in
        ``experiment`` (see :mod:`autopdp.integrations.mlflow.log`).  Returns the run id."""
        from ..integrations.mlflow.log import log_audit

        return log_audit(self, run_id=run_id, experiment=experiment, formats=formats, gate=gate)

    def _repr_html_(self) -> str:
        """Notebook view: the curated findings and the importance table (:func:`autopdp.report.notebook_view.notebook_html`)."""
        from ..report.notebook_view import notebook_html

        return notebook_html(self)

    def __repr__(self) -> str:
        n1, n2 = len(self.results_1d), len(self.results_2d)
        return f"Audit({n1} 1D + {n2} 2D PDPs, {len(self.selection)} selected, model={self.metadata.get('model', {}).get('name')!r})"
