"""``autopdp.audit``: data + model -> every PD -> scores -> ranking -> curated selection.

Each PD is computed once and shared by every utility.  The result, an
:class:`Audit`, is what the report renders from and what ``to_json`` writes.
"""

from __future__ import annotations

import contextvars
import datetime as _dt
import functools
import itertools
import json
import numbers
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
import dataclasses
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from ._io import atomic_write_bytes, atomic_write_text
from ._version import __version__
from .config import AuditConfig
from .pd.data import Frame, as_frame, check_unique_columns, describe_missing, probe_rows, sample_rows
from .errors import InputError, InputTypeError
from .pd.grids import is_effectively_constant, resolve_categorical
from ._progress import announce, say
from .loading import column_error
from .summary import audit_metadata, summarise_data, target_name_of
from .pd.partial_dependence import _reject_infinite, feature_grids, partial_dependence
from .pd.fastpath import plan_tree_path, shared_plans
from .pd.link import log_predictions, model_link, with_surfaces
from .pd.response import make_adapter
from .pd.trees import TreePathUnavailable
from .trust.checks import trust_scores
from .scores.utilities import TRUST_IDS
from .pd.ice_io import (ICE_FILE, ICE_MAX_MB, SampledWeights, ice_parquet_bytes, ice_sidecar_name, read_ice,
                         read_ice_weight_totals, read_ice_weights)
from .pd.result import PDResult, _scalar, _to_jsonable
from ._tables import records, tables
from .scores.coverage import outside_grid
from .scores.evidence import assess, rebuilt_why
from .scores.scoring import ScoringInputs, importance_table, interaction_table, pair_criteria, score_result
from .scores.selection import SelectedPDP, curate, intersection_scores, rank_scores, score_columns
from .stage_failures import DETAIL_KEY, StageFailureWarning, collect_stage_failures
from .scores.utilities import UtilityScore

__all__ = ["audit", "Audit", "read_results"]

JSON_SCHEMA = "autopdp.Audit/2"
#: Earlier layouts :meth:`Audit.from_json` still reads: ``/1`` wrote every score, verdict, evidence item and PD
#: as a record (a dict) of its own, ``/2`` writes them as column tables (:mod:`autopdp._tables`).
OLD_JSON_SCHEMAS = ("autopdp.Audit/1",)
#: The largest results.json (MB) :meth:`Audit.from_json` and :func:`read_results` read unless given ``max_mb``.
RESULTS_MAX_MB = 256
#: The arrays a results.json expands to (grids shared by PDs, fields written once for many rows) may take at most
#: this many bytes per byte of the file (and 64 MB whatever its size): a crafted file cannot make a small text
#: into gigabytes.  Written by autopdp, a file expands about 4 bytes per byte (a float64 per number of 2+ digits).
RESULTS_EXPANSION = 32
_RESULTS_FLOOR = 64e6


#: Fewer rows than this is an error: PDs, grids and scores need data to average over.
MIN_ROWS = 10
#: Below this many rows the report carries a sample-size warning.
COMFORTABLE_ROWS = 200
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
            sample_weight=sample_weight,
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

    def to_docx(self, path=None, template=None, *, page_size: str = "A4", gate=None, comparison=None) -> bytes:
        """The report as an editable Word document, from the same context as the HTML and PDF;
        written atomically to ``path`` when given.

        ``template`` (only this argument chooses it): the organisation's .docx whose
        styles, page setup, headers and footers the document keeps; the report goes after its
        content, or in place of a paragraph reading ``{{autopdp}}``.  ``page_size`` applies
        without a template.  ``gate`` and ``comparison`` as in :meth:`to_html`.
        """
        from ._io import atomic_write_bytes
        from .report.word import render_docx
        from .report.writer import report_context, report_templates

        _, template = report_templates(None, template, ("docx",))
        data = render_docx(report_context(self, page_size=page_size, gate=gate, comparison=comparison, png=True),
                           template=template)
        if path is not None:
            atomic_write_bytes(path, data)
        return data

    def _repr_html_(self) -> str:
        """Notebook view: the curated findings and the importance table."""
        from .report.context import notebook_context
        from .report.render import environment

        return environment().get_template("notebook.html.j2").render(**notebook_context(self))

    def __repr__(self) -> str:
        n1, n2 = len(self.results_1d), len(self.results_2d)
        return f"Audit({n1} 1D + {n2} 2D PDPs, {len(self.selection)} selected, model={self.metadata.get('model', {}).get('name')!r})"


def _is_json_text(source) -> bool:
    return isinstance(source, str) and source.lstrip("\ufeff \t\r\n").startswith("{")


def _source_label(source) -> str:
    """How an error names ``source``: the file's path, or "the results.json text"."""
    if isinstance(source, Mapping):
        return "the results.json dict"
    return "the results.json text" if _is_json_text(source) else repr(str(source))


def _json_source(source) -> str:
    """The JSON text of ``source``: the text itself, or the file at that path (a UTF-8 byte-order mark dropped)."""
    if _is_json_text(source):
        return source.lstrip("\ufeff")
    try:
        return Path(source).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not UTF-8 text"
        raise InputError(f"cannot read {str(source)!r}: {reason}") from None


@contextmanager
def _damaged(label: str):
    """A results.json whose structure is not what autopdp writes: one InputError naming the file."""
    try:
        yield
    except InputError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        what = f"no {exc.args[0]!r} where one is expected" if isinstance(exc, KeyError) and exc.args else str(exc)
        raise InputError(f"{label} is not a complete autopdp results.json ({what[:200]}); write it again with "
                         "autopdp (the CLI or Audit.to_json).") from None


def read_results(source, *, max_mb: float = RESULTS_MAX_MB) -> dict:
    """A results.json (a path, its text, or the dict of :meth:`Audit.to_dict`) as plain records: every column
    table expanded into one dict per score row, verdict, evidence item and PD (each PD with its ``grid``
    arrays), for scripts that read the numbers without building an :class:`Audit` (:meth:`Audit.from_json` does).

    ``scores``, ``results`` and ``utility_scores`` become lists of dicts (each verdict with its ``utility``),
    ``evidence`` and ``comparisons`` dicts of such lists; every evidence item is whole (its ``why``, ``null``
    and ``statistic`` filled in where the file leaves them null); the other keys are as written.  Files of
    the earlier one-record-per-item layout (schema ``autopdp.Audit/1``) read the same.
    ``pandas.DataFrame(read_results(path)["scores"])`` is the scores table.  ``max_mb``: as in
    :meth:`Audit.from_json`.
    """
    label = _source_label(source)
    d = _records_of(source, label, max_mb)
    with _damaged(label):
        return _complete_evidence(d)


def _source_bytes(source) -> int | None:
    """The size of a results.json given as a path or text (None for a dict)."""
    if isinstance(source, Mapping):
        return None
    if _is_json_text(source):
        return len(source.encode("utf-8", "surrogatepass"))
    try:
        return Path(source).stat().st_size
    except OSError:
        return None  # _json_source names the error


def _check_size(source, label: str, max_mb: float) -> None:
    """A results.json larger than ``max_mb`` is refused before it is read or parsed."""
    size = _source_bytes(source)
    if size is not None and size > float(max_mb) * 1e6:
        raise InputError(f"{label} is {size / 1e6:,.1f} MB, above the {float(max_mb):,.4g} MB a results.json may have "
                         "(max_mb); pass a larger max_mb if the file is yours.")


def _check_expansion(d: dict, label: str, size: int | None) -> None:
    """The arrays of every PD of ``d`` (grids, averages, spreads, counts, ICE) fit in the bound of
    :data:`RESULTS_EXPANSION`, checked on the records' lengths before any array is built."""
    if size is None:  # a dict in memory: the caller holds it already
        return
    cap = max(_RESULTS_FLOOR, RESULTS_EXPANSION * float(size))
    total = 0.0
    known: dict = {}  # id of a (shared) list -> its number of values, each list walked once

    def values(obj) -> int:
        if not isinstance(obj, list):
            return 1
        key = id(obj)
        if key not in known:
            known[key] = sum(values(x) for x in obj) if any(isinstance(x, list) for x in obj) else len(obj)
        return known[key]

    pds = list(d["results"]) + [r for rs in (d.get("comparisons") or {}).values() for r in rs]
    for rec in pds:
        cells = 1
        for g in rec["grid"]:
            cells *= len(g)
        try:
            arrays = sum(values(rec.get(k)) for k in ("average", "std", "stderr", "counts", "individual", "ice_rows"))
        except RecursionError:
            raise InputError(f"{label} nests its values too deeply to be an autopdp results.json.") from None
        total += 8.0 * (values(rec["grid"]) + arrays + cells * max(1, len(rec["targets"])))  # + stderr from std
        if total > cap:
            raise InputError(f"{label} would expand to more than {cap / 1e6:,.0f} MB of arrays ({len(pds):,} PDs; "
                             f"the PD of {rec.get('features')!r} alone has {cells:,} cells): it was not written by "
                             "autopdp as it stands; write it again with autopdp.")


