"""The ``autopdp`` command line: ``demo``, ``report``, ``gate`` and ``compare``.

Exit codes (the same table is in ``--help``, the README and the user guide):

===  ==========================================================================
0    success (``gate``: every check passed)
1    ``gate`` only: at least one check failed (the outputs are written)
2    bad input: one line naming the problem and what to do, no traceback
3    internal failure: one line naming the stage that failed, or stage failures
     (a score that failed unexpectedly; the outputs are written and list them)
130  interrupted (Ctrl-C): the outputs of an earlier run are left untouched
===  ==========================================================================

A stage failure (:mod:`autopdp.scores.failures`) is a bug inside one PDP's
utility or trust statistic: the run completes, the report and results.json list
it in "Stage failures", one line per failure goes to stderr, and the exit code
is 3 (also for ``gate``, whose verdict then rests on incomplete scores).

Every output of a run (results.json, ice.parquet with --ice, report.html,
report.pdf, gate.json, gate.xml, manifest.json) is staged and replaces the previous set only when all
of them were written; ``--out`` is checked before any work.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .inputs import (
    StageError, _check_allow_pickle, _check_signatures, _display_name, _inputs, _load_data, _load_models, _loading,
    _log_mlflow, _mlflow_target, _model_label, _one_line, _train, _with_notes, _with_provenance, stage)
from ..errors import InputError, command_line_interface
from .settings import SIGN_OFF_FLAGS, _config, _raised, _with_cover_flags, _with_flags  # noqa: F401

__all__ = ["main", "Finish"]


EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130

@dataclass(frozen=True)
class Finish:
    """What a command does once its audit is computed: write the documents, log to MLflow, print its last lines
    and return its exit code (:func:`finish`)."""

    kind: str  # "demo", "report", "gate" or "compare"
    audit: Any
    out: Path
    formats: list
    page_size: str
    started_wall: float  # time.time() when the command started
    templates: dict
    ice: bool = False
    where: Any = None  # the MLflow run to log to, or None
    extra_files: dict | None = None
    gate: Any = None  # the gate's verdict
    comparison: str | None = None


EXIT_CODES_HELP = """exit codes:
  0    success (gate: every check passed)
  1    gate only: at least one check failed (outputs are written)
  2    bad input: one line naming the problem, no traceback
  3    internal failure: one line naming the stage that failed, or stage
       failures (outputs written, listed under "Stage failures")
  130  interrupted (Ctrl-C): an earlier run's outputs are left untouched
