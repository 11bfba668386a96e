"""The result of an audit: :class:`Audit`, what the report renders from and what ``to_json`` writes
(its records are in :mod:`autopdp.results_io`).
"""

from __future__ import annotations

import functools
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from ._io import atomic_write_bytes, atomic_write_text
from ._version import __version__
from .config import AuditConfig
from .errors import InputError
from .scores.utilities import TRUST_IDS
from .pd.ice_io import (ICE_FILE, ICE_MAX_MB, SampledWeights, ice_parquet_bytes, ice_sidecar_name, read_ice,
                         read_ice_weight_totals, read_ice_weights)
from .pd.result import PDResult, _scalar, _to_jsonable
from ._tables import tables
from .scores.selection import SelectedPDP, curate, rank_scores, score_columns
from .scores.utilities import UtilityScore
from .results_io import (JSON_SCHEMA, RESULTS_MAX_MB, _check_expansion, _damaged, _evidence_dict, _evidence_from,
                         _evidence_meta, _is_json_text, _json_text, _kept_details, _ndim, _num, _pd_record, _plain,
                         _records_of, _source_bytes, _source_label, _table, _table_from, _weight_rows)

__all__ = ["Audit", "RUN_KEY"]

#: The only key of ``Audit.to_json`` that changes between identical runs.
RUN_KEY = "run"


