"""Do two runs' outputs say the same thing?  ``python benchmarks/same_outputs.py DIR_A DIR_B``

Compares what is deterministic in two output folders of ``autopdp report`` (or ``gate``/``compare``), e.g. this
version's and an earlier checkout's on the same inputs (``benchmarks/bench_cli_full.py --keep DIR --before
CHECKOUT`` keeps both):

* results.json: equal as parsed JSON apart from ``run`` (date, timings, command line);
* report.pdf and report.docx: their text, line by line, apart from what carries the run itself: its date and the
  Reproducibility section's timings (each stage's seconds; the stages and the date are read from results.json's
  ``run``) and the recorded command line's output folder, counted in the output so a reader sees what was set aside;
* gate.json: equal apart from its provenance's date and command.

Prints one line per file and exits 1 when any differs beyond those.
"""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

#: a number of seconds as the timings table writes it
SECONDS = re.compile(r"-?\d+\.\d\d")


def _run_of(folder: Path) -> tuple[str, set, str]:
    """(the run's date, its timed stages, its output folder) from the folder's results.json."""
    run = json.loads((folder / "results.json").read_text()).get("run", {})
    stages = set(run.get("timings_s", {})) | {"figures", "json", "html", "pdf", "docx", "ice"}
    return str(run.get("date", "")), stages, str(folder)


def _pdf_text(path: Path) -> list[str]:
    from pypdf import PdfReader

    return [line for page in PdfReader(io.BytesIO(path.read_bytes())).pages
            for line in (page.extract_text() or "").splitlines()]


def _docx_text(path: Path) -> list[str]:
    import docx

    d = docx.Document(str(path))
    lines = [p.text for p in d.paragraphs]
    lines += [c.text for t in d.tables for row in t.rows for c in row.cells]
    return lines


def _set_aside(lines: list[str], date: str, stages: set, out: str) -> tuple[list[str], int]:
    """The lines without the run's own: a line with its date or its output folder (the recorded command line), a
    timing ("pd_1d 0.80", or a stage's cell and the seconds' cell after it); and how many were set aside."""
    kept, aside, after_stage = [], 0, False
    for line in lines:
        text = line.strip()
        head, _, tail = text.rpartition(" ")
        timing = (head in stages and SECONDS.fullmatch(tail)) or (after_stage and SECONDS.fullmatch(text))
        after_stage = text in stages
        if (date and date in text) or (out and out in text) or timing:
            aside += 1
        else:
            kept.append(line)
    return kept, aside


def _same_lines(a: list[str], b: list[str], run_a: tuple, run_b: tuple) -> tuple[bool, int]:
    """(equal apart from each run's own lines, how many lines were set aside in all)."""
    keep_a, aside_a = _set_aside(a, *run_a)
    keep_b, aside_b = _set_aside(b, *run_b)
    return keep_a == keep_b, aside_a + aside_b


def _without(d: dict, *path: str) -> dict:
    d = json.loads(json.dumps(d))
    node = d
    for key in path[:-1]:
        node = node.get(key, {})
    node.pop(path[-1], None)
    return d


def compare(a: Path, b: Path) -> int:
    bad = 0
    for name in sorted({p.name for p in a.iterdir()} & {p.name for p in b.iterdir()}):
        pa, pb = a / name, b / name
        if name == "results.json":
            same = _without(json.loads(pa.read_text()), "run") == _without(json.loads(pb.read_text()), "run")
            note = "equal apart from run" if same else "DIFFERENT"
        elif name == "gate.json":
            strip = [("provenance", "date"), ("provenance", "command")]
            ja, jb = json.loads(pa.read_text()), json.loads(pb.read_text())
            for path in strip:
                ja, jb = _without(ja, *path), _without(jb, *path)
            same = ja == jb
            note = "equal apart from the provenance's date and command" if same else "DIFFERENT"
        elif name.endswith((".pdf", ".docx")):
            text = _pdf_text if name.endswith(".pdf") else _docx_text
            same, aside = _same_lines(text(pa), text(pb), _run_of(a), _run_of(b))
            note = (f"text equal apart from the runs' dates, timings and output folders ({aside} lines in the two)" if same
                    else "text DIFFERENT")
        else:
            continue
        bad += not same
        print(f"{name}: {note}")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.splitlines()[0])
    sys.exit(compare(Path(sys.argv[1]), Path(sys.argv[2])))
