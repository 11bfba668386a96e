"""The documentation's fenced code blocks, and the inputs their commands name (for tests/test_docs.py).

A block runs unless the line before its fence (blank lines between allowed) is a marker:

* ``<!-- illustration -->``: shown, not run (a synopsis with ``[--flag ...]``, a CI system's YAML, ``make
  test``); tests/test_docs.py checks what can be checked (TOML parses into a config or a policy, YAML parses,
  every flag exists);
* ``<!-- file: PATH -->``: the block is the content of ``PATH``, written into the document's folder for the
  blocks after it (a policy, a template), and checked as that kind of file;
* ``<!-- exit N -->``: a shell block whose last command exits ``N`` (the gate's ``1``), not ``0``.

Shell blocks run command by command in the document's temporary folder: ``autopdp ...`` (or
``.venv/bin/autopdp``) is ``autopdp.cli.commands.main`` in this process; any other command is an error (mark the block).
Before each command, every input file it names that the folder lacks is made: a CSV/Parquet with the
``--target`` column (and ``--weights``, and ``--na-values`` markers), a small fitted tree-model Pipeline as
``.skops`` for ``--model``/``--champion``/``--compare``, a small ``--config``, a ``--policy``, a
``--docx-template`` and a ``--template-dir`` folder.  Every model has the same feature columns, so any model
file runs on any data file.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<lang>[\w+-]*)[ \t]*$")
MARKER = re.compile(r"^\s*<!--\s*(illustration|file:\s*(?P<file>\S+)|exit\s+(?P<exit>\d+))\s*-->\s*$")

#: the feature columns of every data file a block's command names (German Credit's, 400 rows)
FEATURES = ["checking_status", "duration_months", "credit_amount", "age", "personal_status_sex", "foreign_worker"]
CATEGORICAL = ["checking_status", "personal_status_sex", "foreign_worker"]
SMALL_CONFIG = "grid_resolution = 8\ngrid_resolution_2d = 4\nnoise_draws = 50\nmax_noise_draws = 200\n"
DEFAULT_POLICY = '[importance]\nrequired = ["checking_status"]\n'


@dataclass
class Block:
    doc: Path
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    illustration: bool = False
    file: str | None = None
    exit: int = 0

    @property
    def id(self) -> str:
        return f"{self.doc.relative_to(ROOT).as_posix()}:{self.line}"


def blocks(doc: Path) -> list[Block]:
    """The fenced blocks of ``doc`` in order, with their markers."""
    lines = doc.read_text(encoding="utf-8").split("\n")
    found, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, j = m.group("indent"), i + 1
        while not re.match(r"^[ \t]*```[ \t]*$", lines[j]):
            j += 1
        body = "\n".join(line[len(indent):] if line.startswith(indent) else line for line in lines[i + 1:j])
        block = Block(doc, i + 1, m.group("lang").lower(), body + "\n")
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        marker = MARKER.match(lines[k]) if k >= 0 else None
        if marker:
            block.illustration = marker.group(1) == "illustration"
            block.file = marker.group("file")
            block.exit = int(marker.group("exit") or 0)
        found.append(block)
        i = j + 1
    return found


def all_blocks() -> list[Block]:
    return [b for doc in DOCS for b in blocks(doc)]


def commands(text: str) -> list[list[str]]:
    """The shell commands of a block, each as its words (continuation lines joined, comments dropped)."""
    joined = re.sub(r"\\\n", " ", text)
    return [shlex.split(line, comments=True) for line in joined.split("\n") if shlex.split(line, comments=True)]


def is_autopdp(words: list[str]) -> bool:
    return bool(words) and words[0] in ("autopdp", ".venv/bin/autopdp")


def options(words: list[str]) -> dict[str, list[str]]:
    """``--flag value`` pairs of a command (repeatable flags keep every value)."""
    found: dict[str, list[str]] = {}
    for flag, value in zip(words, words[1:] + [""]):
        if flag.startswith("--"):
            found.setdefault(flag, []).append(value)
    return found


# ------------------------------------------------------------------------------------ the inputs
def _frame(rows: int = 400):
    from autopdp.datasets import load_german_credit

    X, y = load_german_credit()
    return X[FEATURES].iloc[:rows].reset_index(drop=True), y.iloc[:rows].reset_index(drop=True)


def fitted_model(seed: int = 0):
    """A small Pipeline (categorical columns ordinal-encoded, then a 30-tree random forest): its .skops file
    holds scikit-learn's tree containers, which load by the documented default."""
    from sklearn.compose import make_column_transformer
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OrdinalEncoder

    X, y = _frame()
    pre = make_column_transformer(
        (OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1), CATEGORICAL), remainder="passthrough")
    model = make_pipeline(pre, RandomForestClassifier(n_estimators=30, min_samples_leaf=10, max_depth=6,
                                                      random_state=seed, n_jobs=1))
    return model.fit(X, y)