@dataclass(frozen=True, eq=False)
class Audit:
    """Everything an audit found.

    Attributes
    ----------
    config : AuditConfig
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
        positive class, seed, a content hash of the data as loaded, platform; see :mod:`autopdp.provenance`).
    data_summary : mapping
        Binned summaries the report draws under the PDs, no row of the data: ``distributions``
        (per feature: histogram on the grid's range, or rows per level) and ``occupancy`` (per 2D
        PD, ``features`` and the rows in each cell of its grid).  Only with ``keep_points=True``
        also ``points`` (the raw values of a fixed random sample of up to 400 rows per feature).
    run : mapping
        Date, timings per stage (``scoring`` and ``trust`` run side by side, so their times
        overlap) and (from the CLI) the command line: the only part that differs between runs.
    evidence : mapping
        Per criterion, each PDP's :class:`~autopdp.scores.significance.Evidence`.
    stage_failures : tuple of StageFailure
        Unexpected errors of a utility or trust statistic on one PDP (a bug, not an expected
        "n/a"; see :mod:`autopdp.stage_failures`).  Empty in a sound audit; the CLI exits 3
        when it is not.
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
        return tuple(curate(self.scores, self._ranking_orders(), self.config.top_k, evidence=self.evidence or None))

    def findings(self, criterion: str) -> list:
        """Every PDP's :class:`~autopdp.scores.significance.Evidence` under ``criterion``, best score first.

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

    # ------------------------------------------------------------ JSON
    def to_dict(self, *, ice_file: str | None = None) -> dict:
        """Every number of the audit as plain JSON values, without the ICE curves.

        Left out to keep results.json small (see ``docs/user-guide.md``, "results.json"): the ICE
        curves (``results[*].individual`` is null, ``ice_kept`` says whether they were computed;
        :meth:`to_ice` / ``--ice`` writes them to a sidecar), the utilities' comparison surfaces of
        2D PDs and the OOD check's per-cell diagnostics of 2D PDs other than the ``ood`` shares (both
        stay on the in-memory :attr:`utility_scores`; the report draws neither).  ``std`` and
        ``stderr`` keep :data:`SPREAD_DIGITS` significant digits; PD averages, grids and scores are exact.
        ``ice_file``: the sidecar's file name written beside (recorded under ``ice``).
        """
        columns = score_columns(self.scores)
        values = [self.scores[c].to_numpy(dtype=float) for c in columns]
        scores = [{"features": list(f), "kind": k,
                   **{c: None if np.isnan(v[i]) else _scalar(float(v[i])) for c, v in zip(columns, values)}}
                  for i, (f, k) in enumerate(zip(self.scores["features"], self.scores["kind"]))]
        verdicts: dict[str, list] = {}
        for feats, by_id in self.utility_scores.items():
            two_d = len(feats) == 2
            for uid, s in by_id.items():
                verdicts.setdefault(uid, []).append({
                    "features": list(feats), "value": _scalar(s.value), "target": _scalar(s.target),
                    "comparison": None if s.comparison is None or two_d else _to_jsonable(s.comparison),
                    "reason": s.reason, "details": _plain(_kept_details(s.details) if two_d else s.details),
                })
        selection = self.selection
        evidence_meta = _evidence_meta(self.evidence)
        n_curves = sum(r.individual.shape[0] * r.individual.shape[1]
                       for r in (*self.results, *(c for v in self.comparisons.values() for c in v))
                       if r.individual is not None)
        grids: dict[str, list] = {}
        return {
            "schema": JSON_SCHEMA,
            "autopdp_version": __version__,
            "config": _plain(self.config.to_dict()),
            "metadata": _plain(dict(self.metadata)),
            "notes": list(self.notes),
            "stage_failures": [f.to_dict() for f in self.stage_failures],
            "scores": tables(scores),
            "selection": [
                {"features": list(s.features), "kind": s.kind, "reasons": [list(r) for r in s.reasons],
                 "sentence": f["sentence"], "trust": f["trust"], "evidence": [e.to_dict() for e in s.evidence]}
                for s, f in zip(selection, self._finding_texts(selection))
            ],
            "evidence_meta": evidence_meta,
            "evidence": {c: tables(_evidence_dict(e, evidence_meta.get(c, {}), self.config) for e in by.values())
                         for c, by in self.evidence.items()},
            "importance": _table(self.importance),
            "interaction": _table(self.interaction),
            "utility_scores": {uid: tables(v) for uid, v in verdicts.items()},
            "results": tables((_pd_record(r, grids) for r in self.results), split=_ndim),
            "comparisons": {k: tables((_pd_record(r, grids) for r in v), split=_ndim)
                            for k, v in self.comparisons.items()},
            "grids": grids,
            "ice": {"file": ice_file, "curves": int(n_curves),
                    "note": ("ICE curves are not in results.json: they are in the file named here" if ice_file else
                             "ICE curves are not in results.json: write them with Audit.to_json(path, ice=True) "
                             "or the --ice flag (ice.parquet)")},
            "data_summary": _plain(dict(self.data_summary)),
            **({"refits": {**self.refits.to_dict(),
                           "curves": {f[0]: _to_jsonable(np.asarray(v)) for f, v in self.refit_curves.items()}}}
               if self.refits is not None else {}),
            RUN_KEY: _plain(dict(self.run)),
        }

    def _finding_texts(self, selection) -> list[dict]:
        """The report's sentence and trust cell of each PDP of ``selection`` (the same functions the report uses)."""
        from .report.context import findings_context

        return findings_context(self, selection)

    def to_json(self, path=None, *, ice=None, ice_file: str | None = None) -> str:
        """Every number of the audit (ICE curves apart) as JSON; written atomically to ``path`` when given.

        ``ice``: also write the ICE curves to a Parquet sidecar (see :meth:`to_ice`): ``True`` for
        ``ice.parquet`` beside ``path``, or a path.  Both files are built before either is written.
        ``ice_file``: only record a sidecar's name that the caller writes (as :func:`~autopdp.report.write_report` does).
        The JSON has one line per record (score, verdict, evidence item, PD), so it diffs line by line.
        """
        ice_path = None
        if ice is not None and ice is not False:
            if ice is True:
                if path is None:
                    raise InputError("to_json(ice=True) needs path= (the sidecar goes beside it); or give ice a path.")
                ice_path = Path(path).with_name(ICE_FILE)
            else:
                ice_path = Path(ice)
        ice_name = ice_file
        if ice_path is not None:
            ice_name = ice_path.name if path is not None and ice_path.parent == Path(path).parent else str(ice_path)
        text = _json_text(self.to_dict(ice_file=ice_name))
        if ice_path is not None:
            atomic_write_bytes(ice_path, self.to_ice())
        if path is not None:
            atomic_write_text(path, text)
        return text

    def to_ice(self, path=None) -> bytes:
        """The ICE curves of every PD (and the comparison models') as Parquet bytes (:mod:`autopdp.pd.ice_io`);
        written atomically to ``path`` when given."""
        data = ice_parquet_bytes([("", r) for r in self.results]
                                 + [(name, r) for name, rs in self.comparisons.items() for r in rs],
                                 sample_weight=self.sample_weight)
        if path is not None:
            atomic_write_bytes(path, data)
        return data

    @classmethod
    def from_json(cls, source, *, ice=None, max_mb: float = RESULTS_MAX_MB) -> "Audit":
        """An audit read back from :meth:`to_json` output (a path or the JSON text): the report renders the same.

        ``ice``: the ICE sidecar (a path, or ``True`` for the file results.json names, read only from beside
        it: a name with a folder in it is refused, so a results.json cannot make autopdp open other files); without
        it the PDs have no ICE curves (``ice_omitted``) and the report's plots show no grey ICE lines.
        Files written before the sidecar (ICE inside results.json) load with their curves.
        The rows' sample weights are not in JSON: with the sidecar, ``sample_weight`` holds the weights of the
        rows it has ICE curves of (NaN for the others), so noise tests run on the loaded audit (the gate's)
        weight the rows as the audit did; without it ``sample_weight`` is None.
        ``max_mb``: the largest results.json read (default :data:`RESULTS_MAX_MB`), checked before parsing; the
        arrays it expands to are bounded too (:data:`RESULTS_EXPANSION`).
        """
        label = _source_label(source)
        d = _records_of(source, label, max_mb)
        with _damaged(label):
            _check_expansion(d, label, _source_bytes(source))
            results = [PDResult.from_dict(r) for r in d["results"]]
            comparisons = {k: [PDResult.from_dict(r) for r in v] for k, v in d.get("comparisons", {}).items()}
        if ice is True:
            name = (d.get("ice") or {}).get("file")
            if not name:
                raise InputError("this results.json names no ICE file; pass ice=PATH.")
            if _is_json_text(source):
                raise InputError("ice=True needs results.json given as a path; pass ice=PATH.")
            ice = Path(source).with_name(ice_sidecar_name(name))
        sample_weight = None
        if ice is not None and ice is not False:
            curves = read_ice(ice, max(float(max_mb), ICE_MAX_MB))
            weighted = read_ice_weights(ice, max(float(max_mb), ICE_MAX_MB))
            if weighted is not None:  # the weights of the rows with curves; NaN: a row the sidecar has no curve of
                rows, weights = weighted
                n = _weight_rows(d, rows, label, max_mb)
                sample_weight = np.full(n, np.nan)
                sample_weight[rows] = weights
                totals = read_ice_weight_totals(ice, max(float(max_mb), ICE_MAX_MB))
                if totals is not None and totals["rows"] == n:  # what the noise tests need of the other rows
                    sample_weight = SampledWeights(sample_weight, totals["total"], totals["total_of_squares"])

            def with_ice(model, r):
                got = curves.get((model, r.features))
                if got is None:
                    return r
                return dataclasses.replace(r, individual=got[0], ice_rows=got[1], ice_omitted=False)

            results = [with_ice("", r) for r in results]
            comparisons = {k: [with_ice(k, r) for r in v] for k, v in comparisons.items()}
        with _damaged(label):
            return cls._from_records(d, results, comparisons, sample_weight)

    @classmethod
    def _from_records(cls, d: dict, results: list, comparisons: dict, sample_weight=None) -> "Audit":
        """The audit of :meth:`from_json` from the file's records (:func:`read_results`) and its PDs."""
        targets = list(results[0].targets) if results else []
        utility_scores: dict = {}
        for v in d["utility_scores"]:
            utility_scores.setdefault(tuple(v["features"]), {})[v["utility"]] = UtilityScore(
                utility=v["utility"], value=_num(v["value"]), target=v["target"],
                comparison=None if v["comparison"] is None else np.asarray(v["comparison"], dtype=float),
                reason=v["reason"], details=dict(v["details"] or {}),
            )
        rows = d["scores"]
        columns = list(rows[0]) if rows else ["features", "kind"]
        scores = pd.DataFrame(
            [{c: (tuple(r[c]) if c == "features" else r[c] if c == "kind" else _num(r[c])) for c in columns}
             for r in rows], columns=columns)
        config = AuditConfig.from_record(d["config"])
        meta = d.get("evidence_meta") or {}
        evidence = {c: {tuple(e["features"]): _evidence_from(e, meta.get(c, {}), config) for e in items}
                    for c, items in d["evidence"].items()}
        from .stage_failures import StageFailure

        return cls(
            config=config, results=tuple(results),
            comparisons={k: tuple(v) for k, v in comparisons.items()}, utility_scores=utility_scores, scores=scores,
            importance=_table_from(d["importance"], "feature", targets),
            interaction=_table_from(d["interaction"], ["feature_1", "feature_2"], targets),
            notes=tuple(d.get("notes", ())), metadata=d.get("metadata", {}), data_summary=d.get("data_summary", {}),
            run=d.get(RUN_KEY, {}), evidence=evidence,
            stage_failures=tuple(StageFailure.from_dict(f) for f in d.get("stage_failures", ())),
            sample_weight=sample_weight, **_refits_from(d.get("refits")),
        )

    # ------------------------------------------------------------ report
    def to_html(self, path=None, *, page_size: str = "A4", gate=None, comparison=None, template_dir=None) -> str:
        """The report as one self-contained HTML file; written atomically to ``path`` when given.

        ``gate`` (a :class:`GateResult` of this audit) adds the Gate section and
        ``comparison`` (the audited model's name) the Model comparison section,
        as ``autopdp gate`` and ``autopdp compare`` do.  ``template_dir``: a folder of templates
        overriding the built-in ones by name, rendered sandboxed (only this argument chooses templates:
        the config, and so a loaded results.json, never does).
        """
        from .report import render_html
        from .report.writer import report_context, report_templates

        template_dir, _ = report_templates(template_dir, None, ("html",))
        html = render_html(report_context(self, page_size=page_size, gate=gate, comparison=comparison,
                                          formats=("html",)), template_dir=template_dir)
        if path is not None:
            atomic_write_text(path, html)
        return html

    def to_pdf(self, path=None, *, page_size: str = "A4", gate=None, comparison=None, template_dir=None) -> bytes:
        """The report as PDF (WeasyPrint): the curated document (findings, top rows, methodology; the
        HTML is the complete record); written atomically to ``path`` when given (see :meth:`to_html`)."""
        from ._io import atomic_write_bytes
        from .report.render import render_pdf, render_pdf_html
        from .report.writer import report_context, report_templates

        template_dir, _ = report_templates(template_dir, None, ("pdf",))
        context = report_context(self, page_size=page_size, gate=gate, comparison=comparison, formats=("pdf",))
        pdf = render_pdf(render_pdf_html(context, template_dir=template_dir))
        if path is not None:
            atomic_write_bytes(path, pdf)
        return pdf

    def to_docx(self, path=None, template=None, *, page_size: str = "A4", gate=None, comparison=None,
                template_dir=None) -> bytes:
        """The report as an editable Word document, from the same context as the HTML and PDF;
        written atomically to ``path`` when given.

        ``template`` (only this argument chooses it): the organisation's .docx whose
        styles, page setup, headers and footers the document keeps; the report goes after its
        content, or in place of a paragraph reading ``{{autopdp}}``.  ``page_size`` applies
        without a template.  ``gate`` and ``comparison`` as in :meth:`to_html`; ``template_dir``: the
        organisation's HTML/PDF templates, whose ``methodology`` block is also the Word report's.
        """
        from ._io import atomic_write_bytes
        from .report.word import render_docx
        from .report.writer import report_context, report_templates

        template_dir, template = report_templates(template_dir, template, ("docx",))
        data = render_docx(report_context(self, page_size=page_size, gate=gate, comparison=comparison, png=True),
                           template=template, template_dir=template_dir)
        if path is not None:
            atomic_write_bytes(path, data)
        return data

    def log_to_mlflow(self, run_id: str | None = None, *, experiment: str | None = None,
                      formats=("json", "html", "pdf"), gate=None) -> str:
        """Log the report (``formats``, written to a temporary folder), results.json and the findings' counts to
        MLflow: to ``run_id``, else the run of the model when it was loaded from an MLflow URI, else a new run in
        ``experiment`` (see :mod:`autopdp.mlflow_log`).  Returns the run id."""
        from .mlflow_log import log_audit

        return log_audit(self, run_id=run_id, experiment=experiment, formats=formats, gate=gate)

    def _repr_html_(self) -> str:
        """Notebook view: the curated findings and the importance table."""
        from .report.notebook_view import notebook_context
        from .report.render import environment

        return environment().get_template("notebook.html.j2").render(**notebook_context(self))

    def __repr__(self) -> str:
        n1, n2 = len(self.results_1d), len(self.results_2d)
        return f"Audit({n1} 1D + {n2} 2D PDPs, {len(self.selection)} selected, model={self.metadata.get('model', {}).get('name')!r})"


def _refits_from(d) -> dict:
    """``refits`` and ``refit_curves`` of :class:`Audit` from results.json's ``refits`` (absent: none)."""
    if not d:
        return {}
    from .pd.refits import Refits

    curves = {(f,): np.asarray(v, dtype=float) for f, v in (d.get("curves") or {}).items()}
    return {"refits": Refits.from_dict(d), "refit_curves": curves}
