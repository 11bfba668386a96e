"""``AuditConfig``: every setting of an audit, and ``ReportOptions``: what the report's cover says, each
with checks that name the bad key.

A config file (``--config audit.toml``) and a results.json's ``config`` block hold both in one flat
table; :func:`split_config` reads it into the two objects and :func:`config_record` writes it back."""

from __future__ import annotations

import numbers
import types
import warnings
from dataclasses import InitVar, dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

from .errors import InputError

__all__ = ["AuditConfig", "ReportOptions", "FILE_LIMITS", "check_file_limits", "COVER_KEYS", "split_config", "split_record", "load_config", "config_record", "CRITERIA_2D", "DECISIONS", "SIGN_OFF_KEYS", "TEMPLATE_KEYS", "MAX_GRID_RESOLUTION",
           "MAX_GRID_RESOLUTION_2D", "MAX_LEVELS_LIMIT", "load_toml", "parse_pairs"]

#: every score an audit can compute (the AutoPDP utilities and the trust statistics)
UTILITY_IDS = ("monotonicity", "lipschitz", "incidence", "similarity", "slope", "ice_variance",
               "stratpd", "ale_divergence", "ood_share")
#: utilities that qualify a PDP's trustworthiness (autopdp.trust.checks) rather than its interest
TRUST_IDS = ("stratpd", "ale_divergence", "ood_share")
#: the directions a feature's PD may be expected to take
DIRECTIONS = ("increasing", "decreasing", "none")
CRITERIA_2D = ("correlation", "importance", "interaction", "intersection", "surrogate_importance")
#: The sign-off decisions a reviewer can record.
DECISIONS = ("approve", "approve with conditions", "reject")
SIGN_OFF_KEYS = ("name", "role", "date", "decision", "conditions", "statement")
#: The keys of :class:`ReportOptions` (the report's cover), in a config file beside the audit's keys.
COVER_KEYS = ("title", "model_name", "model_version", "dataset_name", "reviewer", "sign_off")
#: Largest ``grid_resolution``: grid points of a 1D PD (each one a prediction of every row taking part).
MAX_GRID_RESOLUTION = 1000
#: Largest ``grid_resolution_2d``: grid points per axis of a 2D PD (its cells are the square of it).
MAX_GRID_RESOLUTION_2D = 200
#: Largest ``max_levels``: levels a categorical feature keeps in its grid and in the out-of-distribution check.
MAX_LEVELS_LIMIT = 1000