"""


def _formats(text: str):
    from ..report import FORMATS

    items = [f.strip().lower() for f in text.split(",") if f.strip()]
    bad = [f for f in items if f not in FORMATS]
    if bad or not items:
        raise InputError(f"--formats takes a comma-separated list of {', '.join(FORMATS)}; got {text!r}.")
    return items


def _page_size(value: str) -> str:
    for ok in ("A4", "Letter"):
        if value.lower() == ok.lower():
            return ok
    raise InputError(f"--page-size must be A4 or Letter, got {value!r}.")


def _templates(args, formats) -> dict:
    """The report templates of the run, from the flags only (a template is code: no config, policy or
    results.json chooses one), checked before any work: a missing --template-dir or a --docx-template
    that is not a .docx is exit 2 naming it."""
    template_dir = getattr(args, "template_dir", None)
    docx_template = getattr(args, "docx_template", None)
    if getattr(args, "docx_template", None) and "docx" not in formats:
        raise InputError(f"--docx-template is for the Word report; add docx to --formats (e.g. --formats "
                         f"{','.join(formats + ['docx'])}).")
    if getattr(args, "template_dir", None) and not {"html", "pdf"} & set(formats):
        raise InputError("--template-dir is for the HTML and PDF reports; add html or pdf to --formats.")
    if template_dir and {"html", "pdf"} & set(formats):
        from ..report.render import check_template_dir

        template_dir = check_template_dir(template_dir)
    else:
        template_dir = None
    if docx_template and "docx" in formats:
        from ..report.word import check_docx_template

        docx_template = str(check_docx_template(docx_template))
    else:
        docx_template = None
    args.resolved_docx_template = docx_template
    return {"template_dir": template_dir, "docx_template": docx_template}


def _write(audit, out, formats, page_size, started, *, extra_files=None, gate=None, comparison=None,
           templates=None, ice=False) -> list:
    from ..report import write_report

    with stage("writing " + ", ".join(formats + (["ice"] if ice else []) + list(extra_files or {}))):
        written = write_report(audit, out, formats=formats, page_size=page_size, extra_files=extra_files, gate=gate,
                               comparison=comparison, ice=ice, **(templates or {}))
    n1, n2 = len(audit.results_1d), len(audit.results_2d)
    paths = ", ".join(str(p) for p in written["paths"])
    print(f"autopdp: wrote {paths} ({n1} 1D + {n2} 2D PDPs, {len(audit.selection)} selected) in {time.perf_counter() - started:.1f} s")
    return written["paths"]


def _exit_code(audit, code: int) -> int:
    """``code``, or 3 when the audit has stage failures (each printed as one line on stderr)."""
    failures = getattr(audit, "stage_failures", ())
    if not failures:
        return code
    for f in failures:
        print(f"autopdp: stage failure: {_one_line(f.text)}", file=sys.stderr)
    print(f"autopdp: error: {len(failures)} score(s) failed unexpectedly (listed under 'Stage failures' in the "
          "outputs; please report this)", file=sys.stderr)
    return EXIT_INTERNAL


def _finish(kind, audit, args, formats, page_size, started, templates, where, **kw) -> Finish:
    return Finish(kind, audit, Path(args.out), formats, page_size, time.time() - (time.perf_counter() - started),
                  templates, bool(getattr(args, "ice", False)), where, **kw)


def finish(f: Finish) -> int:
    """The command's documents, MLflow log and last lines from its audit; its exit code."""
    started = time.perf_counter() - max(0.0, time.time() - f.started_wall)
    paths = _write(f.audit, f.out, f.formats, f.page_size, started, extra_files=f.extra_files, gate=f.gate,
                   comparison=f.comparison, templates=f.templates, ice=f.ice)
    _log_mlflow(f.where, f.audit, f.out, paths, gate=f.gate)
    if f.kind != "gate":
        return _exit_code(f.audit, EXIT_OK)
    verdict = f.gate
    if verdict.passed:
        print(f"autopdp gate: PASSED all {len(verdict.checks)} checks ({f.out / 'gate.xml'})")
        return _exit_code(f.audit, EXIT_OK)
    from ..report.findings import fmt

    failed = "; ".join(f"{c.name} measured {fmt(c.measured)} allowed {c.relation} {fmt(c.threshold)}" for c in verdict.failures)
    print(f"autopdp gate: FAILED {len(verdict.failures)} of {len(verdict.checks)} checks: {failed}")
    return _exit_code(f.audit, EXIT_GATE_FAILED)


def _cmd_demo(args) -> int:
    from ..auditing.pipeline import audit
    from ..datasets.demo import DEMO_CONFIG, DEMO_REPORT, demo_model

    started = time.perf_counter()
    formats = _formats(args.formats)
    page_size = _page_size(args.page_size)
    templates = _templates(args, formats)
    with stage("training the demo model on German Credit"):
        model, X, y = demo_model()
    refits = int(args.refits or 0)
    if refits < 0:
        raise InputError(f"--refits takes a number of refits (e.g. 10), got {refits}.")
    config = DEMO_CONFIG.replace(refits=refits) if refits else DEMO_CONFIG
    with stage("computing and scoring every 1D and 2D partial dependence"):
        where = _mlflow_target(args)
        result = audit(model, X, y, config=config, n_jobs=args.n_jobs, scheduler=args.scheduler,
                       train=(X, y) if refits else None, report=DEMO_REPORT)
    return _finish("demo", result, args, formats, page_size, started, templates, where)