def _weight_rows(d: dict, rows: np.ndarray, label: str, max_mb: float) -> int:
    """How many rows the loaded audit's sample weights cover: the file's ``metadata.data.rows`` (else the ICE
    file's last row), a whole number no smaller than the ICE file's rows whose weights (8 bytes a row) fit in
    ``max_mb``, checked before the array is made."""
    top = int(rows.max(initial=-1)) + 1
    n = ((d.get("metadata") or {}).get("data") or {}).get("rows")
    if n is None:
        n = top
    elif not isinstance(n, numbers.Integral) or isinstance(n, bool) or n < top:
        raise InputError(f"{label} gives metadata.data.rows = {n!r}, not a whole number of at least {top:,} (the ICE "
                         "file's rows); write it again with autopdp.")
    if 8.0 * n > float(max_mb) * 1e6:
        raise InputError(f"{label} with its ICE file names {n:,} data rows: their sample weights need "
                         f"{8.0 * n / 1e6:,.0f} MB, above max_mb ({float(max_mb):,.4g} MB); pass a larger max_mb if "
                         "the files are yours.")
    return int(n)


def _records_of(source, label: str, max_mb: float = RESULTS_MAX_MB) -> dict:
    """:func:`read_results` without filling in the evidence items (:meth:`Audit.from_json` builds them once)."""
    if not isinstance(max_mb, numbers.Real) or isinstance(max_mb, bool) or not max_mb > 0:
        raise InputError(f"max_mb must be a positive number of megabytes, got {max_mb!r}.")
    if isinstance(source, Mapping):
        d = dict(source)
    else:
        _check_size(source, label, max_mb)
        try:
            d = json.loads(_json_source(source))
        except json.JSONDecodeError as exc:
            raise InputError(f"{label} is not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}.") from None
        except RecursionError:
            raise InputError(f"{label} nests its values too deeply to be an autopdp results.json.") from None
    schema = d.get("schema") if isinstance(d, dict) else None
    if schema not in (JSON_SCHEMA, *OLD_JSON_SCHEMAS):
        raise InputError(f"{label} is not an autopdp audit (schema {schema!r}, expected {JSON_SCHEMA!r}).")
    with _damaged(label):
        return _as_records(d) if schema == JSON_SCHEMA else dict(d)


def _complete_evidence(d: dict) -> dict:
    """``d`` with every evidence item whole: the ``why``, ``null`` and ``statistic`` the file leaves null
    (rebuilt word for word, or the criterion's ``evidence_meta``) filled in, as :meth:`Evidence.to_dict` gives."""
    config = AuditConfig.from_record(d["config"])
    meta = d.get("evidence_meta") or {}
    d["evidence"] = {c: [_evidence_from(e, meta.get(c, {}), config).to_dict() for e in items]
                     for c, items in d["evidence"].items()}
    return d


def _json_text(d: dict) -> str:
    """``d`` as JSON text, one record per line: the top-level keys, small tables indented, and every item of
    a list of records (scores, verdicts, evidence, PDs) on one compact line."""
    return _dumps(d, 0) + "\n"


def _dumps(obj, level: int) -> str:
    def one(x):
        return json.dumps(x, separators=(",", ":"), allow_nan=False)

    pad, close = " " * (level + 1), " " * level
    if _is_table(obj):  # one row per line
        rows = ",\n".join(pad + " " + one(r) for r in obj["rows"])
        extra = "".join(f',"{k}":{one(obj[k])}' for k in ("order", "at") if k in obj)
        return (f'{{"same":{one(obj["same"])},"columns":{one(obj["columns"])}{extra},"rows":[\n' + rows + "\n" + pad
                + "]}")
    if isinstance(obj, list) and obj and level < 4 and all(isinstance(v, (dict, str)) for v in obj):
        return "[\n" + ",\n".join(pad + (_dumps(v, level + 1) if _is_table(v) else one(v)) for v in obj) \
            + "\n" + close + "]"
    if isinstance(obj, dict) and obj and level < 4:
        flat = one(obj)
        if level == 0 or len(flat) > 2000:
            return "{\n" + ",\n".join(f"{pad}{json.dumps(str(k))}: {_dumps(v, level + 1)}" for k, v in obj.items()) \
                + "\n" + close + "}"
        return flat
    return one(obj)


def _ndim(record: Mapping) -> int:
    return len(record["features"])


def _is_table(obj) -> bool:
    return isinstance(obj, dict) and {"same", "columns", "rows"} <= set(obj) <= {"same", "columns", "rows", "at", "order"}


def _pd_record(result: PDResult, grids: dict) -> dict:
    """``result`` as results.json writes it: :meth:`PDResult.to_dict` without ICE curves, ``std`` to
    :data:`SPREAD_DIGITS`, and ``grid`` as ``grid_index``: per axis, the position of the axis's grid in
    ``grids[feature]`` (each distinct grid of a feature written once; added to ``grids`` here)."""
    d = result.to_dict(ice=False, spread_digits=SPREAD_DIGITS, stderr_factor=True)
    index = []
    for feature, grid in zip(d["features"], d.pop("grid")):
        known = grids.setdefault(feature, [])
        if grid not in known:
            known.append(grid)
        index.append(known.index(grid))
    return {"features": d["features"], "grid_index": index, **{k: v for k, v in d.items() if k != "features"}}


def _as_records(d: dict) -> dict:
    """A ``/2`` results.json (column tables) in the ``/1`` layout (one record per item) that
    :meth:`Audit.from_json` reads."""
    grids = d.get("grids", {})

    def pd_dict(rec: dict) -> dict:
        rec = dict(rec)
        index = rec.pop("grid_index")
        try:
            rec["grid"] = [grids[f][i] for f, i in zip(rec["features"], index)]
        except (KeyError, IndexError, TypeError):  # named with the file by _damaged
            raise ValueError(f"the PD of {rec.get('features')!r} refers to a grid that 'grids' does not hold") from None
        return rec

    out = dict(d)
    out["scores"] = records(d["scores"])
    out["results"] = [pd_dict(r) for r in records(d["results"])]
    out["comparisons"] = {k: [pd_dict(r) for r in records(v)] for k, v in d.get("comparisons", {}).items()}
    out["evidence"] = {c: [{"criterion": c, **e} for e in records(v)] for c, v in d["evidence"].items()}
    by_features: dict[tuple, list] = {}
    for uid, tbl in d["utility_scores"].items():
        for v in records(tbl):
            by_features.setdefault(tuple(v["features"]), []).append({"utility": uid, **v})
    out["utility_scores"] = [v for vs in by_features.values() for v in vs]
    return out


#: Significant digits of ``std`` and ``stderr`` in results.json.  Rounding moves a spread by at most 5e-4 of
#: itself, below the spread's own sampling error (about 1/sqrt(2 n) relative) for any PD over fewer than two
#: million rows; the PD averages keep every digit.
SPREAD_DIGITS = 4
#: Array-valued details of a 2D score that results.json keeps (the report shades the OOD cells).
_DETAILS_2D = ("ood",)


def _kept_details(details: Mapping) -> dict:
    """A 2D score's details without its per-cell diagnostic arrays, apart from ``_DETAILS_2D``."""
    return {k: v for k, v in details.items()
            if k in _DETAILS_2D or not (isinstance(v, np.ndarray) and v.ndim >= 1 and v.size > 4)}


def _num(v) -> float:
    return float("nan") if v is None else float(v)


#: Evidence fields written once per criterion (``evidence_meta``) and left off the items that share them.
_EVIDENCE_SHARED = ("null", "statistic")