def parse_pairs(value):
    """``pairs`` as given (CLI text, TOML value) -> True, False, ``"top:N"`` or a tuple of (a, b) pairs.

    Accepted: true/false, "all", "none", "top:N", "a:b,c:d" and a list of
    two-name lists (``[["age", "hours"], ...]``).
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip()
        low = text.lower()
        if low == "all":
            return True
        if low == "none":
            return False
        if low.startswith("top:"):
            n = low[4:].strip()
            if not n.isdigit() or int(n) < 1:
                raise InputError(f"config key 'pairs' (--pairs) top:N needs a whole number N >= 1, got {value!r}.")
            return f"top:{int(n)}"
        items = [item.strip() for item in text.split(",") if item.strip()]
        pairs = []
        for item in items:
            parts = [x.strip() for x in item.split(":")]
            if len(parts) != 2 or not all(parts):
                raise InputError(
                    f"config key 'pairs' (--pairs) takes all, none, top:N or FEATURE:FEATURE,...; got {value!r}."
                )
            pairs.append(tuple(parts))
        return _pair_tuple(pairs, value)
    if isinstance(value, (list, tuple)):
        return _pair_tuple(value, value)
    raise InputError(f"config key 'pairs' takes true, false, \"all\", \"none\", \"top:N\" or a list of pairs, got {value!r}.")


def _pair_tuple(items, original):
    out = []
    for item in items:
        if not isinstance(item, (list, tuple)) or len(item) != 2 or not all(isinstance(x, str) and x for x in item):
            raise InputError(f"config key 'pairs' lists pairs of two feature names, got {item!r} in {original!r}.")
        if item[0] == item[1]:
            raise InputError(f"config key 'pairs' has a pair of a feature with itself: {item!r}.")
        pair = (item[0], item[1])
        if pair not in out and pair[::-1] not in out:
            out.append(pair)
    if not out:
        raise InputError(f"config key 'pairs' lists no pair: {original!r}; use \"none\" for no 2D PDs.")
    return tuple(out)


def _frozen_map(value) -> Mapping:
    return types.MappingProxyType(dict(value or {}))


def _positive_int(config, key, allow_none=False, minimum=1, maximum=None):
    """Config key ``key`` is an integer in [minimum, maximum] (or None, where allowed)."""
    v = getattr(config, key)
    if v is None and allow_none:
        return
    if not isinstance(v, numbers.Integral) or isinstance(v, bool) or v < minimum:
        raise InputError(f"config key {key!r} must be an integer >= {minimum}, got {v!r}.")
    if maximum is not None and v > maximum:
        cells = f" (a 2D PD of {v * v:,} cells)" if key == "grid_resolution_2d" else ""
        raise InputError(f"config key {key!r} is {v:,}{cells}, above its limit of {maximum:,}; "
                         f"use at most {maximum:,}.")


@dataclass(frozen=True)
class AuditConfig:
    """Settings of :func:`autopdp.audit`.

    Grids
        ``grid_resolution`` (1D, default 20, at most :data:`MAX_GRID_RESOLUTION`),
        ``grid_resolution_2d`` (default 10, at most :data:`MAX_GRID_RESOLUTION_2D`),
        ``percentiles``, ``grid_method`` ("quantile" or "uniform").
    Work
        ``pairs``: which 2D PDs to compute: true/"all" (every pair),
        false/"none", "top:N" (the N pairs whose features have the largest
        geometric mean of 1D PD importance, screened before any 2D PD is
        computed) or a list of pairs (``[["age", "hours"]]`` or
        ``"age:hours,a:b"``).  The pairs are bounded by their cost: ``max_pair_cells``
        (default 2e9) bounds rows x pairs x grid cells of all 2D PDs together (the rows a
        2D PD uses: ``max_rows_2d`` or ``max_rows_2d_tree``) and ``max_pairs`` (default 5000)
        their count; every pair or ``top:N`` above either is audited on the top pairs of
        the ``top:N`` screen with a note saying so; a list of pairs above them is an error.
        ``features`` (restrict to these columns),
        ``max_rows`` (row subsample for every PD; None = all rows),
        ``max_rows_2d`` (row subsample for the 2D PDs on the brute-force path,
        default 500; the report gives their Monte-Carlo error), ``max_rows_2d_tree``
        (the same on the exact tree path, default 10,000: on more rows the 2D PDs, their
        ICE rows and their 2D ALE are computed on that many sampled rows, with their
        Monte-Carlo error; None = every row), ``subsample``
        (ICE curves kept per 1D PD, default 1000), ``max_batch_mb`` (default 256:
        the most memory, in MB, one array that grows with the input may take: a
        batch of augmented rows, the ICE curves of all PDs, the out-of-distribution
        model, the surrogate's design (fitted on fewer rows when wide); a run
        that would need more is refused before any work), ``method``
        ("auto": the exact tree path when it applies, else brute force;
        "brute"; "tree"; "recursion") and ``std_rows`` (see
        :func:`autopdp.partial_dependence`).  On the tree path every 1D PD, its
        ICE curves and std are exact on every row, and every 2D PD on every row up
        to ``max_rows_2d_tree`` rows.
    Model
        ``response``, ``target`` (see :func:`autopdp.partial_dependence`),
        ``categorical_features``, ``categories`` ({feature: [levels in
        order]}: an ordinal order, so monotonicity, Lipschitz and the gate's
        ``monotonic`` rules apply to that categorical feature), ``integer_as_categorical``, ``max_levels``
        (categorical features with more levels keep the most frequent ones, in
        the grids and in the out-of-distribution check, which pools the rest as
        one level; default 50, at most 1000, noted in the report), ``groups``
        ({name: [one-hot columns] or "prefix*"}: audited as one categorical
        feature, exactly one dummy set per level; :mod:`autopdp.auditing.groups`).
    Scoring
        ``utilities`` (ids to run), ``loss`` ("l2" or "l1"),
        ``expected_monotonic`` ({feature: "increasing"|"decreasing"|"none"}),
        ``lipschitz`` ({feature: slope bound in feature units}),
        ``lipschitz_scale`` (default bound = this many times the PD's own
        average slope, default 3, see :mod:`autopdp.scores.utilities.lipschitz`),
        ``ice_variance`` ("high": large ICE spread is interesting; "low":
        small), ``ice_variance_centering`` ("mean": spread of ICE curves
        centred at their own mean, the default; "first": anchored at the first
        grid point; "none": the paper's uncentred eq. 12), ``top_k`` (plots per criterion in
        the curated selection), ``criteria_2d``.
    Findings (see :mod:`autopdp.findings.significance`)
        A PDP is selected under a criterion only when its score is material
        with confidence: a one-sided minimum-effect test rejects "the score is
        at most ``materiality`` (default 0.05) times the standard deviation of
        the model's predictions" (``min_association``, default 0.3, for the
        correlation criterion, whose test is of independence), its p-value
        adjusted across the PDPs of the criterion by ``multiple_testing``
        ("bh": Benjamini-Hochberg, default; "holm") at most ``significance``
        (default 0.05).  The tests are of the fitted model: the Monte-Carlo
        error of averaging over the audit rows, not a refit of the learner.  ``noise_draws`` (default 200) first Monte-Carlo draws,
        more (up to ``max_noise_draws``, default 100,000) where the multiple-testing
        cut-off needs them (sequential test); ``ice_variance_scale`` ("link",
        default: log-odds of probabilities, from the model's margin when its
        decision_function gives its probabilities, else of probabilities
        clipped to [2**-53, 1 - 2**-53]; the decision function or the
        prediction; "response": the prediction's own scale).
    Refits (issue 31, see :mod:`autopdp.findings.robustness`)
        ``refits`` (default 0): K refits of the model's learner (``sklearn.base.clone``, ``random_state``
        varied) on half-samples of the training data given as ``train=``; each finding is then tested at
        the learner level (``Evidence.robust``).  K >= 10 recommended.
    Record
        ``keep_points`` (default False): write the raw values of a random sample of up to 400 rows
        per feature into results.json and draw them on the 2D PDs; off, the record holds only
        binned counts (histograms, rows per 2D grid cell), no row of the data.
    Report
        The cover (``title``, ``model_name``, ...) is not part of the audit: see :class:`ReportOptions`
        (``audit(..., report=ReportOptions(...))``).  Passing those keys here still works for one
        release, with a ``DeprecationWarning``.  The report templates are not config keys: a template
        is code, so it comes only from ``--template-dir`` / ``--docx-template`` (Python:
        ``template_dir=`` / ``template=``), never from a data file (see :data:`TEMPLATE_KEYS` and
        docs/templates.md).
    """

    grid_resolution: int = 20
    grid_resolution_2d: int = 10
    percentiles: tuple = (0.05, 0.95)
    grid_method: str = "quantile"
    pairs: Any = True
    max_pairs: int = 5000
    max_pair_cells: int = 2_000_000_000
    features: tuple | None = None
    max_rows: int | None = None
    max_rows_2d: int | None = 500
    max_rows_2d_tree: int | None = 10_000
    subsample: int | None = 1000
    max_batch_mb: float = 256.0
    method: str = "auto"
    std_rows: int = 128
    response: str = "auto"
    target: Any = None
    categorical_features: tuple | None = None
    categories: Mapping = field(default_factory=dict)
    #: one-hot columns audited as one categorical feature: {name: [columns] or "prefix*"} (autopdp.auditing.groups)
    groups: Mapping = field(default_factory=dict)
    integer_as_categorical: int = 0
    max_levels: int = 50
    utilities: tuple = UTILITY_IDS
    loss: str = "l2"
    expected_monotonic: Mapping = field(default_factory=dict)
    lipschitz: Mapping = field(default_factory=dict)
    lipschitz_scale: float = 3.0
    ice_variance: str = "high"
    ice_variance_centering: str = "mean"
    top_k: int = 3
    materiality: float = 0.05
    min_association: float = 0.3
    significance: float = 0.05
    multiple_testing: str = "bh"
    noise_draws: int = 200
    max_noise_draws: int = 100_000
    ice_variance_scale: str = "link"
    criteria_2d: tuple = CRITERIA_2D
    #: write a sample of up to 400 raw rows (per feature) into results.json and draw them on the 2D PDs
    keep_points: bool = False
    #: refits of the learner on half-samples of the training data (issue 31; 0: none): each finding's robustness
    refits: int = 0
    #: a column of the data naming cohorts (--cohort): every feature's PD per cohort and a test of their shapes
    #: (:mod:`autopdp.findings.cohorts`); a column that is not a model feature is never passed to the model
    cohort: str | None = None
    #: features examined for regions on request (--regions), besides those with an ICE-spread or interaction finding
    regions: tuple = ()
    # Deprecated (one release): the cover's keys, now ReportOptions'; kept aside for audit() and warned of.
    title: InitVar[Any] = None
    model_name: InitVar[Any] = None
    model_version: InitVar[Any] = None
    dataset_name: InitVar[Any] = None
    reviewer: InitVar[Any] = None
    sign_off: InitVar[Any] = None

    def __post_init__(self, *cover):
        set_ = lambda k, v: object.__setattr__(self, k, v)
        given = {k: v for k, v in zip(COVER_KEYS, cover) if v is not None}
        if given:
            warnings.warn(f"AuditConfig({', '.join(k + '=...' for k in given)}) is deprecated: the report's cover is "
                          f"ReportOptions(...), passed as audit(..., report=...); this will stop working in the "
                          f"next release.", DeprecationWarning, stacklevel=3)
        set_("_cover", ReportOptions(**given) if given else None)
        set_("expected_monotonic", _frozen_map(self.expected_monotonic))
        set_("lipschitz", _frozen_map(self.lipschitz))
        set_("pairs", parse_pairs(self.pairs))
        if not isinstance(self.categories, Mapping):
            raise InputError(f"config key 'categories' must be a table of feature = [levels in order], got {self.categories!r}.")
        cats = {}
        for feat, levels in self.categories.items():
            if not isinstance(levels, (list, tuple)) or len(levels) < 2:
                raise InputError(f"config key 'categories.{feat}' must list at least two levels in order, got {levels!r}.")
            if len(set(map(str, levels))) != len(levels):
                raise InputError(f"config key 'categories.{feat}' lists a level twice: {list(levels)!r}.")
            cats[str(feat)] = tuple(levels)
        set_("categories", types.MappingProxyType(cats))
        set_("groups", _groups(self.groups))
        set_("regions", (self.regions,) if isinstance(self.regions, str) else tuple(self.regions))
        for key in ("percentiles", "utilities", "criteria_2d"):
            set_(key, tuple(getattr(self, key)))
        for key in ("features", "categorical_features"):
            if getattr(self, key) is not None:
                set_(key, tuple(getattr(self, key)))
        self._check()

    def _check(self):
        self._check_counts()
        self._check_options()
        self._check_lists()

    def _check_counts(self):
        _positive_int(self, "grid_resolution", minimum=2, maximum=MAX_GRID_RESOLUTION)
        _positive_int(self, "grid_resolution_2d", minimum=2, maximum=MAX_GRID_RESOLUTION_2D)
        _positive_int(self, "max_pairs")
        _positive_int(self, "max_pair_cells")
        _positive_int(self, "top_k")
        _positive_int(self, "noise_draws", minimum=20)
        _positive_int(self, "max_noise_draws", minimum=20)
        if not isinstance(self.refits, numbers.Integral) or isinstance(self.refits, bool) or self.refits < 0 \
                or self.refits == 1 or self.refits > 1000:
            raise InputError(f"config key 'refits' (--refits) must be 0 (none) or a whole number from 2 to 1000, "
                             f"got {self.refits!r}.")
        if self.max_noise_draws < self.noise_draws:
            raise InputError(f"config key 'max_noise_draws' ({self.max_noise_draws}) must be at least 'noise_draws' "
                             f"({self.noise_draws}).")
        if self.ice_variance_scale not in ("link", "response"):
            raise InputError(f"config key 'ice_variance_scale' must be 'link' or 'response', "
                             f"got {self.ice_variance_scale!r}.")
        for key, lo, hi in (("materiality", 0.0, None), ("min_association", 0.0, 1.0), ("significance", 0.0, 1.0)):
            v = getattr(self, key)
            if not isinstance(v, numbers.Real) or isinstance(v, bool) or not (v >= lo) or (hi is not None and v > hi):
                raise InputError(f"config key {key!r} must be a number" + (f" between {lo} and {hi}" if hi else f" >= {lo}")
                                 + f", got {v!r}.")
        if not isinstance(self.keep_points, bool):
            raise InputError(f"config key 'keep_points' (--keep-points) must be true or false, "
                             f"got {self.keep_points!r}.")
        if self.cohort is not None and (not isinstance(self.cohort, str) or not self.cohort):
            raise InputError(f"config key 'cohort' (--cohort) must be a column name, got {self.cohort!r}.")
        if not all(isinstance(f, str) and f for f in self.regions):
            raise InputError(f"config key 'regions' (--regions) lists feature names, got {list(self.regions)!r}.")
        if self.multiple_testing not in ("bh", "holm"):
            raise InputError(f"config key 'multiple_testing' must be 'bh' or 'holm', got {self.multiple_testing!r}.")

    def _check_options(self):
        for key in ("max_rows", "max_rows_2d", "max_rows_2d_tree", "subsample"):
            _positive_int(self, key, allow_none=True)
        _positive_int(self, "integer_as_categorical", minimum=0)
        _positive_int(self, "max_levels", minimum=2, maximum=MAX_LEVELS_LIMIT)
        if self.loss not in ("l2", "l1"):
            raise InputError(f"config key 'loss' must be 'l2' or 'l1', got {self.loss!r}.")
        if self.grid_method not in ("quantile", "uniform"):
            raise InputError(f"config key 'grid_method' must be 'quantile' or 'uniform', got {self.grid_method!r}.")
        if self.method not in ("auto", "brute", "tree", "recursion"):
            raise InputError(f"config key 'method' must be auto, brute, tree or recursion, got {self.method!r}.")
        _positive_int(self, "std_rows", minimum=0)
        if self.ice_variance not in ("high", "low"):
            raise InputError(f"config key 'ice_variance' must be 'high' or 'low', got {self.ice_variance!r}.")
        if self.ice_variance_centering not in ("mean", "first", "none"):
            raise InputError(
                f"config key 'ice_variance_centering' must be 'mean', 'first' or 'none', got {self.ice_variance_centering!r}."
            )
        for key in ("lipschitz_scale", "max_batch_mb"):
            v = getattr(self, key)
            if not isinstance(v, numbers.Real) or isinstance(v, bool) or not v > 0:
                raise InputError(f"config key {key!r} must be a positive number, got {v!r}.")
        if len(self.percentiles) != 2 or not all(isinstance(p, numbers.Real) for p in self.percentiles) or not (
            0 <= self.percentiles[0] < self.percentiles[1] <= 1
        ):
            raise InputError(f"config key 'percentiles' must be [low, high] with 0 <= low < high <= 1, got {list(self.percentiles)!r}.")

    def _check_lists(self):
        for u in self.utilities:
            if u not in UTILITY_IDS:
                raise InputError(f"config key 'utilities' has unknown utility {u!r}; known: {', '.join(UTILITY_IDS)}.")
        for c in self.criteria_2d:
            if c not in CRITERIA_2D:
                raise InputError(f"config key 'criteria_2d' has unknown criterion {c!r}; known: {', '.join(CRITERIA_2D)}.")
        for feat, d in self.expected_monotonic.items():
            if d not in DIRECTIONS:
                raise InputError(
                    f"config key 'expected_monotonic.{feat}' must be one of {', '.join(DIRECTIONS)}, got {d!r}."
                )
        for feat, l in self.lipschitz.items():
            if not isinstance(l, numbers.Real) or isinstance(l, bool) or not l > 0:
                raise InputError(f"config key 'lipschitz.{feat}' must be a positive slope bound, got {l!r}.")

    # ------------------------------------------------------------------ I/O
    @classmethod
    def from_dict(cls, data: Mapping) -> "AuditConfig":
        """Build from a plain dict (e.g. a parsed TOML file); unknown keys are errors."""
        if not isinstance(data, Mapping):
            raise InputError(f"the config must be a table of keys, got {type(data).__name__}.")
        refuse_template_keys(data, "config key")
        known = {f.name for f in fields(cls)} | set(COVER_KEYS)
        unknown = sorted(set(data) - known)
        if unknown:
            raise InputError(
                f"unknown config key {unknown[0]!r}" + (f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else "")
                + f"; known keys: {', '.join(sorted(known))}."
            )
        return cls(**dict(data))

    @classmethod
    def from_toml(cls, path) -> "AuditConfig":
        return cls.from_dict(load_toml(path, what="config"))

    def replace(self, **changes) -> "AuditConfig":
        d = self.to_dict()
        d.update(changes)
        out = AuditConfig.from_dict(d)
        if self._cover is not None and out._cover is None:
            object.__setattr__(out, "_cover", self._cover)
        return out

    def legacy_report(self) -> "ReportOptions | None":
        """The cover keys given to this config the deprecated way (None: none were)."""
        return self._cover

    def to_dict(self) -> dict:
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, types.MappingProxyType):
                v = {k: list(x) if isinstance(x, tuple) else x for k, x in v.items()}
            elif isinstance(v, tuple):
                v = [list(x) if isinstance(x, tuple) else x for x in v]
            out[f.name] = v
        return out


@dataclass(frozen=True)
class ReportOptions:
    """What the report's cover says: not part of the audit (no number depends on it), so a re-rendered
    results.json can carry other words on the same findings.

    Parameters
    ----------
    title : str
    model_name, model_version, dataset_name : str, optional
        Shown on the cover (default: the model's class, no version, "(not named)").
    reviewer : str, optional
        The validator who reviewed the model.
    sign_off : mapping or str, optional
        A table with ``name``, ``role``, ``date`` (YYYY-MM-DD), ``decision`` (one of :data:`DECISIONS`),
        ``conditions`` and ``statement``; the cover's sign-off block shows what is given and leaves the
        rest as a form to fill in (a plain text is kept as the ``statement``).
    """

    title: str = "Partial dependence validation report"
    model_name: str | None = None
    model_version: str | None = None
    dataset_name: str | None = None
    reviewer: str | None = None
    sign_off: Any = None

    def __post_init__(self):
        for key in COVER_KEYS[:-1]:
            v = getattr(self, key)
            if v is not None and not isinstance(v, str):
                raise InputError(f"config key {key!r} must be text, got {type(v).__name__}.")
        object.__setattr__(self, "sign_off", _sign_off(self.sign_off))

    @classmethod
    def from_dict(cls, data: Mapping) -> "ReportOptions":
        unknown = sorted(set(data) - set(COVER_KEYS))
        if unknown:
            raise InputError(f"unknown report key {unknown[0]!r}; known keys: {', '.join(COVER_KEYS)}.")
        return cls(**dict(data))

    def replace(self, **changes) -> "ReportOptions":
        return ReportOptions.from_dict({**self.to_dict(), **changes})

    def to_dict(self) -> dict:
        return {k: dict(v) if isinstance(v, Mapping) else v for k, v in
                ((f.name, getattr(self, f.name)) for f in fields(self))}


def split_config(data: Mapping) -> tuple[AuditConfig, ReportOptions]:
    """A config file's (or a results.json ``config`` block's) flat table -> the audit's settings and the
    report's cover."""
    if not isinstance(data, Mapping):
        raise InputError(f"the config must be a table of keys, got {type(data).__name__}.")
    audit_keys = {k: v for k, v in data.items() if k not in COVER_KEYS}
    return AuditConfig.from_dict(audit_keys), ReportOptions.from_dict({k: data[k] for k in COVER_KEYS if k in data})


