"""The gate's policy: the TOML tables parsed and checked (:class:`GatePolicy`, :class:`FeaturePolicy`), each
rule's keys and the modifiers that need it, and the settings the verdict rests on (:data:`DECISION_KEYS`).
The file format is documented in :mod:`autopdp.gate`."""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from ..config import AuditConfig, load_toml
from ..errors import InputError
from ..config import DIRECTIONS

__all__ = ["GatePolicy", "FeaturePolicy", "CHAMPION", "DECISION_KEYS"]

CHAMPION = "champion"
DEFAULT_MIN_IMPORTANCE = 0.001
DEFAULT_FORBIDDEN_TOP_K = 5

FEATURE_KEYS = ("monotonic", "max_monotonicity", "lipschitz", "max_lipschitz", "max_incidence", "max_similarity",
                "max_slope", "min_importance", "robust")
IMPORTANCE_KEYS = ("forbidden", "forbidden_top_k", "required", "min_importance", "required_top_k")
CHAMPION_KEYS = ("max_similarity", "max_pd_gap", "max_changed_rows")
COHORT_KEYS = ("same_shape_across", "max_shape_gap")
SECTIONS = ("features", "importance", "champion", "cohorts", "audit", "gate")
GATE_KEYS = ("decide",)
DECIDE = ("evidence", "limits")


def _number(value, key: str, *, positive=False, minimum=None) -> float:
    if not isinstance(value, numbers.Real) or isinstance(value, bool) or not np.isfinite(value):
        raise InputError(f"policy key {key!r} must be a number, got {value!r}.")
    if positive and value <= 0:
        raise InputError(f"policy key {key!r} must be positive, got {value!r}.")
    if minimum is not None and value < minimum:
        raise InputError(f"policy key {key!r} must be >= {minimum}, got {value!r}.")
    return float(value)


def _share(value, key: str) -> float:
    v = _number(value, key, minimum=0)
    if v > 1:
        raise InputError(f"policy key {key!r} is a share of the rows, between 0 and 1; got {value!r}.")
    return v


def _int(value, key: str) -> int:
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
        raise InputError(f"policy key {key!r} must be a whole number >= 1, got {value!r}.")
    return int(value)


def _names(value, key: str) -> tuple:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"policy key {key!r} must be a list of feature names, got {value!r}.")
    return tuple(value)


def _check_keys(table, allowed, where: str):
    if not isinstance(table, Mapping):
        raise InputError(f"policy key {where!r} must be a table, got {type(table).__name__}.")
    for k in table:
        if k not in allowed:
            raise InputError(f"unknown policy key {where + '.' + k if where else k!r}; known keys here: {', '.join(allowed)}.")


#: a key that only modifies another rule -> the key(s) that make that rule (one of them must be set)
FEATURE_MODIFIERS = {"max_monotonicity": ("monotonic",), "lipschitz": ("max_lipschitz",),
                     "robust": ("monotonic", "max_lipschitz", "max_slope")}
IMPORTANCE_MODIFIERS = {"forbidden_top_k": ("forbidden",), "min_importance": ("required",),
                        "required_top_k": ("required",)}
#: the AuditConfig keys the gate's verdict rests on (the scores it re-computes and its evidence mode): a --config
#: cannot set them for the gate; only the policy's [audit] table can (else the defaults hold)
DECISION_KEYS = ("materiality", "significance", "multiple_testing", "noise_draws", "max_noise_draws", "loss",
                 "lipschitz_scale")


def _check_rules(features: Mapping, imp: Mapping, champ: Mapping) -> None:
    """Every modifier key has the rule it modifies, and the policy defines at least one check."""
    n_rules = 0
    for name, table in features.items():
        for key, needs in FEATURE_MODIFIERS.items():
            if key in table and not any(table.get(k) not in (None, "none") for k in needs):
                what = ' = "increasing" or "decreasing"' if needs[0] == "monotonic" else " = LIMIT"
                raise InputError(
                    f"policy key 'features.{name}.{key}' modifies a rule the policy does not set: add "
                    f"'features.{name}.{needs[0]}'{what} (or remove the key).")
        n_rules += sum(1 for k in ("max_lipschitz", "max_incidence", "max_similarity", "max_slope", "min_importance")
                       if k in table)
        n_rules += table.get("monotonic") not in (None, "none")
    for key, needs in IMPORTANCE_MODIFIERS.items():
        if key in imp and not imp.get(needs[0]):
            raise InputError(f"policy key 'importance.{key}' modifies a rule the policy does not set: add "
                             f"'importance.{needs[0]}' = [FEATURE, ...] (or remove the key).")
    n_rules += bool(imp.get("forbidden")) + bool(imp.get("required")) + sum(k in champ for k in CHAMPION_KEYS)
    if not n_rules:
        raise InputError(_no_check_message())