def _evidence_meta(evidence: Mapping) -> dict:
    """``{criterion: {"null": ..., "statistic": ...}}``: each field's most common value among the criterion's items,
    empty ones (an item not scored, e.g. monotonicity of an unordered feature) counted last."""
    from collections import Counter

    meta = {}
    for c, by in evidence.items():
        if by:
            meta[c] = {k: max(Counter(getattr(e, k) for e in by.values()).items(), key=lambda kv: (kv[0] != "", kv[1]))[0]
                       for k in _EVIDENCE_SHARED}
    return meta


def _evidence_dict(e, meta: Mapping, config) -> dict:
    """``e.to_dict()`` with null in the fields ``from_json`` rebuilds exactly: ``null`` and ``statistic`` when
    they are the criterion's (``evidence_meta``), ``why`` when :func:`~autopdp.scores.evidence.rebuilt_why` gives it word for word (a
    sentence with a reason the fields do not hold is written out).  Every item keeps the same keys, so the
    criterion's items stay one column table."""
    d = e.to_dict()
    for k in _EVIDENCE_SHARED:
        if k in meta and d[k] == meta[k]:
            d[k] = None
    if rebuilt_why(e, config) == e.why:
        d["why"] = None
    return d


def _evidence_from(e: Mapping, meta: Mapping | None = None, config=None):
    """The inverse of :func:`_evidence_dict` (a null or missing ``null``, ``statistic`` or ``why`` rebuilt)."""
    from .scores.significance import Evidence

    meta = meta or {}

    def shared(k):
        return meta.get(k, "") if e.get(k) is None else e[k]

    item = Evidence(
        criterion=e["criterion"], features=tuple(e["features"]), value=_num(e["value"]), p_value=_num(e["p_value"]),
        adjusted_p=_num(e["adjusted_p"]), noise_level=_num(e["noise_level"]), threshold=_num(e["threshold"]),
        material=bool(e["material"]), significant=bool(e["significant"]), why=e.get("why") or "",
        test=e.get("test", ""), null=shared("null"), statistic=shared("statistic"), draws=int(e.get("draws", 0)),
        kind=e.get("kind", ""), details=dict(e.get("details") or {}),
    )
    if e.get("why") is None:
        item = dataclasses.replace(item, why=rebuilt_why(item, config))
    return item


def _table_from(rows: list, names, targets: list) -> pd.DataFrame:
    """The inverse of :func:`_table`: one column per target (the targets' own values where they match)."""
    if not rows:
        return pd.DataFrame()
    by_text = {str(t): t for t in targets}
    cols = [c for c in rows[0] if c != "features"]
    keys = [tuple(r["features"]) if isinstance(r["features"], list) else r["features"] for r in rows]
    index = pd.MultiIndex.from_tuples(keys, names=names) if isinstance(names, list) else pd.Index(keys, name=names)
    data = np.array([[_num(r[c]) for c in cols] for r in rows], dtype=float)
    return pd.DataFrame(data, index=index, columns=[by_text.get(c, c) for c in cols])


def _table(df: pd.DataFrame) -> list:
    if df.empty:
        return []
    names = [str(c) for c in df.columns]
    values = df.to_numpy(dtype=float)
    return [{"features": list(idx) if isinstance(idx, tuple) else idx,
             **{c: _scalar(float(v)) for c, v in zip(names, row)}} for idx, row in zip(df.index, values)]


def _plain(obj):
    """Make nested config/metadata JSON-ready (tuples -> lists, numpy -> python, NaN -> None)."""
    if isinstance(obj, Mapping):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.ndarray):  # whole numbers of a float array as integers (0, not 0.0): the same JSON numbers
        return _to_jsonable(obj, whole=True)
    if isinstance(obj, (str, bool, type(None), int)):
        return obj
    if isinstance(obj, (float, np.generic)):
        return _scalar(obj)
    return str(obj)


# ---------------------------------------------------------------- helpers
def _check_y(y, n: int):
    if y is None:
        return None
    if isinstance(y, pd.DataFrame):
        if y.shape[1] != 1:
            raise InputError(f"y must be one column, got a DataFrame with {y.shape[1]} columns.")
        y = y.iloc[:, 0]
    arr = np.asarray(y)
    if arr.ndim != 1:
        raise InputError(f"y must be 1-D (one target per row), got shape {arr.shape}.")
    if arr.shape[0] != n:
        raise InputError(f"y has {arr.shape[0]} values but X has {n} rows; give one target per row.")
    if pd.isna(pd.Series(arr, dtype=object)).any():
        k = int(pd.isna(pd.Series(arr, dtype=object)).sum())
        raise InputError(f"the target y has {k} missing value(s); drop those rows or fill them before auditing.")
    if pd.Series(arr, dtype=object).nunique() < 2:
        raise InputError("the target y is constant (a single class or value); an audit needs a target that varies.")
    return arr


def _apply_categories(X, categories):
    """Columns with a declared ordinal order become ordered pandas Categoricals (levels in that order)."""
    if not categories:
        return X
    if not isinstance(X, pd.DataFrame):
        raise InputError("config key 'categories' names columns, so X must be a DataFrame.")
    check_unique_columns(X)
    changed = {}
    for name, order in categories.items():
        if name not in X.columns:
            raise column_error("config key 'categories' names the column", name, X.columns)
        col = X[name]
        as_text = {str(v): v for v in order}
        values = col.dropna()
        unknown = sorted({str(v) for v in values.unique()} - set(as_text))
        if unknown:
            shown = ", ".join(repr(u) for u in unknown[:8]) + (" ..." if len(unknown) > 8 else "")
            raise InputError(
                f"column {name!r} has values that config key 'categories.{name}' does not list: {shown}; "
                "list every level in order."
            )
        mapped = col.map(lambda v: v if pd.isna(v) else as_text[str(v)])
        changed[name] = pd.Categorical(mapped, categories=list(order), ordered=True)
    return X.assign(**changed)


def _check_weights(sample_weight, n: int):
    if sample_weight is None:
        return None
    try:
        w = np.asarray(pd.to_numeric(pd.Series(np.asarray(sample_weight).ravel()), errors="raise"), dtype=float)
    except (ValueError, TypeError):
        raise InputError("sample_weight must be numbers (one weight per row).") from None
    if w.shape[0] != n:
        raise InputError(f"sample_weight has {w.shape[0]} values but X has {n} rows; give one weight per row.")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        bad = int((~np.isfinite(w) | (w < 0)).sum())
        raise InputError(f"sample_weight has {bad} missing, infinite or negative value(s); weights must be finite and >= 0.")
    if not w.sum() > 0:
        raise InputError("sample_weight sums to 0: at least one row needs a positive weight.")
    return w


def choose_pairs(spec, features: list, res1, names: list, notes: list) -> list:
    """The 2D pairs to compute: every pair, none, the top N by a cheap screen, or a given list.

    ``top:N`` ranks every pair by the geometric mean of its two features' 1D PD
    importance (Greenwell's spread of the 1D PD, already computed), so no 2D PD
    is computed to choose them.
    """
    all_pairs = list(itertools.combinations(features, 2))
    if spec is True:
        return all_pairs
    if spec is False or len(features) < 2:
        return []
    if isinstance(spec, str) and spec.startswith("top:"):
        n = int(spec[4:])
        if n >= len(all_pairs):
            return all_pairs
        imp = importance_table(res1).max(axis=1)
        score = {p: float(np.sqrt(max(imp.get(p[0], 0.0), 0.0) * max(imp.get(p[1], 0.0), 0.0))) for p in all_pairs}
        order = sorted(range(len(all_pairs)), key=lambda i: (-score[all_pairs[i]], i))
        chosen = sorted(order[:n])  # keep column order among the chosen
        notes.append(
            f"2D PDs computed for {n} of the {len(all_pairs)} pairs (pairs = top:{n}): the pairs whose two features "
            "have the largest geometric mean of 1D PD importance, a screen that needs no 2D PD; interactions between "
            "less important features are not examined."
        )
        return [all_pairs[i] for i in chosen]
    out = []
    for a, b in spec:
        for f in (a, b):
            if f not in names:
                raise column_error("pairs (--pairs) feature", f, names, "data's features")
        if a not in features or b not in features:
            notes.append(f"Pair {a} × {b} was not computed: {a if a not in features else b} is constant in the data.")
            continue
        out.append((a, b))
    if out:
        notes.append(f"2D PDs computed only for the {len(out)} pair(s) asked for (pairs = {', '.join(f'{a}:{b}' for a, b in out)}).")
    return out