def split_record(data: Mapping) -> tuple[AuditConfig, ReportOptions]:
    """:func:`split_config` of a results.json's ``config`` block.  Files written before templates stopped
    being config keys may carry ``template_dir`` / ``docx_template``: they are dropped (a record's config
    describes the run; it never selects the templates a report is rendered with)."""
    if isinstance(data, Mapping):
        data = {k: v for k, v in data.items() if k not in TEMPLATE_KEYS}
    return split_config(data)


def load_config(path) -> tuple[AuditConfig, ReportOptions]:
    """:func:`split_config` of a TOML file."""
    return split_config(load_toml(path, what="config"))


def config_record(config: AuditConfig, report: ReportOptions) -> dict:
    """The flat table :func:`split_config` reads: the audit's keys, then the cover's."""
    return {**config.to_dict(), **report.to_dict()}


#: Limits a config file or a policy's ``[audit]`` table may only lower; only a command-line flag raises them
#: (key -> (flag, built-in limit, what it bounds)).
FILE_LIMITS = {
    "max_batch_mb": ("--max-batch-mb", AuditConfig.max_batch_mb, "largest array an audit step builds, in MB"),
    "max_noise_draws": ("--max-noise-draws", AuditConfig.max_noise_draws, "most Monte-Carlo draws of a noise test"),
    "max_pairs": ("--max-pairs", AuditConfig.max_pairs, "most 2D PDs an audit computes"),
    "max_pair_cells": ("--max-pair-cells", AuditConfig.max_pair_cells,
                       "most cells the 2D PDs evaluate together (rows x pairs x grid cells)"),
}