def _cmd_warmup(args) -> int:
    from .warmup import warm_up

    with stage("compiling the tree, OOD and StratPD kernels"):
        done = warm_up()
    print(f"autopdp: {done['kernels']} kernels ready in {done['seconds']:.1f} s ({done['compiled']} compiled, "
          f"{done['loaded']} already kept) in {done['folder']} (AUTOPDP_CACHE_DIR sets the folder)")
    return EXIT_OK


def _parse_compare(items, flag="--compare"):
    out = {}
    for item in items or []:
        if "=" not in item:
            raise InputError(f"{flag} takes NAME=PATH, got {item!r}.")
        name, path = item.split("=", 1)
        name = name.strip()
        if not name or name in out or ":" in name:
            raise InputError(f"{flag} needs a unique, non-empty NAME without ':', got {item!r}.")
        out[name] = path
    return out


def _cmd_report(args) -> int:
    from ..auditing.pipeline import audit

    started = time.perf_counter()
    formats = _formats(args.formats)
    page_size = _page_size(args.page_size)
    compare_paths = _parse_compare(args.compare)
    _check_allow_pickle(args, [args.model, *compare_paths.values()])
    cfg, report = _config(args.config, _raised(args), model_name=_display_name(args.model),
                          dataset_name=Path(args.data).name)
    cfg, report = _with_flags(cfg, args), _with_cover_flags(report, args)
    templates = _templates(args, formats)
    load_notes: list = []
    with _loading(load_notes):
        loaded = _load_models(args, {None: args.model, **{f"compare:{n}": p for n, p in compare_paths.items()}})
        model, compare = loaded[None], {n: loaded[f"compare:{n}"] for n in compare_paths}
        X, y, weights = _load_data(args)
        _check_signatures(args, X)
        cfg, train = _train(args, cfg)
        inputs = _inputs(args, model=args.model, **{f"compare:{n}": p for n, p in compare_paths.items()})
    where = _mlflow_target(args)
    with stage("computing and scoring every 1D and 2D partial dependence"):
        result = audit(model, X, y, compare=compare, config=cfg, n_jobs=args.n_jobs, scheduler=args.scheduler,
                       sample_weight=weights, train=train, report=report)
    result = _with_notes(_with_provenance(result, args, inputs), load_notes)
    return _finish("report", result, args, formats, page_size, started, templates, where)


def _cmd_gate(args) -> int:
    from ..auditing.pipeline import audit
    from ..gating.verdict import GatePolicy, gate

    started = time.perf_counter()
    formats = _formats(args.formats)
    page_size = _page_size(args.page_size)
    _check_allow_pickle(args, [args.model, args.champion])
    policy = GatePolicy.from_toml(args.policy)
    if policy.needs_champion and not args.champion:
        raise InputError("the policy sets champion limits (max_similarity); pass --champion PATH.")
    base, report = _config(args.config, _raised(args), model_name=_display_name(args.model),
                           dataset_name=Path(args.data).name)
    from ..config import check_file_limits

    check_file_limits(policy.audit, "policy [audit]", _raised(args))
    base, reset = policy.without_loosening(base)
    for key in reset:  # the policy decides: a --config cannot loosen the gate
        now = "the default bound" if key.startswith("lipschitz.") else repr(getattr(base, key))
        print(f"autopdp gate: --config key {key!r} ignored: the gate decides with the policy's [audit] value or the "
              f"default ({now}); set it in the policy to change it.", file=sys.stderr)
    cfg, report = _with_flags(policy.audit_config(base), args), _with_cover_flags(report, args)
    templates = _templates(args, formats)
    load_notes: list = []
    with _loading(load_notes):
        loaded = _load_models(args, {"model": args.model, **({"champion": args.champion} if args.champion else {})})
        model, champion = loaded["model"], loaded.get("champion")
        X, y, weights = _load_data(args)
        _check_signatures(args, X)
        cfg, train = _train(args, cfg)
        inputs = _inputs(args, model=args.model, champion=args.champion)
    where = _mlflow_target(args)
    champion_label = _model_label(args.champion, avoid=_model_label(args.model)) if args.champion else None
    from ..auditing.groups import grouped_names

    policy.check_features([str(c) for c in grouped_names(cfg.groups, X.columns)])  # a group is one feature
    if policy.needs_target and y is None:  # pragma: no cover - split_target always gives y
        raise InputError("the policy sets max_incidence, which needs --target.")
    with stage("computing and scoring every 1D and 2D partial dependence"):
        result = audit(model, X, y, compare={champion_label: champion} if champion is not None else None, config=cfg,
                       n_jobs=args.n_jobs, scheduler=args.scheduler, sample_weight=weights, train=train, report=report)
    result = _with_notes(_with_provenance(result, args, inputs), load_notes)
    with stage("checking the policy"):
        verdict = gate(result, policy, champion=champion_label)
    extra = {"gate.json": verdict.to_json(), "gate.xml": verdict.to_junit_xml()}
    return _finish("gate", result, args, formats, page_size, started, templates, where, extra_files=extra,
                   gate=verdict)