def _check_rows(n: int, notes: list) -> None:
    """Too few rows is an error; few rows is a warning in the report."""
    if n < MIN_ROWS:
        raise InputError(
            f"too few rows: the data has {n} row{'s' if n != 1 else ''}; an audit needs at least {MIN_ROWS} "
            f"(and {COMFORTABLE_ROWS}+ for scores that stand clear of sampling noise)."
        )
    if n < COMFORTABLE_ROWS:
        notes.append(
            f"Small sample: the data has only {n} rows (fewer than {COMFORTABLE_ROWS}). Each grid point's PD, "
            "incidence and density weight rest on few rows, so scores and rankings carry sampling noise; do not read "
            "small differences between features as findings."
        )


def _check_labels(y: np.ndarray | None, model, adapter) -> None:
    """A classifier's observed labels must be among its classes, or incidence compares nothing."""
    if y is None or not adapter.is_classifier:
        return
    classes = adapter.classes
    if classes is None:
        return
    classes = list(np.asarray(classes).tolist())
    known = {str(c) for c in classes}
    seen = list(pd.unique(pd.Series(y, dtype=object)))
    # a label is known by its text, or (a model without classes_, whose classes are 0 .. k-1) by its value:
    # y of 0.0/1.0 or False/True for the classes 0, 1
    unknown = [v for v in seen if str(v) not in known and not (adapter.inferred_classes and _numeric_in(v, classes))]
    if unknown:
        shown = ", ".join(repr(_scalar(v)) for v in unknown[:8]) + (" ..." if len(unknown) > 8 else "")
        observed = ", ".join(repr(_scalar(v)) for v in seen[:8]) + (" ..." if len(seen) > 8 else "")
        source = (f" (it has no classes_: they are the positions of its {len(classes)} predict_proba columns)"
                  if adapter.inferred_classes else "")
        raise InputError(
            f"the target y holds values that are not classes of the model: {shown}. The model's classes are "
            f"{', '.join(repr(_scalar(c)) for c in classes)}{source}; y holds {observed}. Encode y the way the "
            "model was trained (e.g. map '>50K' to 1)"
            + (", give the model a classes_ attribute" if adapter.inferred_classes else "")
            + " or pass the matching target column."
        )


def _numeric_in(value, classes) -> bool:
    """``value`` equals one of ``classes`` as a number (``1.0`` or ``True`` for the class ``1``)."""
    if isinstance(value, (str, bytes)) or value is None:
        return False
    try:
        return any(float(value) == float(c) for c in classes)
    except (TypeError, ValueError):
        return False


def _predictions(adapter, frame: Frame, max_batch_rows: int = 200_000) -> np.ndarray:
    """The model's response on every data row, (n_rows, n_targets), predicted once per audit."""
    parts = []
    for r0 in range(0, frame.n_rows, max_batch_rows):
        rows = np.arange(r0, min(frame.n_rows, r0 + max_batch_rows))
        parts.append(adapter(frame.take_rows(rows).data))
    return np.vstack(parts)


def _comparison_predictions(data, compare: dict, config, shape) -> dict:
    """Each comparison model's response on the rows, in the audited model's target order (when it has the same)."""
    out = {}
    frame = data.frame
    for name, other in compare.items():
        try:
            other_adapter = make_adapter(other, config.response, config.target,
                                         probe=frame.take_rows(np.arange(min(5, frame.n_rows))).data)
            pred = _predictions(other_adapter, frame)
        except (ValueError, TypeError, AttributeError) as exc:
            raise InputError(f"comparison model {name!r}: {exc}") from exc
        if pred.shape == tuple(shape) and list(getattr(other_adapter, "targets", [])) == list(getattr(data.adapter, "targets", [])):
            out[name] = pred
    return out


def _align_columns(model, frame: Frame, notes: list) -> Frame:
    """Match X to the columns the model was fitted on: missing ones are an error, extra ones are left out."""
    needed = getattr(model, "feature_names_in_", None)
    if needed is None or not frame.is_frame:
        return frame
    needed = [str(c) for c in needed]
    have = list(frame.names)
    missing = [c for c in needed if c not in have]
    if missing:
        raise InputError(
            f"X lacks {len(missing)} column(s) the model was fitted on: {missing[:10]}; pass the data with every "
            "feature the model needs."
        )
    extra = [c for c in have if c not in needed]
    if not extra and have == needed:
        return frame
    if extra:
        notes.append(f"Columns the model does not use were left out: {', '.join(extra)}.")
    keys = [frame.keys[have.index(c)] for c in needed]
    return frame.select(keys)


def _check_comparison(name: str, other, model, frame: Frame):
    cols = getattr(other, "feature_names_in_", None)
    mine = getattr(model, "feature_names_in_", None)
    if cols is not None and mine is not None and list(cols) != list(mine):
        missing = sorted(set(mine) - set(cols))
        extra = sorted(set(cols) - set(mine))
        raise InputError(
            f"comparison model {name!r} was trained on other columns than the audited model "
            f"(missing {missing}, extra {extra}); compare models trained on the same features."
        )
    if cols is not None and frame.is_frame and not set(cols) <= set(frame.names):
        raise InputError(f"comparison model {name!r} needs columns {sorted(set(cols) - set(frame.names))} that X lacks.")


def _na_notes(utility_scores) -> list[str]:
    """One note per reason a 1D score is 'n/a', listing the utilities and features it applies to."""
    unordered: dict[str, None] = {}
    uids: dict[str, None] = {}
    by_reason: dict[str, tuple[dict, dict]] = {}
    for feats, by_id in utility_scores.items():
        if len(feats) != 1:
            continue
        for uid, s in by_id.items():
            if s.available or not s.reason or DETAIL_KEY in s.details:  # stage failures have their own section
                continue
            if "unordered categorical" in s.reason:
                unordered[feats[0]] = None
                uids[uid] = None
            else:
                u, f = by_reason.setdefault(s.reason, ({}, {}))
                u[uid] = None
                f[feats[0]] = None
    notes = []
    if unordered:
        notes.append(
            f"{', '.join(uids)} need an order and are n/a for the unordered categorical features "
            f"{', '.join(unordered)}; give a column an ordered pandas Categorical to score it."
        )
    for reason, (u, f) in by_reason.items():
        notes.append(f"{', '.join(u)} {'is' if len(u) == 1 else 'are'} n/a for {', '.join(repr(x) for x in f)}: {reason}")
    return notes


# ---------------------------------------------------------------- audit
def _ood_note(trust: dict, n_rows: int) -> list[str]:
    """Which rows the out-of-distribution shares were computed on."""
    for by_id in trust.values():
        s = by_id.get("ood_share")
        if s is not None and s.available and "rows" in s.details:
            if s.details["sampled"]:
                return [f"Out-of-distribution shares from a random sample of {s.details['rows']:,} of the {n_rows:,} "
                        f"rows (each moved to every grid value; neighbours among the same rows); standard error of "
                        f"a share at most {s.details['standard_error']:.1%}."]
            return [f"Out-of-distribution shares on all {n_rows:,} rows: every row moved to every grid value, "
                    f"neighbours among all rows."]
    return []


def _one_tree_plan(fn):
    """Run ``fn`` with one exact tree plan per model and data (see :func:`autopdp.pd.fastpath.shared_plans`)."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with shared_plans():
            return fn(*args, **kwargs)

    return wrapper


def _resolved(config, compare) -> tuple[AuditConfig, dict]:
    """The config as an :class:`AuditConfig` and the comparison models as a checked dict."""
    if config is None:
        config = AuditConfig()
    elif isinstance(config, Mapping):
        config = AuditConfig.from_dict(config)
    elif not isinstance(config, AuditConfig):
        raise InputTypeError(f"config must be an AuditConfig or a dict, got {type(config).__name__}.")
    compare = dict(compare or {})
    for name in compare:
        if not isinstance(name, str) or not name or any(c in name for c in "=:"):
            raise InputError(f"comparison model names must be non-empty text without '=' or ':', got {name!r}.")
    return config, compare


@dataclass(frozen=True, eq=False)
class _Inputs:
    """Stage 0's output: the validated data and what every later stage reads from it."""

    full: Frame  # every row, columns aligned to the model
    frame: Frame  # the rows the PDs average over (``max_rows``)
    y: np.ndarray | None  # every row's target
    y_pd: np.ndarray | None  # the target of ``frame``'s rows
    weights_full: np.ndarray | None
    weights: np.ndarray | None
    target_name: str | None
    names: list  # the features asked for
    features: list  # those that are not constant
    adapter: Any  # the model's response (:func:`autopdp.pd.response.make_adapter`)
    rng: np.random.Generator  # row sampling, continued by the 2D stage
    notes: tuple