def check_file_limits(values: Mapping, where: str, raised: Mapping | None = None) -> None:
    """:class:`InputError` when a file's table (``values``: a config file's keys, or a policy's ``[audit]`` table,
    named by ``where``) sets a :data:`FILE_LIMITS` key above the built-in limit, or above the flag that raised it
    (``raised``: key -> value): an input cannot lift the limits meant to bound it."""
    for key, (flag, default, what) in FILE_LIMITS.items():
        v = values.get(key) if isinstance(values, Mapping) else None
        cap = (raised or {}).get(key) or default
        if isinstance(v, numbers.Real) and not isinstance(v, bool) and v > cap:
            raise InputError(f"{where} key {key!r} = {v:g} raises a limit ({what}: {cap:g}); a file can only lower "
                             f"it. To raise it, pass {flag} {v:g} on the command line.")


def _groups(value) -> Mapping:
    """``groups``: a read-only table of name -> a tuple of column names, or a prefix text ending in ``*``."""
    if not isinstance(value, Mapping):
        raise InputError(f"config key 'groups' must be a table of name = [one-hot columns] or \"prefix*\", got {value!r}.")
    out = {}
    for name, cols in value.items():
        if not (isinstance(cols, str) and cols.endswith("*") and len(cols) > 1) and not (
                isinstance(cols, (list, tuple)) and cols and all(isinstance(c, str) for c in cols)):
            raise InputError(f"config key 'groups.{name}' must list the group's columns or give a prefix ending in "
                             f"'*' (e.g. \"{name}_*\"), got {cols!r}.")
        out[str(name)] = cols if isinstance(cols, str) else tuple(cols)
    return types.MappingProxyType(out)