def _cmd_compare(args) -> int:
    from ..auditing.pipeline import audit

    started = time.perf_counter()
    formats = _formats(args.formats)
    page_size = _page_size(args.page_size)
    paths = _parse_compare(args.model, flag="--model")
    if len(paths) < 2:
        raise InputError("compare needs at least two models: --model NAME=PATH --model NAME=PATH.")
    _check_allow_pickle(args, paths.values())
    names = list(paths)
    cfg, report = _config(args.config, _raised(args), model_name=f"{names[0]} ({_display_name(paths[names[0]])})",
                          dataset_name=Path(args.data).name)
    cfg, report = _with_flags(cfg, args), _with_cover_flags(report, args)
    templates = _templates(args, formats)
    load_notes: list = []
    with _loading(load_notes):
        models = _load_models(args, paths)
        X, y, weights = _load_data(args)
        _check_signatures(args, X)
        cfg, train = _train(args, cfg)  # the refits are of the first model's learner
        inputs = _inputs(args, model=paths[names[0]], **{f"compare:{n}": paths[n] for n in names[1:]})
    args.model = paths[names[0]]  # --mlflow logs to the base model's run
    where = _mlflow_target(args)
    with stage("computing and scoring every 1D and 2D partial dependence of every model"):
        result = audit(models[names[0]], X, y, compare={n: models[n] for n in names[1:]}, config=cfg,
                       n_jobs=args.n_jobs, scheduler=args.scheduler, sample_weight=weights, train=train,
                       report=report)
    result = _with_notes(_with_provenance(result, args, inputs), load_notes)
    return _finish("compare", result, args, formats, page_size, started, templates, where, comparison=names[0])


def _add_command(sub, name, help_):
    return sub.add_parser(name, help=help_, description=help_, epilog=EXIT_CODES_HELP,
                          formatter_class=argparse.RawDescriptionHelpFormatter)