def _validated_inputs(model, X, y, sample_weight, config: AuditConfig, compare: dict, random_state) -> _Inputs:
    """Stage 0: validate X once (:func:`autopdp.pd.data.as_frame`), y, the weights, the config's
    feature names and the model's response; sample rows (``max_rows``); drop constant features."""
    X = _apply_categories(X, config.categories)
    full = as_frame(X)
    notes: list[str] = []
    full = _align_columns(model, full, notes)
    _check_rows(full.n_rows, notes)
    target_name = target_name_of(y)
    y = _check_y(y, full.n_rows)
    weights_full = _check_weights(sample_weight, full.n_rows)
    rng = np.random.default_rng(random_state)
    rows = sample_rows(full.n_rows, config.max_rows, rng)
    frame = full if rows is None else full.take_rows(rows)
    y_pd = None if y is None else (y if rows is None else y[rows])
    weights = None if weights_full is None else (weights_full if rows is None else weights_full[rows])
    if rows is not None:
        notes.append(f"PDs average over a random sample of {frame.n_rows:,} of the {full.n_rows:,} rows (max_rows).")

    names = list(frame.names) if config.features is None else [frame.names[frame.position_of(f)] for f in config.features]
    for f in list(config.expected_monotonic) + list(config.lipschitz):
        frame.position_of(f)  # unknown feature names in the config are errors
    if isinstance(config.pairs, tuple):  # misspelled pair names are errors before any PD is computed
        for f in {f for pair in config.pairs for f in pair}:
            if f not in frame.names:
                raise column_error("pairs (--pairs) feature", f, frame.names, "data's features")
    features, unresolvable = [], []
    kinds = resolve_categorical(frame, config.categorical_features, config.integer_as_categorical)
    levels: dict[str, int] = {}
    for name in names:
        position = frame.names.index(name)
        col = pd.Series(frame.column(position), dtype=object)
        if kinds[position]:
            levels[name] = int(col.nunique(dropna=True))
        if col.isna().all():
            notes.append(f"Feature {name!r} has all values missing in the data and was skipped (the model is "
                         "still given its missing values).")
        elif col.nunique(dropna=True) <= 1:
            notes.append(f"Feature {name!r} is constant in the data and was skipped.")
        elif not kinds[position] and is_effectively_constant(frame.column(position)):
            unresolvable.append(name)
            notes.append(f"Feature {name!r} is effectively constant in the data (its values span too small a range "
                         "to resolve in floating point) and was skipped.")
        else:
            features.append(name)
    if not features:
        if not unresolvable:
            raise InputError("every feature is constant in the data: there is nothing to audit.")
        shown = ", ".join(repr(n) for n in unresolvable[:5]) + (" ..." if len(unresolvable) > 5 else "")
        raise InputError(
            "every feature is constant in the data, or effectively constant (the values of "
            f"{shown} span too small a range to resolve in floating point): there is nothing to audit."
        )
    _reject_infinite(frame, kinds)
    _check_pair_count(config, features)
    adapter = make_adapter(model, config.response, config.target, probe=frame.take_rows(probe_rows(frame)).data,
                           missing=describe_missing(frame))
    _check_memory(config, frame, features, {f: levels.get(f) for f in features}, max(1, len(adapter.targets)))
    _check_labels(y, model, adapter)
    if adapter.inferred_classes:
        notes.append(
            f"The model ({type(model).__name__}) has no classes_ attribute; it offers predict_proba, so it is explained "
            f"as a classifier through its probabilities ({adapter.response}), with classes "
            f"{', '.join(str(c) for c in np.asarray(adapter.classes).tolist())}: the positions of its predict_proba "
            "columns, as for a target encoded 0, 1, ... (give the model a classes_ attribute to name them)."
        )
    for name, other in compare.items():
        _check_comparison(name, other, model, frame)
    return _Inputs(full=full, frame=frame, y=y, y_pd=y_pd, weights_full=weights_full, weights=weights,
                   target_name=target_name, names=names, features=features, adapter=adapter, rng=rng,
                   notes=tuple(notes))


def pair_count(pairs, n_features: int) -> int:
    """How many 2D PDs the config's ``pairs`` asks for among ``n_features`` audited features."""
    every = n_features * (n_features - 1) // 2
    if pairs is True:
        return every
    if not pairs:
        return 0
    if isinstance(pairs, str):  # "top:N"
        return min(int(pairs.split(":", 1)[1]), every)
    return len(pairs)


def _check_pair_count(config: AuditConfig, features: list) -> None:
    """More 2D PDs than ``max_pairs`` is an error before any PD is computed, naming the count."""
    count = pair_count(config.pairs, len(features))
    if count > config.max_pairs:
        what = {True: f"every pair of the {len(features):,} features"}.get(config.pairs, "the pairs asked for")
        raise InputError(
            f"pairs (--pairs) asks for {count:,} 2D PDs ({what}), above max_pairs ({config.max_pairs:,}); "
            f"use --pairs top:N (pairs = \"top:N\") with N at most {config.max_pairs:,}, e.g. top:"
            f"{min(config.max_pairs, 20)}, name the pairs, or raise max_pairs.")


def _check_memory(config: AuditConfig, frame: Frame, features: list, levels: dict, n_targets: int) -> None:
    """Each array that grows with the input (one PD's ICE curves, the out-of-distribution check's model) fits in
    ``max_batch_mb``, checked before any work; the augmented rows are batched to it by the engine."""
    from .trust.ood import support_bytes, support_width
    from .trust.surrogate import BYTES_PER_CELL, MIN_ROWS as SURROGATE_MIN_ROWS, surrogate_width

    cap = float(config.max_batch_mb) * 1e6
    hint = "or raise max_batch_mb"

    def axis(f, resolution):
        n = levels.get(f)
        return resolution if n is None else min(n, config.max_levels)

    rows = frame.n_rows
    ice_rows = rows if config.subsample is None else min(rows, config.subsample)
    if features:  # every 1D PD keeps its ICE curves: all of them together
        cells = sum(axis(f, config.grid_resolution) for f in features)
        need = 8.0 * ice_rows * cells * n_targets
        if need > cap:
            raise InputError(
                f"the ICE curves of the {len(features):,} 1D PDs ({ice_rows:,} rows x {cells:,} grid points in all x "
                f"{n_targets} target(s)) need {need / 1e6:,.0f} MB, above max_batch_mb ({config.max_batch_mb:,.0f} MB); "
                f"lower subsample or grid_resolution, audit fewer features, {hint}.")
    n_pairs = pair_count(config.pairs, len(features))
    if n_pairs:  # the 2D PDs' ICE surfaces (std_rows rows; every row when std_rows = 0), held until the noise tests ran
        sizes = sorted((axis(f, config.grid_resolution_2d) for f in features), reverse=True)[:2]
        cells = sizes[0] * sizes[-1]
        rows_2d = min(config.std_rows, rows) if config.std_rows else rows
        need = 8.0 * n_pairs * rows_2d * cells * n_targets
        if need > cap:
            raise InputError(
                f"the ICE surfaces of the {n_pairs:,} 2D PDs ({rows_2d:,} rows x up to {cells:,} cells x {n_targets} "
                f"target(s) each) need {need / 1e6:,.0f} MB, above max_batch_mb ({config.max_batch_mb:,.0f} MB); "
                f"lower std_rows or grid_resolution_2d, fewer pairs (--pairs top:N), {hint}.")
    categorical = {f: "categorical" if levels.get(f) is not None else "numeric" for f in features}
    if "correlation" in config.criteria_2d and pair_count(config.pairs, len(features)):
        # the test of independence of two categorical features tabulates every level against every level
        if isinstance(config.pairs, tuple):
            candidates = [p for p in config.pairs if levels.get(p[0]) and levels.get(p[1])]
        else:  # every pair, or a top:N screen not yet known: the two with the most levels
            most = sorted((f for f in features if levels.get(f)), key=lambda f: -levels[f])[:2]
            candidates = [tuple(most)] if len(most) == 2 else []
        for a, b in candidates:
            need = 24.0 * levels[a] * levels[b]  # the table, its expected counts and a temporary
            if need > cap:
                raise InputError(
                    f"the association test of {a!r} x {b!r} ({levels[a]:,} x {levels[b]:,} levels) needs "
                    f"{need / 1e6:,.0f} MB, above max_batch_mb ({config.max_batch_mb:,.0f} MB); leave an ID-like "
                    f"column out (features), leave 'correlation' out of criteria_2d, list the pairs, {hint}.")
    if "surrogate_importance" in config.criteria_2d and features:
        width = surrogate_width(frame, categorical, max_levels=config.max_levels)
        need = float(BYTES_PER_CELL * min(rows, SURROGATE_MIN_ROWS) * width)  # wider designs sample fewer rows
        if need > cap:
            raise InputError(
                f"the surrogate model of {len(features):,} features needs {need / 1e6:,.0f} MB on its "
                f"{min(rows, SURROGATE_MIN_ROWS):,} fewest rows ({width:,} columns: a "
                f"categorical feature takes one per level, up to max_levels = {config.max_levels}), above max_batch_mb "
                f"({config.max_batch_mb:,.0f} MB); audit fewer features (features), lower max_levels, leave "
                f"'surrogate_importance' out of criteria_2d {hint}.")
    if "ood_share" in config.utilities and features:
        width = support_width(frame, categorical, config.max_levels)
        need = support_bytes(min(rows, 4000), width)
        if need > cap:
            raise InputError(
                f"the out-of-distribution check of {len(features):,} features needs {need / 1e6:,.0f} MB ({width:,} "
                f"embedded columns: a categorical feature takes one per level, up to max_levels = {config.max_levels}), "
                f"above max_batch_mb ({config.max_batch_mb:,.0f} MB); audit fewer features (features), lower "
                f"max_levels, leave 'ood_share' out of utilities {hint}.")


