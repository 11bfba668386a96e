"""The documentation runs: every fenced block of README.md and docs/*.md (tests/doc_blocks.py says how a block
is run or marked as an illustration), every ``autopdp.x.y`` name resolves, every flag of ``--help`` is
documented and every documented flag exists, and the documented results.json keys are the real ones.
The notebook is executed by tests/test_notebooks.py."""

from __future__ import annotations

import importlib
import io
import json
import re
import shlex
import time
import tomllib
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from doc_blocks import DOCS, ROOT, all_blocks, blocks, commands, expected_outputs, is_autopdp, options, provide_inputs

from autopdp.cli.commands import build_parser, main

RUN = ("python", "bash", "sh", "shell")
BLOCKS = all_blocks()


def _text(doc: Path) -> str:
    return doc.read_text(encoding="utf-8")


# ------------------------------------------------------------------------------ every block run or marked
def test_the_collector_finds_every_block_and_each_is_run_or_marked():
    assert len(BLOCKS) >= 13 and {b.doc.name for b in BLOCKS} >= {"README.md", "user-guide.md", "templates.md"}
    fences = sum(_text(d).count("```") for d in DOCS)
    assert fences == 2 * len(BLOCKS)  # every opening fence found, with its closing one
    for b in BLOCKS:
        runs = b.lang in RUN and not b.illustration
        assert runs or b.illustration or b.file, (
            f"{b.id}: a ```{b.lang} block is neither run nor marked: mark it <!-- illustration --> or <!-- file: PATH -->")
    assert any(b.lang in RUN and not b.illustration for b in BLOCKS if b.doc.name == "user-guide.md")


def _run_shell(block, folder: Path) -> None:
    cmds = commands(block.text)
    assert cmds, f"{block.id}: an empty shell block"
    for i, words in enumerate(cmds):
        assert is_autopdp(words), (f"{block.id}: runs {words[0]!r}, which the docs' test does not run; mark the "
                                   "block <!-- illustration -->")
        provide_inputs(words, folder)
        expected = block.exit if i == len(cmds) - 1 else 0
        out, started = io.StringIO(), time.perf_counter()
        with redirect_stdout(out):
            code = main(words[1:])
        print(f"{block.id}: {' '.join(words[:2])} took {time.perf_counter() - started:.1f} s")
        assert code == expected, f"{block.id}: `{' '.join(words)}` exited {code}, not {expected}"
        if code in (0, 1) and words[1] != "--version":
            for path in expected_outputs(words):
                assert (folder / path).is_file(), f"{block.id}: `{' '.join(words)}` did not write {path}"


def _run_document(doc: Path, folder: Path) -> None:
    namespace: dict = {"__name__": "__doc_example__"}
    for block in blocks(doc):
        if block.file:
            target = folder / block.file
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.text, encoding="utf-8")
        elif block.illustration:
            continue
        elif block.lang == "python":
            exec(compile(block.text, block.id, "exec"), namespace)  # noqa: S102 - the documentation's own example
        elif block.lang in RUN:
            _run_shell(block, folder)


RUNNABLE = [d for d in DOCS if any((b.lang in RUN and not b.illustration) for b in blocks(d))]