def _common_args(p):
    is_demo = p.prog.endswith("demo")
    p.add_argument("--out", required=not is_demo, default="autopdp-demo" if is_demo else None,
                   help="output directory (created if missing; checked before any work)")
    p.add_argument("--formats", default="html,pdf,json",
                   help="comma-separated, any of html,pdf,json,docx (default: html,pdf,json); docx is an "
                        "editable Word document with the same content as the PDF")
    p.add_argument("--template-dir", default=None, metavar="DIR",
                   help="folder of report templates overriding the built-in HTML/PDF ones by name, rendered "
                        "sandboxed (only this flag chooses templates, never a config or policy; see "
                        "docs/templates.md)")
    p.add_argument("--docx-template", default=None, metavar="ORG.docx",
                   help="your organisation's .docx (styles, page setup, header/footer) the Word report is built on; "
                        "the report goes at a paragraph reading {{autopdp}}, else at the end; its external "
                        "links are dropped (only this flag chooses it, never a config or policy)")
    p.add_argument("--page-size", default="A4", help="A4 (default) or Letter")
    p.add_argument("--ice", action="store_true",
                   help="also write every ICE curve to ice.parquet (results.json leaves them out)")
    p.add_argument("--n-jobs", type=int, default=None, help="parallel workers for the PDs (default: 1)")
    p.add_argument("--scheduler", default=None, help="Dask scheduler address (tcp://host:8786) to run the PDs on")
    p.add_argument("--mlflow", action="store_true",
                   help="log every output, the findings' counts and tags to the MLflow run of the model "
                        "(models:/ or runs:/), or to a new run in --mlflow-experiment")
    p.add_argument("--mlflow-experiment", default=None, metavar="NAME",
                   help="with --mlflow: log to a new run in this experiment (created if missing)")
    if is_demo:
        return
    p.add_argument("--pairs", default=None, metavar="all|none|top:N|a:b,c:d",
                   help="2D PDs to compute: every pair (default), none, the N pairs whose features have the largest "
                        "geometric mean of 1D PD importance (a screen that needs no 2D PD), or the pairs listed")
    p.add_argument("--group", action="append", default=None, metavar="NAME=COLS",
                   help="one-hot columns audited as one categorical feature NAME (repeatable): NAME=col1,col2,... or "
                        "NAME=prefix* (e.g. state=state_*); its PD sets exactly one of them per level (config key "
                        "groups)")
    p.add_argument("--regions", action="append", default=None, metavar="FEATURE[,FEATURE...]",
                   help="examine these features for regions (tested splits on the other features) besides every "
                        "feature with an ICE-spread or interaction finding; repeatable")
    p.add_argument("--cohort", default=None, metavar="COLUMN",
                   help="a column of the data naming cohorts (region, product): every feature's PD per cohort and a "
                        "test of their shapes, in a Cohorts chapter; a column that is not a model feature is never "
                        "passed to the model")
    p.add_argument("--keep-points", action="store_true", default=None,
                   help="write a sample of up to 400 raw data rows into results.json and draw them on the 2D "
                        "PDs (config key keep_points; default: only binned counts, no row of the data)")
    _report_text_args(p)


def _report_text_args(p):
    """The cover's texts and the sign-off, which override the config file."""
    r = p.add_argument_group("report texts and sign-off (override the config file)")
    r.add_argument("--title", help="report title")
    r.add_argument("--model-name", help="model name on the cover (default: the model file's name)")
    r.add_argument("--model-version", help="model version on the cover")
    r.add_argument("--reviewer", help="the validator who reviewed the model")
    r.add_argument("--sign-off-name", help="who signs off (left as a form to fill in when not given)")
    r.add_argument("--sign-off-role", help="their role, e.g. 'Head of Model Risk'")
    r.add_argument("--sign-off-date", metavar="YYYY-MM-DD", help="date of the sign-off")
    r.add_argument("--decision", metavar="DECISION", help="approve | 'approve with conditions' | reject")
    r.add_argument("--conditions", help="conditions of the approval (needed with 'approve with conditions')")


def _model_data_args(p, data_help="data: .csv or .parquet, a folder of .parquet parts or a pattern like "
                                   "'data/*.parquet', with the target column"):
    p.add_argument("--data", required=True, help=data_help)
    p.add_argument("--target", required=True, help="name of the target column in the data")
    p.add_argument("--target-map", default=None, metavar="LABEL=VALUE,...",
                   help="replace the target's labels before the audit, e.g. Yes=1,No=0 (every label mapped)")
    p.add_argument("--weights", default=None, metavar="COLUMN",
                   help="column of row weights (e.g. survey weights); it is not a feature")
    p.add_argument("--sep", default=None, help="CSV field separator (default ','; 'tab' for tabs)")
    p.add_argument("--na-values", default=None, metavar="MARKERS",
                   help="comma-separated extra markers of missing values in a CSV, e.g. '?' (UCI Adult)")
    p.add_argument("--decimal", default=None, metavar="MARK",
                   help="decimal mark of a CSV's numbers (default '.'; ',' for '3,5', usually with --sep ';')")
    p.add_argument("--trust-type", action="append", default=None, metavar="TYPE",
                   help="trust this skops type in the model files (repeatable), e.g. --trust-type "
                        "functools.partial; a refused model file lists the types it needs (scikit-learn's tree "
                        "containers are trusted by default; see docs/user-guide.md, 'What each input may do')")
    p.add_argument("--allow-pickle", action="append", default=None, metavar="PATH",
                   help="load this .joblib/.pkl model file (or pickled MLflow model URI) although unpickling runs "
                        "code from it (repeatable, one per model: --model, --champion, --compare)")
    p.add_argument("--train", default=None, metavar="TRAIN",
                   help="training data (.csv or .parquet, same target, weights and loading options as --data): "
                        "with --refits K the learner is refitted K times on half-samples of it and each finding "
                        "says whether it is robust")
    p.add_argument("--refits", type=int, default=None, metavar="K",
                   help="refits of the learner on half-samples of --train (config key refits; e.g. 10)")
    p.add_argument("--trust-model", action="store_true", help=argparse.SUPPRESS)  # removed: exit 2 says what replaces it
    _limit_args(p)