@dataclass(frozen=True, eq=False)
class _PDs:
    """Stage 1's output: every PD of the model and of the comparison models."""

    res1: list
    res2: list
    comparisons: dict  # {name: PDs of that model on the same grids and rows}
    pairs: list
    frame_2d: Frame  # the rows the 2D PDs average over
    categorical: list | None  # the categorical features (from the 1D PDs)
    fast_2d: bool  # the exact tree path applies
    tree_reason: str  # why it does not ("" when it does)
    notes: tuple
    margin: Any = None  # the model's margin for the ICE-variance criterion (autopdp.pd.margin.MarginLink) or None

    @property
    def results(self) -> list:
        return list(self.res1) + list(self.res2)


def _partial_dependences(model, data: _Inputs, config: AuditConfig, compare: dict, *, n_jobs, random_state, progress,
                         scheduler, timings: dict) -> _PDs:
    """Stage 1: the 1D PDs, the chosen pairs' 2D PDs (all rows on the exact tree path, else
    ``max_rows_2d`` sampled rows) and the comparison models' PDs on the same grids and rows."""
    frame, features, names, adapter, rng = data.frame, data.features, data.names, data.adapter, data.rng
    weights = data.weights
    notes: list[str] = []
    common = dict(
        response=config.response, target=config.target, percentiles=config.percentiles,
        grid_method=config.grid_method, integer_as_categorical=config.integer_as_categorical,
        max_batch_mb=config.max_batch_mb, progress=progress, method=config.method, std_rows=config.std_rows,
        scheduler=scheduler,
    )
    tree_reason = ""
    if config.method in ("auto", "tree"):
        try:
            plan_tree_path(model, adapter, frame).prepare(np.ones(frame.n_rows))
        except TreePathUnavailable as exc:
            tree_reason = str(exc)
    else:
        tree_reason = f"method={config.method!r}"
    fast_2d = not tree_reason
    # ---- 1D PDs
    t0 = time.perf_counter()
    say(f"1D partial dependence of {len(features)} features", progress)
    res1 = partial_dependence(
        model, frame, features, grid_resolution=config.grid_resolution, kind="both",
        categorical_features=config.categorical_features, subsample=config.subsample,
        random_state=random_state, n_jobs=n_jobs, max_levels=config.max_levels, sample_weight=weights, **common,
    )
    for r in res1:
        notes.extend(n for n in r.notes if not n.startswith(_METHOD_NOTES))
    categorical = [r.features[0] for r in res1 if r.kinds[0] == "categorical"] or None
    custom_1d = {r.features[0]: list(r.grid[0]) if r.kinds[0] == "categorical" else r.grid[0] for r in res1}
    timings["pd_1d"] = time.perf_counter() - t0
    margin = _margin(model, data, config, res1, common, n_jobs, timings)

    # ---- 2D PDs (on a row subsample, grids from all rows)
    res2: list[PDResult] = []
    pairs = choose_pairs(config.pairs, features, res1, names, notes)
    rows_2d = sample_rows(frame.n_rows, config.max_rows_2d, rng) if pairs and not fast_2d else None
    frame_2d = frame if rows_2d is None else frame.take_rows(rows_2d)
    weights_2d = None if weights is None else (weights if rows_2d is None else weights[rows_2d])
    custom_2d = {}
    t0 = time.perf_counter()
    if pairs:
        grids = feature_grids(
            frame, features, grid_resolution=config.grid_resolution_2d, percentiles=config.percentiles,
            categorical_features=categorical, grid_method=config.grid_method,
            integer_as_categorical=config.integer_as_categorical, max_levels=config.max_levels,
        )
        custom_2d = {k: list(g) if kind == "categorical" else g for k, (kind, g) in grids.items()}
        say(f"2D partial dependence of {len(pairs)} pairs", progress)
        # ICE surfaces of a few sampled rows give the noise tests the covariance of each 2D PD's cells;
        # they are dropped once the tests ran (_without_2d_ice)
        res2 = partial_dependence(
            model, frame_2d, pairs, grid_resolution=config.grid_resolution_2d, kind="both",
            subsample=min(config.std_rows, frame_2d.n_rows) if config.std_rows else None,
            categorical_features=categorical, custom_values=custom_2d, n_jobs=n_jobs, random_state=random_state,
            std=True, sample_weight=weights_2d, **common,
        )
        if rows_2d is not None:
            se = np.array([float(np.nanmax(r.stderr)) for r in res2 if np.isfinite(r.stderr).any()])
            error = (f" Monte-Carlo standard error of those 2D PDs: median {np.median(se):.3g}, largest "
                     f"{se.max():.3g} (on the model's output scale)." if se.size else "")
            notes.append(
                f"2D PDs average over a random sample of {frame_2d.n_rows:,} of the {frame.n_rows:,} rows "
                f"(max_rows_2d; the brute-force path).{error}"
            )
    timings["pd_2d"] = time.perf_counter() - t0
    margin = _link_2d(margin, model, data, config, res2, frame_2d, weights_2d, common, n_jobs, timings)
    # how each PD was computed, from its own result (method, rows, ICE rows, std), never one claim for the run
    notes[:0] = _method_notes(res1, full_rows=frame.n_rows) + _method_notes(res2, full_rows=frame.n_rows)
    if tree_reason and config.method == "auto":
        notes.insert(0, f"The exact tree path does not apply to this model ({tree_reason}).")

    # ---- comparison models on the same grids and rows
    t0 = time.perf_counter()
    comparisons: dict[str, tuple] = {}
    for name, other in compare.items():
        say(f"partial dependence of comparison model {name!r}", progress)
        try:
            # ICE curves on the same rows as the audited model's: the similarity test pairs them row by row
            c1 = partial_dependence(
                other, frame, features, kind="both", categorical_features=categorical,
                custom_values=custom_1d, n_jobs=n_jobs, sample_weight=weights, subsample=config.subsample,
                random_state=random_state, **common,
            )
            c2 = partial_dependence(
                other, frame_2d, pairs, kind="average", categorical_features=categorical,
                custom_values=custom_2d, n_jobs=n_jobs, sample_weight=weights_2d, **common,
            ) if pairs else []
        except (ValueError, TypeError) as exc:
            raise InputError(f"comparison model {name!r}: {exc}") from exc
        comparisons[name] = tuple(c1) + tuple(c2)
    timings["comparisons"] = time.perf_counter() - t0
    return _PDs(res1=res1, res2=res2, comparisons=comparisons, pairs=pairs, frame_2d=frame_2d, categorical=categorical,
                fast_2d=fast_2d, tree_reason=tree_reason, notes=tuple(notes), margin=margin)


