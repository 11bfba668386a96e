"""The run's settings from the command line and its files: the --config file split into the audit's settings
and the report's cover, the flags that win over it, and the limits only a flag may raise."""

from __future__ import annotations

from ..errors import InputError

__all__ = ["SIGN_OFF_FLAGS"]


def _config(path, raised=None, **cover_defaults):
    """The --config file's audit settings and report cover, the cover's names defaulted (``cover_defaults``)
    where the file leaves them out.  The file may only lower the limits the flags in ``raised`` may raise."""
    from ..config import AuditConfig, ReportOptions, check_file_limits, load_toml, split_config

    if path:
        table = load_toml(path, what="config")
        check_file_limits(table, "--config", raised)
        cfg, report = split_config(table)
    else:
        cfg, report = AuditConfig(), ReportOptions()
    missing = {k: v for k, v in cover_defaults.items() if getattr(report, k) is None and v is not None}
    return cfg, (report.replace(**missing) if missing else report)


SIGN_OFF_FLAGS = {"sign_off_name": "name", "sign_off_role": "role", "sign_off_date": "date", "decision": "decision",
                  "conditions": "conditions"}


def _raised(args) -> dict:
    """The limits raised on the command line (``--max-batch-mb`` and the like): key -> value."""
    from ..config import FILE_LIMITS

    out = {key: getattr(args, key, None) for key in FILE_LIMITS}
    for key, value in out.items():
        if value is not None and not value > 0:
            raise InputError(f"{FILE_LIMITS[key][0]} takes a positive number, got {value:g}.")
    return {k: v for k, v in out.items() if v is not None}


def _with_flags(cfg, args):
    """Flags win over the config file: --pairs, --keep-points, --cohort and the limits a flag raises."""
    changes = dict(_raised(args))
    if getattr(args, "pairs", None) is not None:
        changes["pairs"] = args.pairs
    if getattr(args, "keep_points", None):
        changes["keep_points"] = True
    if getattr(args, "cohort", None):
        changes["cohort"] = args.cohort
    if getattr(args, "regions", None):
        asked = [f.strip() for text in args.regions for f in text.split(",") if f.strip()]
        changes["regions"] = tuple(dict.fromkeys([*cfg.regions, *asked]))
    if getattr(args, "group", None):
        from ..auditing.groups import parse_group

        given = [parse_group(text) for text in args.group]
        names = [name for name, _ in given]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise InputError(f"--group names the group {twice[0]!r} twice; give each group once.")
        changes["groups"] = {**dict(cfg.groups), **dict(given)}
    return cfg.replace(**changes) if changes else cfg


def _with_cover_flags(report, args):
    """Flags win over the config file: the cover's texts and the sign-off fields."""
    changes = {key: getattr(args, key) for key in ("title", "model_name", "model_version", "reviewer")
               if getattr(args, key, None) is not None}
    sign = {field: getattr(args, flag) for flag, field in SIGN_OFF_FLAGS.items() if getattr(args, flag, None) is not None}
    if sign:
        changes["sign_off"] = {**dict(report.sign_off or {}), **sign}
    return report.replace(**changes) if changes else report