def _no_check_message() -> str:
    return ("the policy defines no check, so the gate could only pass; add at least one rule, e.g. the table "
            "[features.age] with the line monotonic = \"increasing\" (see the gate section of docs/user-guide.md).")


@dataclass(frozen=True)
class FeaturePolicy:
    monotonic: str | None = None
    #: None: the default limit, materiality x the prediction sd (on the prediction's own scale)
    max_monotonicity: float | None = None
    lipschitz: float | None = None
    max_lipschitz: float | None = None
    max_incidence: float | None = None
    max_similarity: float | None = None
    max_slope: float | None = None
    min_importance: float | None = None
    #: the shape rules fail only on a violation that is robust (the learner-PD of the refits shows it too;
    #: :mod:`autopdp.gating.robust`); off by default
    robust: bool = False


@dataclass(frozen=True)
class GatePolicy:
    """A parsed, validated policy; see the module docs for the file format."""

    features: Mapping[str, FeaturePolicy] = field(default_factory=dict)
    forbidden: tuple = ()
    forbidden_top_k: int = DEFAULT_FORBIDDEN_TOP_K
    required: tuple = ()
    min_importance: float = DEFAULT_MIN_IMPORTANCE
    required_top_k: int | None = None
    champion_max_similarity: float | None = None
    #: the largest 1D PD difference to the champion allowed (prediction units), and the largest share of rows whose
    #: prediction may differ from the champion's by more than 1e-6: a converted artifact against the trained model
    champion_max_pd_gap: float | None = None
    champion_max_changed_rows: float | None = None
    #: ``[cohorts] same_shape_across``: a column whose cohorts every feature's PD must share the shape of, within
    #: ``max_shape_gap`` (prediction units on the ICE-spread scale; default: materiality x the prediction sd)
    cohort_column: str | None = None
    cohort_max_shape_gap: float | None = None
    audit: Mapping[str, Any] = field(default_factory=dict)
    #: "evidence" (default): a limit with a noise test fails when the score exceeds it with confidence (a one-sided
    #: minimum-effect test, :mod:`autopdp.gating.limits`); "limits": on the raw score against the limit alone
    decide: str = "evidence"
    #: the policy file it was read from: path, bytes and sha256 (None when built from a dict)
    source: Mapping[str, Any] | None = None

    @classmethod
    def from_dict(cls, data: Mapping) -> "GatePolicy":
        _check_keys(data, SECTIONS, "")
        feats = {}
        for name, table in (data.get("features") or {}).items():
            where = f"features.{name}"
            _check_keys(table, FEATURE_KEYS, where)
            kw = {}
            for k, v in table.items():
                key = f"{where}.{k}"
                if k == "monotonic":
                    if v not in DIRECTIONS:
                        raise InputError(f"policy key {key!r} must be one of {', '.join(DIRECTIONS)}, got {v!r}.")
                    kw[k] = v
                elif k == "lipschitz":
                    kw[k] = _number(v, key, positive=True)
                elif k == "robust":
                    if not isinstance(v, bool):
                        raise InputError(f"policy key {key!r} must be true or false, got {v!r}.")
                    kw[k] = v
                else:
                    kw[k] = _number(v, key, minimum=0)
            feats[name] = FeaturePolicy(**kw)
        imp = data.get("importance") or {}
        _check_keys(imp, IMPORTANCE_KEYS, "importance")
        champ = data.get("champion") or {}
        _check_keys(champ, CHAMPION_KEYS, "champion")
        cohorts = data.get("cohorts") or {}
        _check_keys(cohorts, COHORT_KEYS, "cohorts")
        column = cohorts.get("same_shape_across")
        if column is not None and (not isinstance(column, str) or not column):
            raise InputError(f"policy key 'cohorts.same_shape_across' must be a column name, got {column!r}.")
        if "max_shape_gap" in cohorts and column is None:
            raise InputError("policy key 'cohorts.max_shape_gap' modifies a rule the policy does not set: add "
                             "'cohorts.same_shape_across' = \"COLUMN\" (or remove the key).")
        gate_keys = data.get("gate") or {}
        _check_keys(gate_keys, GATE_KEYS, "gate")
        decide = gate_keys.get("decide", "evidence")
        if decide not in DECIDE:
            raise InputError(f"policy key 'gate.decide' must be one of {', '.join(DECIDE)}, got {decide!r}.")
        audit_keys = dict(data.get("audit") or {})
        from ..config import COVER_KEYS, refuse_template_keys

        refuse_template_keys(audit_keys, "policy key", "audit.")  # a policy never chooses a template (code)
        cover = [k for k in COVER_KEYS if k in audit_keys]
        if cover:  # the cover (title, names, sign-off) is the report's, not the gate's
            raise InputError(f"policy key 'audit.{cover[0]}' is the report's cover, not an audit setting: set it in "
                             f"the --config file or with the cover's flags (--title, --model-name, --reviewer, ...), "
                             f"not in the policy.")
        if audit_keys:
            AuditConfig.from_dict(audit_keys)  # unknown or mistyped audit keys are errors now, named
        policy = cls(
            features=feats,
            forbidden=_names(imp["forbidden"], "importance.forbidden") if "forbidden" in imp else (),
            forbidden_top_k=_int(imp.get("forbidden_top_k", DEFAULT_FORBIDDEN_TOP_K), "importance.forbidden_top_k"),
            required=_names(imp["required"], "importance.required") if "required" in imp else (),
            min_importance=_number(imp.get("min_importance", DEFAULT_MIN_IMPORTANCE), "importance.min_importance", minimum=0),
            required_top_k=_int(imp["required_top_k"], "importance.required_top_k") if "required_top_k" in imp else None,
            champion_max_similarity=_number(champ["max_similarity"], "champion.max_similarity", minimum=0)
            if "max_similarity" in champ else None,
            champion_max_pd_gap=_number(champ["max_pd_gap"], "champion.max_pd_gap", minimum=0)
            if "max_pd_gap" in champ else None,
            champion_max_changed_rows=_share(champ["max_changed_rows"], "champion.max_changed_rows")
            if "max_changed_rows" in champ else None,
            cohort_column=column,
            cohort_max_shape_gap=_number(cohorts["max_shape_gap"], "cohorts.max_shape_gap", minimum=0)
            if "max_shape_gap" in cohorts else None,
            audit=audit_keys,
            decide=decide,
        )
        if column is None:
            _check_rules(data.get("features") or {}, imp, champ)
        return policy

    @classmethod
    def from_toml(cls, path) -> "GatePolicy":
        import dataclasses

        from ..io.provenance import file_record

        policy = cls.from_dict(load_toml(path, what="policy"))
        return dataclasses.replace(policy, source=file_record(path, "policy"))

    @property
    def needs_champion(self) -> bool:
        return (self.champion_max_similarity is not None or self.champion_max_pd_gap is not None
                or self.champion_max_changed_rows is not None
                or any(f.max_similarity is not None for f in self.features.values()))

    @property
    def needs_target(self) -> bool:
        return any(f.max_incidence is not None for f in self.features.values())

    def feature_names(self) -> list[str]:
        return list(dict.fromkeys([*self.features, *self.forbidden, *self.required]))

    def check_features(self, names) -> None:
        """Unknown feature names are errors that name the feature and the policy key."""
        from ..io.loading import did_you_mean, list_columns

        names = [str(n) for n in names]
        known = set(names)

        def hint(name):
            return did_you_mean(name, names) or f" Features: {list_columns(names)}."

        for name in self.features:
            if name not in known:
                raise InputError(f"policy key 'features.{name}' names a feature that is not in the data.{hint(name)}")
        for key, group in (("importance.forbidden", self.forbidden), ("importance.required", self.required)):
            for name in group:
                if name not in known:
                    raise InputError(f"policy key {key!r} names {name!r}, which is not a feature of the data.{hint(name)}")

    def without_loosening(self, base: AuditConfig) -> tuple[AuditConfig, list[str]]:
        """``base`` (a --config's settings) with the keys the gate's verdict rests on (:data:`DECISION_KEYS`) put
        back to the defaults where they differ and the policy does not set them, and the keys so reset.

        The policy decides: its ``[audit]`` table (applied by :meth:`audit_config`) and its rules win over a
        --config, and a --config cannot make the gate's evidence looser (e.g. ``materiality = 1000``).
        """
        default = AuditConfig()
        reset = [k for k in DECISION_KEYS if k not in self.audit and getattr(base, k) != getattr(default, k)]
        changes = {k: getattr(default, k) for k in reset}
        # a max_lipschitz rule without the policy's own bound is scored with the audit's bound: never a --config's
        bounds = dict(base.lipschitz)
        unbounded = [n for n, fp in self.features.items() if fp.max_lipschitz is not None and fp.lipschitz is None
                     and n in bounds and "lipschitz" not in self.audit]
        if unbounded:
            changes["lipschitz"] = {n: b for n, b in bounds.items() if n not in unbounded}
            reset += [f"lipschitz.{n}" for n in unbounded]
        return (base.replace(**changes) if changes else base), reset

    def audit_config(self, base: AuditConfig | None = None) -> AuditConfig:
        """The audit settings the gate needs: declared directions and bounds added to ``base``, and the cohort
        column of ``[cohorts] same_shape_across``."""
        base = base or AuditConfig()
        if self.audit:
            base = base.replace(**self.audit)
        directions = dict(base.expected_monotonic)
        bounds = dict(base.lipschitz)
        for name, fp in self.features.items():
            if fp.monotonic is not None:
                directions[name] = fp.monotonic
            if fp.lipschitz is not None:
                bounds[name] = fp.lipschitz
        cohort = self.cohort_column if self.cohort_column is not None else base.cohort
        return base.replace(expected_monotonic=directions, lipschitz=bounds, cohort=cohort)
