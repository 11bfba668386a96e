"""The report's cover: the model, the data, the inputs with their digests, the run and the sign-off fields,
as plain values for the templates (:func:`cover`)."""

from __future__ import annotations

from ..config import DECISIONS, SIGN_OFF_KEYS
from .params import split_params

#: how the audit's note on a comparison model's gap to the audited one starts (autopdp.auditing.notes.gap_notes)
GAP_PREFIX = "Gap to "

__all__ = ["cover"]


def cover(audit) -> dict:
    """The cover page's values of ``audit``."""
    cfg = audit.report
    meta = audit.metadata
    model = meta.get("model", {})
    params = model.get("params", {})
    key_params, other_params = split_params(params, model.get("changed_params"))
    data = meta.get("data", {})
    prov = dict(meta.get("provenance") or {})
    inputs = _input_rows(prov)
    return {
        "title": cfg.title,
        "model_name": cfg.model_name or model.get("final_estimator") or model.get("name"),
        "model_type": model.get("type"),
        "steps": model.get("steps", []),
        "key_params": key_params,
        "other_params": other_params,
        "params_defaults_known": model.get("changed_params") is not None,
        "dataset": cfg.dataset_name or "(not named)",
        "rows": f"{data.get('rows', 0):,}",
        "features": data.get("features"),
        "content_sha256": prov.get("data_content_sha256"),
        "sample_weight": prov.get("sample_weight"),
        "inputs": inputs,
        "target": prov.get("target") or "(not named)",
        "positive_class": _class_text(prov.get("positive_class")),
        "command": audit.run.get("command"),
        "seed": prov.get("seed", meta.get("random_state")),
        "date": audit.run.get("date", ""),
        "version": meta.get("versions", {}).get("autopdp"),
        "reviewer": cfg.reviewer,
        "model_version": cfg.model_version,
        "sign_off": {k: (cfg.sign_off or {}).get(k) for k in SIGN_OFF_KEYS},
        "decisions": list(DECISIONS),
        "response": meta.get("response"),
        "targets": ", ".join(str(t) for t in meta.get("targets", [])),
        "compare": [_compare_label(name, prov) for name in meta.get("compare", {})],
        # each comparison model's gap to this one (rows whose prediction changed, the largest PD difference):
        # for a converted artifact (an ONNX file against the trained model) whether conversion changed behaviour
        "gaps": [n for n in audit.notes if n.startswith(GAP_PREFIX)],
    }


def _class_text(value) -> str:
    if value is None:
        return "n/a (not a classifier)"
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


def _compare_label(name: str, prov: dict) -> str:
    """A comparison model as 'name (file.skops)' when it came from a file."""
    inputs = prov.get("inputs") or {}
    rec = inputs.get(f"compare:{name}") or (inputs.get("champion") if name not in inputs else None)
    return f"{name} ({rec['name']})" if rec and rec.get("name") and rec["name"] != name else name


def _input_rows(prov: dict) -> list:
    rows = []
    for role, rec in (prov.get("inputs") or {}).items():
        label = role.replace("compare:", "comparison model ")
        rows.append({"role": label, "name": rec.get("name"), "path": rec.get("path"), "sha256": rec.get("sha256"),
                     "bytes": f"{rec.get('bytes', 0):,}"})
    return rows