def _limit_args(p):
    """The flags that raise a built-in limit: only the command line can (a config file or policy may only lower)."""
    from ..config import FILE_LIMITS

    g = p.add_argument_group("limits (raise a built-in limit; files can only lower them)")
    g.add_argument("--max-model-mb", type=float, default=None, metavar="MB",
                   help="largest model a .skops file (or MLflow artifact) may inflate to (default 1024)")
    g.add_argument("--max-data-mb", type=float, default=None, metavar="MB",
                   help="largest table a data file may expand to in memory (default 1024)")
    for key, (flag, default, what) in FILE_LIMITS.items():
        g.add_argument(flag, type=float if key == "max_batch_mb" else int, default=None, dest=key, metavar="N",
                       help=f"{what} (config key {key}, default {default:g}); a config file or policy may only lower it")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="autopdp", description="Curated partial-dependence validation reports.", epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command")

    demo = _add_command(sub, "demo", "train a model on the embedded German Credit data and report on it")
    _common_args(demo)
    demo.add_argument("--refits", type=int, default=0, metavar="K",
                      help="refit the demo's learner K times on half-samples of the German Credit rows it was trained "
                           "on, and say of each finding whether it is robust (e.g. 10; default 0: not tested)")
    demo.set_defaults(func=_cmd_demo)

    warm = _add_command(sub, "warmup", "compile the tree, OOD and StratPD kernels now, into the folder they are kept in once per machine "
                         "($AUTOPDP_CACHE_DIR, else ~/.cache/autopdp/kernels): run it when a CI image is built")
    warm.set_defaults(func=_cmd_warmup)

    rep = _add_command(sub, "report", "report on a saved model and a data file")
    rep.add_argument("--model", required=True, help="fitted model: .skops (safe), .joblib/.pkl (needs --allow-pickle "
                     "PATH), or an MLflow URI models:/NAME/VERSION, models:/NAME@ALIAS, runs:/RUN_ID/PATH")
    _model_data_args(rep)
    rep.add_argument("--compare", action="append", metavar="NAME=PATH", help="a comparison model (repeatable)")
    rep.add_argument("--config", help="TOML file of AuditConfig keys")
    _common_args(rep)
    rep.set_defaults(func=_cmd_report)

    gat = _add_command(sub, "gate", "check a model against a policy file (exit 0 pass, 1 fail, 2 bad input, 3 internal failure)")
    gat.add_argument("--policy", required=True, help="TOML policy file")
    gat.add_argument("--model", required=True, help="fitted model: .skops, .joblib/.pkl (with --allow-pickle PATH) "
                     "or an MLflow model URI")
    _model_data_args(gat)
    gat.add_argument("--champion", help="the current production model, for the [champion] limits")
    gat.add_argument("--config", help="TOML file of AuditConfig keys (the policy's [audit] table wins over it)")
    _common_args(gat)
    gat.set_defaults(func=_cmd_gate)

    cmp_ = _add_command(sub, "compare", "one report comparing several candidate models on the same data")
    cmp_.add_argument("--model", action="append", required=True, metavar="NAME=PATH", help="a candidate (repeat, first is the base)")
    _model_data_args(cmp_)
    cmp_.add_argument("--config", help="TOML file of AuditConfig keys")
    _common_args(cmp_)
    cmp_.set_defaults(func=_cmd_compare)
    return parser