@pytest.mark.parametrize("doc", RUNNABLE, ids=[d.name for d in RUNNABLE])
def test_document_blocks_run_as_written(doc, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AUTOPDP_NO_PROGRESS", "1")
    _run_document(doc, tmp_path)
    if doc.name == "templates.md":  # the worked example: the marking and the checklist reach the PDF
        from pypdf import PdfReader

        text = "".join(p.extract_text() for p in PdfReader(tmp_path / "report" / "report.pdf").pages)
        assert "CONFIDENTIAL - ACME Bank internal" in text and "Validator's checklist" in text
        assert "CONFIDENTIAL - ACME Bank internal" in (tmp_path / "report" / "report.html").read_text()
    if doc.name == "user-guide.md":  # the example policy produced the checks the guide lists
        verdict = json.loads((tmp_path / "gate" / "gate.json").read_text())
        listed = _documented_policy_checks()
        assert sorted((c["check"], c["feature"]) for c in verdict["checks"]) == sorted(listed)


def _documented_policy_checks() -> list[tuple[str, str]]:
    """The (check, feature) rows of the user guide's table under the example policy."""
    text = _text(ROOT / "docs" / "user-guide.md")
    table = text.split("<!-- policy-checks -->")[1].split("<!-- /policy-checks -->")[0]
    rows = [r.strip().strip("|").split("|") for r in table.strip().splitlines()[2:]]
    return [(r[0].strip().strip("`"), r[1].strip().strip("`")) for r in rows]


# ------------------------------------------------------------------------------ illustrations checked
ILLUSTRATIONS = [b for b in BLOCKS if b.illustration or b.file]


@pytest.mark.parametrize("block", ILLUSTRATIONS, ids=[b.id for b in ILLUSTRATIONS])
def test_illustrations_hold_what_can_be_checked(block, tmp_path):
    if block.lang == "toml":
        data = tomllib.loads(block.text)
        from autopdp import GatePolicy
        from autopdp.config import split_config

        if set(data) & {"features", "importance", "champion", "gate"}:
            policy = GatePolicy.from_dict(data)  # a policy: it parses and defines checks
            assert policy.features or policy.to_dict()
        else:
            split_config(data)  # a config file: the audit's keys and the report's cover
    elif block.lang in ("yaml", "yml", "groovy"):
        if block.lang != "groovy":
            import yaml  # PyYAML is in the test extra (pyproject)

            assert isinstance(yaml.safe_load(block.text), dict)
        assert "junit" in block.text.lower() and "gate/gate.xml" in block.text
        # the command a CI system runs parses, and writes gate.xml where the block publishes it from
        (command,) = re.findall(r"autopdp gate [^'\n]+", block.text)
        args = build_parser().parse_args(shlex.split(command)[1:])
        assert args.out.rstrip("/") == "gate" and args.command == "gate"
    elif block.lang == "python":  # a Python illustration (it needs a server, say): it is valid Python
        compile(block.text, block.id, "exec")
    elif block.lang in RUN:
        for words in commands(block.text):
            if words[0] == "make":  # `make demo`, `make test`: the targets exist
                make = (ROOT / "Makefile").read_text()
                assert all(re.search(rf"^{t}:", make, re.M) for t in words[1:]), words
            elif words[:2] == ["pip", "install"] or words[0] in ("python", "source", "."):
                continue
            elif words[0] == "dask":  # starting a cluster: a subcommand Dask installs (the dask extra)
                from importlib.metadata import entry_points

                assert words[1] in {e.name for e in entry_points(group="dask_cli")}, f"{block.id}: {words[:2]}"
            else:
                assert is_autopdp(words), f"{block.id}: {words[0]!r}"
                # a synopsis: its flags are checked by test_every_documented_flag_exists
    elif block.lang == "jinja":
        from autopdp.report.render import environment

        environment().parse(block.text)
    elif block.lang == "json":
        assert block.doc.name == "user-guide.md"  # the results.json excerpt: test_results_json_excerpt_is_real
    else:
        assert block.text.strip() == "{{autopdp}}", f"{block.id}: an unchecked illustration"


# ------------------------------------------------------------------------------ names and flags
NAME = re.compile(r"\bautopdp(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


def _resolve(dotted: str):
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(dotted)


def test_every_documented_autopdp_name_resolves():
    names = set()
    for doc in DOCS:
        for m in NAME.finditer(_text(doc)):
            names.add(m.group(0))
    assert {"autopdp.auditing.validation.MIN_ROWS", "autopdp.gating.verdict.champion_name", "autopdp.report.render.render_pdf_html"} <= names
    missing = []
    for name in sorted(names):
        try:
            _resolve(name)
        except (ImportError, AttributeError) as exc:
            missing.append(f"{name} ({type(exc).__name__}: {exc})")
    assert not missing, "documented names that do not resolve: " + "; ".join(missing)


def _help_flags() -> dict[str, set[str]]:
    parser = build_parser()
    flags = {"": {f for a in parser._actions for f in a.option_strings}}
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, p in sub.choices.items():
        flags[name] = {f for a in p._actions if a.help != "==SUPPRESS==" for f in a.option_strings}
    return flags


FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
#: double-dash words the docs use that are not autopdp's options: the removed flag they say is gone, the
#: redaction examples (options named like a secret), a CSS custom property of the templates example
NOT_AUTOPDP = {"--trust-model", "--token", "--password", "--accent"}


def _benchmark_flags() -> set[str]:
    return {f for p in (ROOT / "benchmarks").glob("*.py") for f in re.findall(r"add_argument\(\s*\"(--[a-z0-9-]+)\"",
                                                                               p.read_text())}


def test_every_flag_of_help_is_documented_and_every_documented_flag_exists():
    flags = _help_flags()
    documented = set(FLAG.findall(_text(ROOT / "README.md") + _text(ROOT / "docs" / "user-guide.md")))
    in_help = {f for f in set().union(*flags.values()) if f.startswith("--")} - {"--help"}
    assert not in_help - documented, f"flags in --help that the README and user guide never mention: {sorted(in_help - documented)}"
    everywhere = set()
    for doc in DOCS:
        everywhere |= set(FLAG.findall(_text(doc)))
    unknown = everywhere - in_help - {"--help"} - NOT_AUTOPDP - _benchmark_flags()
    assert not unknown, f"documented flags that no subcommand (nor benchmark script) has: {sorted(unknown)}"
    # each command in a block uses only its own subcommand's flags
    for b in BLOCKS:
        if b.lang in RUN:
            for words in commands(b.text):
                if is_autopdp(words) and len(words) > 1 and not words[1].startswith("-"):
                    used = {w for w in options(words) if w.startswith("--")}
                    assert used <= flags[words[1]] | {"--help"}, f"{b.id}: {sorted(used - flags[words[1]])}"
    assert "--trust-model" not in in_help  # the removed flag the docs mention is really gone


# ------------------------------------------------------------------------------ results.json as documented
@pytest.fixture(scope="module")
def small_results(tmp_path_factory):
    from doc_blocks import _frame, fitted_model

    import autopdp

    X, y = _frame(200)
    cfg = autopdp.AuditConfig(grid_resolution=6, grid_resolution_2d=4, noise_draws=50, max_noise_draws=100,
                              features=["duration_months", "age", "checking_status"])
    path = tmp_path_factory.mktemp("docs-json") / "results.json"
    autopdp.audit(fitted_model(), X, y, config=cfg, progress=False).to_json(path)
    return json.loads(path.read_text())


def test_documented_results_json_keys_are_the_real_ones(small_results):
    text = _text(ROOT / "docs" / "user-guide.md")
    table = text.split("## results.json and ice.parquet")[1].split("Left out of")[0]
    rows = [r for r in table.splitlines() if r.startswith("| `")]
    documented = {k for r in rows for k in re.findall(r"`([a-z_]+)`", re.sub(r"\(.*?\)", "", r.split("|")[1]))}
    assert documented == set(small_results), (sorted(documented ^ set(small_results)))


def test_results_json_excerpt_is_real(small_results):
    """The user guide's excerpt of a PD table: a list of tables, each with the fields it shows."""
    (block,) = [b for b in blocks(ROOT / "docs" / "user-guide.md") if b.lang == "json"]
    shown = json.loads(re.sub(r",?\s*\.\.\.", "", block.text))
    real = small_results[next(iter(shown))]
    assert isinstance(real, list) and isinstance(shown[next(iter(shown))], list)
    for shown_table in shown[next(iter(shown))]:
        match = [t for t in real if set(shown_table["columns"]) <= set(t["columns"])
                 and set(shown_table["same"]) <= set(t["same"])]
        assert match, f"no table of results.json has the columns {shown_table['columns']} and same {list(shown_table['same'])}"
        assert len(shown_table["rows"][0]) == len(shown_table["columns"])


# ------------------------------------------------------------------------------ messages the docs quote
def test_the_quoted_refusal_of_a_modifier_alone_is_the_gates(tmp_path, capsys, monkeypatch):
    """The user guide quotes the gate's refusal of a key that only modifies another rule: the CLI says exactly
    that (exit 2, one line), for a policy with max_monotonicity alone."""
    text = _text(ROOT / "docs" / "user-guide.md")
    quoted = text.split("<!-- policy-refusal -->")[1].split("<!-- /policy-refusal -->")[0].strip().strip("`")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "policy.toml").write_text("[features.age]\nmax_monotonicity = 0.01\n")
    words = "autopdp gate --policy policy.toml --model m.skops --data d.csv --target y --out g/".split()
    provide_inputs(words, tmp_path)
    assert main(words[1:]) == 2
    assert capsys.readouterr().err.strip() == quoted
    (tmp_path / "policy.toml").write_text("[features.credit_amount]\nlipschitz = 0.0001\n")
    assert main(words[1:]) == 2
    err = capsys.readouterr().err.strip()
    assert "'features.credit_amount.lipschitz' modifies a rule the policy does not set: add " \
           "'features.credit_amount.max_lipschitz'" in err and len(err.splitlines()) == 1


def test_a_tsv_file_is_refused_with_the_flag_that_reads_it(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    words = "autopdp report --model m.skops --data d.tsv --target y --out r/".split()
    provide_inputs(["autopdp", "report", "--model", "m.skops"], tmp_path)
    (tmp_path / "d.tsv").write_text("a\ty\n1\t0\n")
    assert main(words[1:]) == 2
    err = capsys.readouterr().err.strip()
    assert "unknown format '.tsv'" in err and "give it the .csv extension" in err and "--sep tab" in err