def _link_kwargs(config: AuditConfig, common: dict, n_jobs) -> dict:
    keep = ("percentiles", "grid_method", "integer_as_categorical", "max_batch_mb", "scheduler")
    pd_kwargs = {k: common[k] for k in keep if k in common}
    pd_kwargs.update(method="brute" if config.method == "brute" else "auto", n_jobs=n_jobs, progress=False)
    return pd_kwargs


def _margin(model, data: _Inputs, config: AuditConfig, res1, common: dict, n_jobs, timings: dict):
    """The model's link scale (:mod:`autopdp.pd.link`: the margin or log-odds of a classifier's probabilities,
    the log of a log-link regressor's predictions) on the 1D PDs' ICE rows and grids, for the structure
    criteria (ICE variance, interaction); None when they read the response."""
    if config.ice_variance_scale != "link":
        return None
    t0 = time.perf_counter()
    margin = model_link(model, data.adapter, data.frame, res1, _link_kwargs(config, common, n_jobs))
    if margin is not None and margin.curves:
        timings["margin_ice"] = time.perf_counter() - t0
    return margin


def _link_2d(margin, model, data: _Inputs, config, res2, frame_2d, weights_2d, common, n_jobs, timings):
    """``margin`` with the 2D PDs on the link scale (:func:`autopdp.pd.link.with_surfaces`)."""
    if margin is None or not res2:
        return margin
    t0 = time.perf_counter()
    margin = with_surfaces(margin, model, data.adapter, frame_2d, res2, _link_kwargs(config, common, n_jobs),
                           weights_2d)
    timings["link_2d"] = time.perf_counter() - t0
    return margin


#: the per-PD notes of stage 1 on how a PD was computed; the audit words them per group of PDs (_method_notes)
_METHOD_NOTES = ("Computed by brute force:", "PD, ICE and std exact by the tree path", "PD exact by the tree path",
                 "std and stderr not computed")


def _how_computed(r) -> tuple[str, str, str]:
    """(method, ICE curves, std) of one PD in words, read from the result itself."""
    method = {"tree": "exactly by the tree path (no model calls)",
              "brute": "by brute force (the model predicted at every grid value)",
              "recursion": "by scikit-learn's recursion method (training-weighted tree paths)"}.get(r.method, r.method)
    n = int(r.n_rows)
    if r.individual is None:
        ice = "no ICE curves kept"
    elif r.ice_rows is None:
        ice = f"ICE curves of all {n:,} rows"
    else:
        ice = f"ICE curves of {len(r.ice_rows):,} sampled rows"
    std = np.asarray(r.std, dtype=float)
    if not np.isfinite(std).any():
        spread = "no std"
    elif r.method == "tree" and any("sampled rows" in x for x in r.notes):
        k = len(r.ice_rows) if r.ice_rows is not None else None
        spread = f"std from {k:,} sampled rows" if k else "std from sampled rows"
    else:
        spread = f"std on all {n:,} rows"
    return method, ice, spread


def _method_notes(results, *, full_rows: int) -> list[str]:
    """One note per way PDs were computed (method, rows, ICE rows, std), naming the PDs it is true of."""
    if not results:
        return []
    ndim = results[0].ndim
    groups: dict[tuple, list] = {}
    for r in results:
        method, ice, spread = _how_computed(r)
        rows = f"all {int(r.n_rows):,} rows" if int(r.n_rows) >= full_rows else \
            f"a random sample of {int(r.n_rows):,} of the {full_rows:,} rows"
        groups.setdefault((method, rows, ice, spread), []).append(r)
    out = []
    for (method, rows, ice, spread), rs in groups.items():
        names = [" × ".join(r.features) for r in rs]
        listed = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
        why = sorted({n.split("does not apply (", 1)[1].rstrip(".").removesuffix(")")
                      for r in rs for n in r.notes if n.startswith("Computed by brute force:") and "(" in n})
        because = f"; the exact tree path does not apply to them ({'; '.join(why[:3])}" \
                  f"{'; ...' if len(why) > 3 else ''})" if why else ""
        count = f"{len(rs)} of the {len(results)}" if len(groups) > 1 else ("The" if len(rs) > 1 else "The")
        plural = "s" if len(rs) > 1 else ""
        out.append(f"{count} {ndim}D PD{plural} ({listed}) computed {method} on {rows}, with {ice} and {spread}"
                   f"{because}.")
    return out


def _level_notes(evidence) -> list[str]:
    """One line per comparison model: the overall difference of the two models' predictions."""
    from ._format import fmt

    out = []
    for key, by in evidence.items():
        if not key.startswith("similarity_level:"):
            continue
        e = by[()]
        name = key.split(":", 1)[1]
        diff = e.details.get("mean_difference", float("nan"))
        direction = "below" if diff > 0 else "above"
        verdict = ("a material difference clear of noise" if e.passed else
                   "not material" if not e.material else "not shown to be material")
        out.append(
            f"Overall level: {name}'s predictions average {fmt(abs(diff))} {direction} this model's over the rows "
            f"({verdict}; {e.test}, p {'<=' if e.p_value <= 1e-6 else '='} {e.p_value:.2g}). The per-feature "
            f"similarity findings compare the PDs' shapes only, so this level difference is stated once here."
        )
    return out


def _without_2d_ice(pds: _PDs) -> _PDs:
    """The PDs with the 2D results' sampled ICE surfaces dropped (only the noise tests read them)."""
    if not any(r.individual is not None for r in pds.res2):
        return pds
    res2 = [dataclasses.replace(r, individual=None, ice_rows=None) for r in pds.res2]
    return dataclasses.replace(pds, res2=res2)


@dataclass(frozen=True, eq=False)
class _Scored:
    """Stage 2's output: every score of every PD, and what the later stages need of it."""

    utility_scores: dict  # {features: {utility id: UtilityScore}}, trust scores included
    importance: pd.DataFrame
    interaction: pd.DataFrame
    criteria: dict  # {pair: {criterion: value}}: the 2D selection criteria
    surrogate: Any  # the additive surrogate, or None
    inputs: ScoringInputs  # what the scores read (the findings' noise tests read it too)
    notes: tuple