def main(argv=None) -> int:
    """The command line (``argv``: its arguments, ``sys.argv[1:]`` when None); the exit code.  Every command runs in
    this one process."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed its usage line
        return EXIT_OK if exc.code in (0, None) else EXIT_BAD_INPUT
    if args.version:
        from .. import __version__

        print(f"autopdp {__version__}")
        return EXIT_OK
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_BAD_INPUT
    from ..io.provenance import command_line

    args.command_line = command_line(sys.argv[1:] if argv is None else argv)
    out = Path(args.out) if getattr(args, "out", None) else None
    created = out is not None and not out.exists()

    def run() -> int:
        if getattr(args, "trust_model", False):
            from ..io.loading import TRUST_MODEL_REMOVED

            raise InputError(TRUST_MODEL_REMOVED)
        if out is not None:
            from ..utils.atomic import check_output_dir

            check_output_dir(out)  # before any work (and before numpy loads): a bad --out costs a second
        _stage_failures_printed_once()
        given = getattr(args, "scheduler", None)
        try:
            done = args.func(args)
            return finish(done) if isinstance(done, Finish) else done
        finally:
            if getattr(args, "scheduler", None) is not given:  # the client a Parquet folder's run connected
                args.scheduler.close()

    return _guarded(run, out, created)


def _stage_failures_printed_once() -> None:
    """Stage failures are printed by :func:`_exit_code`, once each, not as warnings (inside :func:`_guarded`'s
    ``catch_warnings``)."""
    from ..scores.failures import StageFailureWarning

    warnings.simplefilter("ignore", StageFailureWarning)


def _guarded(run, out, created: bool) -> int:
    """``run()``'s exit code inside the command line's contexts; each error as one line and its exit code; an
    ``out`` this run created and left empty is removed when it fails."""
    code = EXIT_INTERNAL
    try:
        with _quiet_libraries(), warnings.catch_warnings(), command_line_interface():  # advice in errors names flags
            code = run()
    except (InputError, OSError) as exc:  # autopdp's checks of the input, unreadable files
        print(f"autopdp: error: {_one_line(exc)}", file=sys.stderr)
        code = EXIT_BAD_INPUT
    except StageError as exc:
        print(f"autopdp: error: {_one_line(exc)}", file=sys.stderr)
        code = EXIT_INTERNAL
    except KeyboardInterrupt:
        print("autopdp: interrupted; earlier outputs are untouched.", file=sys.stderr)
        code = EXIT_INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - an internal failure outside a named stage, still one line
        print(f"autopdp: internal error: {type(exc).__name__}: {_one_line(exc)} (please report this)", file=sys.stderr)
        code = EXIT_INTERNAL
    finally:
        if code not in (EXIT_OK, EXIT_GATE_FAILED) and created:
            _remove_if_empty(out)
    return code


@contextmanager
def _quiet_libraries():
    """Warnings of numpy, scikit-learn, matplotlib and the like during a run are dropped, here and in the
    worker processes (joblib's start with this environment): what a user must know is a note in the
    report (missing values, glyphs no font can draw), never a raw warning line on stderr.  A user who
    asks for warnings (``python -W ...`` or ``PYTHONWARNINGS``) still gets them."""
    if sys.warnoptions:
        yield
        return
    saved = os.environ.get("PYTHONWARNINGS")
    os.environ["PYTHONWARNINGS"] = "ignore"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        if saved is None:
            os.environ.pop("PYTHONWARNINGS", None)
        else:  # pragma: no cover - sys.warnoptions is set then
            os.environ["PYTHONWARNINGS"] = saved


def _remove_if_empty(path: Path) -> None:
    """A directory this run created and left empty goes again (parents this run created stay: harmless)."""
    try:
        path.rmdir()
    except OSError:
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