def write_data(path: Path, target: str, weights: str | None = None, na_values: str | None = None) -> None:
    import numpy as np

    X, y = _frame()
    frame = X.copy()
    if na_values:  # a few missing incomes of the UCI kind: the marker in a categorical column
        marker = na_values.split(",")[0]
        frame["personal_status_sex"] = frame["personal_status_sex"].astype(object)
        frame.loc[::37, "personal_status_sex"] = marker
    if weights:
        frame[weights] = np.random.default_rng(1).uniform(0.5, 2.0, len(frame)).round(3)
    frame[target] = y.to_numpy()
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".parquet":
        frame.to_parquet(path)
    else:
        frame.to_csv(path, index=False)


def write_docx_template(path: Path) -> None:
    import docx

    d = docx.Document()
    d.sections[0].header.paragraphs[0].text = "CONFIDENTIAL - ACME Bank internal"
    d.add_paragraph("{{autopdp}}")
    path.parent.mkdir(parents=True, exist_ok=True)
    d.save(str(path))


def provide_inputs(words: list[str], folder: Path) -> None:
    """Make every input file ``words`` names that ``folder`` lacks (see the module docstring)."""
    import skops.io as sio

    opts = options(words)
    target = (opts.get("--target") or ["y"])[0]
    for i, path in enumerate(opts.get("--data", [])):
        if not (folder / path).exists():
            write_data(folder / path, target, (opts.get("--weights") or [None])[0], (opts.get("--na-values") or [None])[0])
    models = [v.split("=", 1)[-1] for flag in ("--model", "--champion", "--compare") for v in opts.get(flag, [])]
    for seed, path in enumerate(models):
        if not (folder / path).exists():
            (folder / path).parent.mkdir(parents=True, exist_ok=True)
            sio.dump(fitted_model(seed), folder / path)
    for path in opts.get("--config", []):
        if not (folder / path).exists():
            (folder / path).write_text(SMALL_CONFIG)
    for path in opts.get("--policy", []):
        if not (folder / path).exists():
            (folder / path).write_text(DEFAULT_POLICY)
    for path in opts.get("--docx-template", []):
        if not (folder / path).exists():
            write_docx_template(folder / path)
    for path in opts.get("--template-dir", []):
        (folder / path).mkdir(parents=True, exist_ok=True)


#: the file each format writes
FORMAT_FILES = {"json": "results.json", "html": "report.html", "pdf": "report.pdf", "docx": "report.docx"}


def expected_outputs(words: list[str]) -> list[str]:
    """The files a successful ``autopdp`` command writes into its ``--out`` (as the user guide states)."""
    opts = options(words)
    sub = words[1]
    out = (opts.get("--out") or ["demo-output" if sub == "demo" else ""])[0]
    formats = (opts.get("--formats") or ["html,pdf,json"])[0].split(",")
    files = [FORMAT_FILES[f] for f in formats] + ["manifest.json"]
    if sub == "gate":
        files += ["gate.json", "gate.xml"]
    if "--ice" in words:
        files.append("ice.parquet")
    return [str(Path(out) / f) for f in files]