def _scores_and_trust(model, data: _Inputs, pds: _PDs, config: AuditConfig, *, random_state, progress,
                      timings: dict, compare: dict | None = None) -> _Scored:
    """Stage 2: the utilities, importance, interaction and 2D criteria of every PD, and the trust checks."""
    frame, adapter, y_pd, weights = data.frame, data.adapter, data.y_pd, data.weights
    res1, res2, comparisons = pds.res1, pds.res2, pds.comparisons
    notes: list[str] = []
    # ---- scores and trust checks, side by side: both read only the PD results.  The scores (numpy,
    # cvxpy: mostly one core) run on a second thread while the trust checks, which call the model
    # and run compiled kernels that release the GIL, keep this thread.
    t0 = time.perf_counter()
    results = pds.results
    predictions = _predictions(adapter, frame)
    inputs = ScoringInputs(
        frame=frame, y=y_pd, is_classifier=adapter.is_classifier,
        prediction_std=predictions.std(axis=0), config=config,
        comparisons={k: {r.features: r for r in v} for k, v in comparisons.items()},
        sample_weight=weights, predictions=predictions, link=log_predictions(pds.margin, predictions),
        comparison_predictions=_comparison_predictions(data, compare or {}, config, predictions.shape),
    )

    def scoring_stage():
        started_scoring = time.perf_counter()
        with announce(f"scoring {len(results)} PDs with {len(config.utilities)} utilities", progress):
            by_pd = {r.features: score_result(inputs, r) for r in results}
            surfaces = inputs.link.surfaces if inputs.link is not None else {}
            imp = importance_table(res1)
            inter = interaction_table([surfaces[r.features].result if r.features in surfaces else r for r in res2])
            out = by_pd, imp, inter, pair_criteria(inputs, res2, imp, inter)
        timings["scoring"] = time.perf_counter() - started_scoring
        return out

    with ThreadPoolExecutor(max_workers=1) as pool:
        scoring = pool.submit(contextvars.copy_context().run, scoring_stage)  # the caller's context: its
        # interface (command line or Python) decides how the stage reports progress
        with announce("trust checks (out-of-distribution share, ALE, StratPD, surrogate)", progress):
            trust, surrogate, _ = trust_scores(model, adapter, frame, y_pd, results, config, predictions=predictions,
                                               random_state=random_state)
        timings["trust"] = time.perf_counter() - t0
        utility_scores, importance, interaction, criteria = scoring.result()
    for key, by_id in trust.items():
        utility_scores[key].update(by_id)
    notes.extend(_ood_note(trust, frame.n_rows))
    if surrogate is not None:
        for r in res2:
            ia, ib = (surrogate.importance.get(f, np.nan) for f in r.features)
            criteria[r.features]["surrogate_importance"] = float(np.sqrt(ia * ib))
        targets = list(adapter.targets)
        of = f"predictions for class {targets[0]} only" if len(targets) > 1 else "predictions"
        notes.append(
            f"Surrogate (additive spline model of the model's {of}) fidelity R^2 = {surrogate.fidelity:.3f}"
            + ("; its importances say little about a model this far from additive." if surrogate.fidelity < 0.5 else ".")
        )
    return _Scored(utility_scores=utility_scores, importance=importance, interaction=interaction, criteria=criteria,
                   surrogate=surrogate, inputs=inputs, notes=tuple(notes))


def _score_table(results: list, scored: _Scored, config: AuditConfig) -> pd.DataFrame:
    """Stage 3: one row per PD with every score and criterion, and the 2D intersection score."""
    utility_scores, importance, criteria, surrogate = (scored.utility_scores, scored.importance, scored.criteria,
                                                       scored.surrogate)
    imp_max = importance.max(axis=1) if not importance.empty else pd.Series(dtype=float)
    records = []
    for r in results:
        row = {"features": r.features, "kind": f"{r.ndim}d"}
        row.update({uid: s.value for uid, s in utility_scores[r.features].items()})
        if r.ndim == 1:
            row["importance"] = float(imp_max.get(r.features[0], np.nan))
            if surrogate is not None:
                row["surrogate_importance"] = float(surrogate.importance.get(r.features[0], np.nan))
        else:
            row.update(criteria[r.features])
        records.append(row)
    scores = pd.DataFrame.from_records(records)
    for col in ("importance", "correlation", "interaction", "surrogate_importance"):
        if col not in scores.columns:
            scores[col] = np.nan
    two = scores["kind"] == "2d"
    pct_cols = [c for c in score_columns(scores)
                if c not in ("intersection", *TRUST_IDS) and scores.loc[two, c].notna().any()]
    inter_input = scores.loc[two, pct_cols].astype(float)
    if "ice_variance" in inter_input and config.ice_variance == "low":
        inter_input["ice_variance"] = -inter_input["ice_variance"]
    scores["intersection"] = np.nan
    if two.any():
        scores.loc[two, "intersection"] = intersection_scores(inter_input, pct_cols).to_numpy()
    tail = ["importance", "correlation", "interaction", "intersection", "surrogate_importance"]
    ordered = ["features", "kind"] + [c for c in scores.columns if c not in ("features", "kind", *tail)]
    scores = scores[ordered + tail]
    return scores


@_one_tree_plan
def audit(model, X, y=None, *, compare=None, config=None, n_jobs=None, random_state=0, progress=None,
          scheduler=None, sample_weight=None) -> Audit:
    """Compute every 1D and 2D PD of ``model`` on ``X``, score, rank and select them.

    Parameters
    ----------
    model : estimator or callable
        A fitted scikit-learn estimator/Pipeline or ``f(X)``.
    X : DataFrame or ndarray
        The data the PDs average over.
    y : array-like, optional
        Observed target, for the ``incidence`` utility.
    compare : dict, optional
        ``{name: fitted model}``: comparison models for ``similarity:<name>``.
    config : AuditConfig or dict, optional
    n_jobs : int, optional
        joblib workers for the PD computations.
    random_state : int
        Seed for row subsampling (same seed, same audit).
    progress : bool, optional
        Progress bars (default: only on an interactive terminal).
    scheduler : str or distributed.Client, optional
        Compute the PDs on a Dask cluster (``"tcp://host:8786"``).
    sample_weight : array-like of shape (n_rows,), optional
        Row weights (e.g. survey weights): every PD is the weighted mean over
        rows, and the utilities' density weights and the observed incidence
        are weighted the same way.  The trust checks (OOD share, ALE,
        StratPD, surrogate) stay unweighted; the report says so.

    Returns
    -------
    Audit

    Notes
    -----
    The stages, in order: :func:`_validated_inputs` (X validated once into the frame every stage
    reads), :func:`_partial_dependences` (1D, 2D and comparison models' PDs),
    :func:`_scores_and_trust` (utilities, importance, 2D criteria and the trust checks, side by
    side), :func:`_score_table`, the findings' noise tests (:func:`autopdp.scores.evidence.assess`),
    PD outside the grid (:func:`autopdp.scores.coverage.outside_grid`), then the data summary and
    :func:`autopdp.summary.audit_metadata`.
    """
    started = time.perf_counter()
    config, compare = _resolved(config, compare)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    data = _validated_inputs(model, X, y, sample_weight, config, compare, random_state)
    timings["validate"] = time.perf_counter() - t0
    pds = _partial_dependences(model, data, config, compare, n_jobs=n_jobs, random_state=random_state,
                               progress=progress, scheduler=scheduler, timings=timings)
    scored = _scores_and_trust(model, data, pds, config, random_state=random_state, progress=progress,
                               timings=timings, compare=compare)
    stage_failures = collect_stage_failures(scored.utility_scores)
    if stage_failures:
        warnings.warn(
            f"{len(stage_failures)} score(s) failed with an unexpected error (a bug, not an expected n/a): "
            f"{stage_failures[0].text}{' ...' if len(stage_failures) > 1 else ''}; see Audit.stage_failures.",
            StageFailureWarning, stacklevel=2,
        )
    scores = _score_table(pds.results, scored, config)
    t0 = time.perf_counter()
    with announce("noise tests of the material scores", progress):
        evidence = assess(scored.inputs, pds.results, scored.utility_scores, scores, surrogate=scored.surrogate)
    timings["noise_tests"] = time.perf_counter() - t0
    pds = _without_2d_ice(pds)
    t0 = time.perf_counter()
    outside = outside_grid(
        model, data.frame, pds.res1, prediction_std=scored.inputs.prediction_std, materiality=config.materiality,
        pd_kwargs=dict(response=config.response, target=config.target, method=config.method, std_rows=0,
                       categorical_features=pds.categorical, max_batch_mb=config.max_batch_mb,
                       sample_weight=data.weights),
    )
    timings["outside_grid"] = time.perf_counter() - t0
    notes = [*data.notes, *pds.notes, *scored.notes, *(o.text for o in outside), *_na_notes(scored.utility_scores),
             *_level_notes(evidence)]
    if data.weights is not None:
        notes.append(
            "PDs, the utilities' density weights and the observed incidence are weighted by the sample weights; "
            "the trust checks (OOD share, ALE, StratPD, surrogate) and the data plots under the PDs are unweighted."
        )
    notes = list(dict.fromkeys(notes))  # one line per distinct note
    data_summary = summarise_data(data.frame, pds.res1, np.random.default_rng(random_state), results_2d=pds.res2,
                                  keep_points=config.keep_points)
    timings["total"] = time.perf_counter() - started
    metadata = audit_metadata(model, compare, data, pds, scored, outside, config, random_state, sample_weight)
    run = {"date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), "timings_s": timings}
    return Audit(
        config=config, results=tuple(pds.results), comparisons=pds.comparisons,
        utility_scores=scored.utility_scores, scores=scores, importance=scored.importance,
        interaction=scored.interaction, notes=tuple(notes), metadata=metadata, data_summary=data_summary, run=run,
        evidence=evidence, stage_failures=stage_failures, sample_weight=data.weights,
    )
