"""An :class:`autopdp.Audit` written as results.json and read back (with its ICE sidecar, ice.parquet).

:func:`audit_json` writes every number of an audit as the column tables of :mod:`autopdp.io.results`;
:func:`read_audit` reads them back into the fields of an audit, whose report renders the same; :func:`audit_ice` writes
the ICE curves.  ``Audit.to_json``, ``Audit.from_json`` and ``Audit.to_ice`` call these.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd

from .._version import __version__
from ..config import config_record, split_record
from ..errors import InputError
from ..pd.result import PDResult
from ..scores.failures import StageFailure
from ..scores.selection import score_columns
from ..scores.utilities import UtilityScore
from ..utils.atomic import atomic_write_bytes, atomic_write_text
from ..utils.jsonable import json_array, json_scalar, jsonable
from .ice import (ICE_FILE, ICE_MAX_MB, SampledWeights, ice_parquet_bytes, ice_sidecar_name, read_ice,
                  read_ice_weight_totals, read_ice_weights)
from .results import (JSON_SCHEMA, RESULTS_MAX_MB, _check_expansion, _damaged, _evidence_dict, _evidence_from,
                      _evidence_meta, _is_json_text, _json_text, _kept_details, _ndim, _num, _pd_record, _records_of,
                      _source_bytes, _source_label, _table, _table_from, _weight_rows)
from .tables import tables

__all__ = ["audit_dict", "audit_json", "audit_ice", "read_audit", "RUN_KEY"]

#: The only key of results.json that changes between identical runs.
RUN_KEY = "run"


def audit_dict(audit, finding_texts: list, ice_file: str | None = None) -> dict:
    """Every number of ``audit`` as plain JSON values, without the ICE curves (:meth:`autopdp.Audit.to_dict`);
    ``finding_texts``: the report's sentence and trust cell of each selected PDP, in the selection's order.

    Left out to keep results.json small (see ``docs/user-guide.md``, "results.json"): the ICE
    curves (``results[*].individual`` is null, ``ice_kept`` says whether they were computed;
    :func:`audit_ice` / ``--ice`` writes them to a sidecar), the utilities' comparison surfaces of
    2D PDs and the OOD check's per-cell diagnostics of 2D PDs other than the ``ood`` shares (both
    stay on the in-memory ``utility_scores``; the report draws neither).  ``std`` and
    ``stderr`` keep :data:`SPREAD_DIGITS` significant digits; PD averages, grids and scores are exact.
    ``ice_file``: the sidecar's file name written beside (recorded under ``ice``).
    """
    columns = score_columns(audit.scores)
    values = [audit.scores[c].to_numpy(dtype=float) for c in columns]
    scores = [{"features": list(f), "kind": k,
               **{c: None if np.isnan(v[i]) else json_scalar(float(v[i])) for c, v in zip(columns, values)}}
              for i, (f, k) in enumerate(zip(audit.scores["features"], audit.scores["kind"]))]
    verdicts: dict[str, list] = {}
    for feats, by_id in audit.utility_scores.items():
        two_d = len(feats) == 2
        for uid, s in by_id.items():
            verdicts.setdefault(uid, []).append({
                "features": list(feats), "value": json_scalar(s.value), "target": json_scalar(s.target),
                "comparison": None if s.comparison is None or two_d else json_array(s.comparison),
                "reason": s.reason, "details": jsonable(_kept_details(s.details) if two_d else s.details),
            })
    evidence_meta = _evidence_meta(audit.evidence)
    n_curves = sum(r.individual.shape[0] * r.individual.shape[1]
                   for r in (*audit.results, *(c for v in audit.comparisons.values() for c in v))
                   if r.individual is not None)
    grids: dict[str, list] = {}
    return {
        "schema": JSON_SCHEMA,
        "autopdp_version": __version__,
        "config": jsonable(config_record(audit.config, audit.report)),
        "metadata": jsonable(dict(audit.metadata)),
        "notes": list(audit.notes),
        "stage_failures": [f.to_dict() for f in audit.stage_failures],
        "scores": tables(scores),
        "selection": [
            {"features": list(s.features), "kind": s.kind, "reasons": [list(r) for r in s.reasons],
             "sentence": f["sentence"], "trust": f["trust"], "evidence": [e.to_dict() for e in s.evidence]}
            for s, f in zip(audit.selection, finding_texts)
        ],
        # the 1D patterns not counted as findings: the held-out data do not show their feature to matter (derived
        # from the evidence and metadata.permutation_importance on reading; written for readers of the file)
        "set_aside": {f: list(cs) for f, cs in audit.set_aside_patterns().items()},
        # the tested regions of the heterogeneous features (issue 55); absent in files of earlier versions
        **({"regions": jsonable(list(audit.region_records.values()))} if audit.region_records is not None else {}),
        **({"cohorts": jsonable(dict(audit.cohort_record))} if audit.cohort_record is not None else {}),
        "evidence_meta": evidence_meta,
        "evidence": {c: tables(_evidence_dict(e, evidence_meta.get(c, {}), audit.config) for e in by.values())
                     for c, by in audit.evidence.items()},
        "importance": _table(audit.importance),
        "interaction": _table(audit.interaction),
        "utility_scores": {uid: tables(v) for uid, v in verdicts.items()},
        "results": tables((_pd_record(r, grids) for r in audit.results), split=_ndim),
        "comparisons": {k: tables((_pd_record(r, grids) for r in v), split=_ndim)
                        for k, v in audit.comparisons.items()},
        "grids": grids,
        "ice": {"file": ice_file, "curves": int(n_curves),
                "note": ("ICE curves are not in results.json: they are in the file named here" if ice_file else
                         "ICE curves are not in results.json: write them with Audit.to_json(path, ice=True) "
                         "or the --ice flag (ice.parquet)")},
        "data_summary": jsonable(dict(audit.data_summary)),
        **({"refits": {**audit.refits.to_dict(),
                       "curves": {f[0]: json_array(np.asarray(v)) for f, v in audit.refit_curves.items()}}}
           if audit.refits is not None else {}),
        RUN_KEY: jsonable(dict(audit.run)),
    }



def audit_json(audit, finding_texts: list, path=None, *, ice=None, ice_file: str | None = None) -> str:
    """Every number of ``audit`` (ICE curves apart) as JSON (:meth:`autopdp.Audit.to_json`); written atomically to
    ``path`` when given.

    ``ice``: also write the ICE curves to a Parquet sidecar (see :func:`audit_ice`): ``True`` for
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
    text = _json_text(audit_dict(audit, finding_texts, ice_file=ice_name))
    if ice_path is not None:
        atomic_write_bytes(ice_path, audit_ice(audit))
    if path is not None:
        atomic_write_text(path, text)
    return text