def _deprecated_cover_key(key):
    def read(self):
        warnings.warn(f"AuditConfig.{key} is deprecated: the cover is ReportOptions (Audit.report.{key}).",
                      DeprecationWarning, stacklevel=2)
        return getattr(self.legacy_report() or ReportOptions(), key)
    return property(read)


for _key in COVER_KEYS:  # AuditConfig(title=...).title reads for one more release, with a warning
    setattr(AuditConfig, _key, _deprecated_cover_key(_key))


#: Keys that once chose report templates from a config: a template is code, so only the flag (or the
#: Python argument) named here chooses one; a config, a policy's ``[audit]`` table or a results.json never does.
TEMPLATE_KEYS = {
    "template_dir": "--template-dir DIR (Python: template_dir= of Audit.to_html / to_pdf / write_report)",
    "docx_template": "--docx-template ORG.docx (Python: template= of Audit.to_docx, docx_template= of write_report)",
}


def refuse_template_keys(data: Mapping, where: str, prefix: str = "") -> None:
    """:class:`InputError` when ``data`` has a key of :data:`TEMPLATE_KEYS`, naming it (``where``, e.g.
    "config key" or "policy key", and ``prefix``, e.g. "audit.") and the flag to use instead."""
    for key, flag in TEMPLATE_KEYS.items():
        if key in data:
            raise InputError(f"{where} '{prefix}{key}' is not accepted: a template is code, so autopdp takes it only "
                             f"from the command line or the call that renders the report; remove the key and "
                             f"pass {flag}.")


