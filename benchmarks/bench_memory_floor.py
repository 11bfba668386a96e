"""The memory an ``autopdp report`` command holds before it holds any data: its libraries, measured.

    python benchmarks/bench_memory_floor.py

Issue 32 asks for full Adult through the CLI with every format in at most 600 MB.  This script measures the floor
under that figure on this machine, with the libraries installed here:

1. the modules the command imports: ``autopdp demo --formats json,html,pdf,docx`` is run in a new process (the
   command the README's quick start runs, with every format), which lists ``sys.modules`` when it is done;
2. a new process imports exactly those modules and nothing else, and reads its resident memory (RSS) and its
   proportional set size (PSS), with the shared objects that take the most of it;
3. a new process imports what the PDF's second process imports before it draws or renders anything
   (:mod:`autopdp.report.pdf_process`: matplotlib's figure helpers and WeasyPrint);
4. a new process imports the command's modules and WeasyPrint too: the floor when the PDF is rendered in the command
   itself, after the other documents, with no second process.

No data, PD, compiled kernel (loaded on first use) or document is in these figures: they are lower bounds on any
run's peak.  MB are 2^20 bytes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

_READ = r"""
import json, re, sys
def memory():
    rss = pss = 0
    by_file = {}
    name = None
    with open('/proc/self/smaps') as f:
        for line in f:
            if re.match(r'^[0-9a-f]+-[0-9a-f]+ ', line):
                parts = line.split()
                name = parts[5] if len(parts) > 5 else '[anonymous]'
            elif line.startswith('Rss:'):
                kb = int(line.split()[1]); rss += kb; by_file[name] = by_file.get(name, 0) + kb
            elif line.startswith('Pss:'):
                pss += int(line.split()[1])
    top = sorted(by_file.items(), key=lambda kv: -kv[1])[:8]
    return {'rss': rss / 1024, 'pss': pss / 1024, 'top': [(k, v / 1024) for k, v in top]}
"""

_LIST_MODULES = """
import json, sys
from autopdp.cli import main
code = main(['demo', '--out', sys.argv[1], '--formats', 'json,html,pdf,docx'])
json.dump(sorted(m for m in sys.modules if m != '__main__'), open(sys.argv[2], 'w'))
sys.exit(code)
"""

_IMPORT = _READ + """
import importlib, warnings
warnings.simplefilter('ignore')
for name in json.load(open(sys.argv[1])):
    try:
        importlib.import_module(name)
    except Exception:  # a module only importable in the order the command met it (or a test-only one): skipped
        pass
extra = sys.argv[2:]
for name in extra:
    importlib.import_module(name)
print(json.dumps(memory()))
"""

_PDF_CHILD = _READ + """
from autopdp.report.figures import _draw, _plt
_plt()
import weasyprint
from autopdp.report.render import render_pdf
print(json.dumps(memory()))
"""


def _python(code: str, *args: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True,
                         cwd=tempfile.gettempdir())
    return json.loads(out.stdout.strip().splitlines()[-1])


def _show(label: str, m: dict) -> None:
    print(f"{label}: {m['rss']:.0f} MB resident, {m['pss']:.0f} MB proportional")
    for path, mb in m["top"]:
        if mb >= 4:
            print(f"      {mb:6.0f} MB  {os.path.basename(path) if path.startswith('/') else path}")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        listing = Path(tmp) / "modules.json"
        subprocess.run([sys.executable, "-c", _LIST_MODULES, str(Path(tmp) / "demo"), str(listing)], check=True,
                       capture_output=True, cwd=tmp)
        names = json.loads(listing.read_text())
        print(f"the demo command imported {len(names)} modules "
              f"({len({n.split('.')[0] for n in names})} top-level packages)")
        command = _python(_IMPORT, str(listing))
        child = _python(_PDF_CHILD)
        alone = _python(_IMPORT, str(listing), "weasyprint")
    _show("1. the command's modules", command)
    _show("2. the PDF's process before it draws or renders", child)
    print(f"   1 + 2, the PDF rendered beside the other documents: {command['rss'] + child['rss']:.0f} MB resident "
          f"(each process's own pages: {command['pss'] + child['pss']:.0f} MB proportional, read apart)")
    _show("3. the command's modules and WeasyPrint, the PDF rendered in the command", alone)


if __name__ == "__main__":
    main()