def audit_ice(audit, path=None) -> bytes:
    """The ICE curves of every PD (and the comparison models') as Parquet bytes (:mod:`autopdp.io.ice`);
    written atomically to ``path`` when given."""
    data = ice_parquet_bytes([("", r) for r in audit.results]
                             + [(name, r) for name, rs in audit.comparisons.items() for r in rs],
                             sample_weight=audit.sample_weight)
    if path is not None:
        atomic_write_bytes(path, data)
    return data



def read_audit(source, *, ice=None, max_mb: float = RESULTS_MAX_MB) -> dict:
    """The fields of an :class:`autopdp.Audit` read back from :func:`audit_json` output (a path or the JSON text):
    the report renders the same (:meth:`autopdp.Audit.from_json`).

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
        return _fields(d, results, comparisons, sample_weight)



def _fields(d: dict, results: list, comparisons: dict, sample_weight=None) -> dict:
    """The audit's fields from the file's records (:func:`read_results`) and its PDs."""
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
    config, report = split_record(d["config"])
    meta = d.get("evidence_meta") or {}
    evidence = {c: {tuple(e["features"]): _evidence_from(e, meta.get(c, {}), config) for e in items}
                for c, items in d["evidence"].items()}
    return dict(
        config=config, report=report, results=tuple(results),
        comparisons={k: tuple(v) for k, v in comparisons.items()}, utility_scores=utility_scores, scores=scores,
        importance=_table_from(d["importance"], "feature", targets),
        interaction=_table_from(d["interaction"], ["feature_1", "feature_2"], targets),
        notes=tuple(d.get("notes", ())), metadata=d.get("metadata", {}), data_summary=d.get("data_summary", {}),
        run=d.get(RUN_KEY, {}), evidence=evidence,
        stage_failures=tuple(StageFailure.from_dict(f) for f in d.get("stage_failures", ())),
        sample_weight=sample_weight, **_refits_from(d.get("refits")), region_records=_regions_from(d.get("regions")),
        cohort_record=_cohorts_from(d.get("cohorts")),
    )


def _cohorts_from(record):
    """``cohort_record`` from results.json's ``cohorts`` (absent: None)."""
    if record is None:
        return None
    if not isinstance(record, dict) or not isinstance(record.get("column"), str) or not isinstance(
            record.get("features"), list) or not all(isinstance(f, dict) and isinstance(f.get("curves"), list)
                                                     for f in record["features"]):
        raise InputError("results.json's 'cohorts' is damaged: expected a column and a list of features with their "
                         "curves; write the file again with autopdp.")
    return record


def _regions_from(records):
    """``region_records`` from results.json's ``regions`` (absent: None, not assessed)."""
    if records is None:
        return None
    if not isinstance(records, list) or not all(isinstance(r, dict) and isinstance(r.get("feature"), str)
                                                and isinstance(r.get("regions", []), list) for r in records):
        raise InputError("results.json's 'regions' is damaged: expected a list of records, each with a 'feature'; "
                         "write the file again with autopdp.")
    return {r["feature"]: r for r in records}



def _refits_from(d) -> dict:
    """``refits`` and ``refit_curves`` of :class:`Audit` from results.json's ``refits`` (absent: none)."""
    if not d:
        return {}
    from ..pd.refits import Refits

    curves = {(f,): np.asarray(v, dtype=float) for f, v in (d.get("curves") or {}).items()}
    return {"refits": Refits.from_dict(d), "refit_curves": curves}
