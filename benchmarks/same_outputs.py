"""Do two runs' outputs say the same thing?  ``python benchmarks/same_outputs.py DIR_A DIR_B``

Compares what is deterministic in two output folders of ``autopdp report`` (or ``gate``/``compare``), e.g. this
version's and an earlier checkout's on the same inputs (``benchmarks/bench_cli_full.py --keep DIR --before
CHECKOUT`` keeps both):

* results.json: equal as parsed JSON apart from ``run`` (date, timings, command line);
* report.pdf and report.docx: their text, line by line, apart from the lines that carry the run's date, times or
  output folder (listed, so a reader sees what was set aside);
* gate.json: equal apart from its provenance's date and command.

Prints one line per file and exits 1 when any differs beyond those.
"""

from __future__ import annotations

import io
import json
import re
import sys
from pathlib import Path

#: lines that carry the run itself: a date or time of day, a duration in seconds, a temporary folder
RUN_LINE = re.compile(r"\d{4}-\d\d-\d\d|\d\d:\d\d|\b\d+\.\d\d\s*s\b|seconds|/tmp/|/var/folders/|timing", re.I)


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


def _same_lines(a: list[str], b: list[str]) -> tuple[bool, list[str]]:
    """(equal apart from the run's lines, the run's lines set aside in either)."""
    keep_a = [line for line in a if not RUN_LINE.search(line)]
    keep_b = [line for line in b if not RUN_LINE.search(line)]
    aside = sorted({line for line in a + b if RUN_LINE.search(line)})
    return keep_a == keep_b, aside


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
            same, aside = _same_lines(text(pa), text(pb))
            note = (f"text equal apart from {len(aside)} lines with the run's date, times or folder" if same
                    else "text DIFFERENT")
            if same and aside:
                note += ": " + " | ".join(line.strip()[:60] for line in aside[:6]) + (" ..." if len(aside) > 6 else "")
        else:
            continue
        bad += not same
        print(f"{name}: {note}")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.splitlines()[0])
    sys.exit(compare(Path(sys.argv[1]), Path(sys.argv[2])))