def _sign_off(value):
    """The sign-off block: None, or a read-only table of the keys in :data:`SIGN_OFF_KEYS`."""
    if value is None:
        return None
    if isinstance(value, str):
        value = {"statement": value}
    if not isinstance(value, Mapping):
        raise InputError(f"config key 'sign_off' must be a table ({', '.join(SIGN_OFF_KEYS)}), got {type(value).__name__}.")
    out = {}
    for key, v in value.items():
        if key not in SIGN_OFF_KEYS:
            raise InputError(f"unknown config key 'sign_off.{key}'; known keys: {', '.join(SIGN_OFF_KEYS)}.")
        if v is None:
            continue
        if key == "date" and not isinstance(v, str):
            v = str(v)  # a TOML date
        if not isinstance(v, str):
            raise InputError(f"config key 'sign_off.{key}' must be text, got {type(v).__name__}.")
        out[key] = v.strip()
    if "decision" in out:
        d = " ".join(out["decision"].lower().replace("_", " ").replace("-", " ").split())
        if d not in DECISIONS:
            raise InputError(f"config key 'sign_off.decision' (--decision) must be one of {', '.join(DECISIONS)}; "
                             f"got {out['decision']!r}.")
        out["decision"] = d
        if d == "approve with conditions" and not out.get("conditions"):
            raise InputError("the decision 'approve with conditions' needs the conditions (sign_off.conditions, --conditions).")
    if "date" in out:
        import datetime as _dt

        try:
            out["date"] = _dt.date.fromisoformat(out["date"]).isoformat()
        except ValueError:
            raise InputError(f"config key 'sign_off.date' (--sign-off-date) must be a date YYYY-MM-DD, got {out['date']!r}.") from None
    return types.MappingProxyType(out) if out else None


def load_toml(path, *, what: str) -> dict:
    """Parse a TOML file with a clear error for a missing or malformed file."""
    import tomllib

    p = Path(path)
    try:
        text = p.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {what} file {str(p)!r}: {exc.strerror or exc}.") from None
    try:
        return tomllib.loads(text.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{what} file {str(p)!r} is not valid TOML: {exc}.") from None
