"""Issue 32: once an audit is over, the C heap's free memory goes back to the system before the report (and its
second process) starts, so the report does not hold the audit's peak."""

import platform
import subprocess
import sys

import numpy as np
import pytest

from autopdp import _memory
from autopdp import audit as audit_module


def test_an_audit_gives_back_the_free_memory_after_its_plans_are_dropped(german, monkeypatch):
    from autopdp import AuditConfig, audit
    from autopdp.pd import fastpath

    calls = []
    monkeypatch.setattr(audit_module, "release_free_memory",
                        lambda: calls.append(fastpath._SHARED is None) or True)
    X, y = german
    audit(lambda d: d["age"].to_numpy() / 40.0, X.iloc[:200], y.iloc[:200],
          config=AuditConfig(features=("age", "duration_months"), grid_resolution=5, grid_resolution_2d=3))
    assert calls == [True]  # once, with the tree plans already dropped


def test_release_finds_glibcs_malloc_trim_and_does_nothing_elsewhere(monkeypatch):
    monkeypatch.setattr(_memory, "_LIBC", [])
    glibc = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
    blocks = [np.ones(50_000) for _ in range(40)]  # 16 MB in blocks malloc keeps for reuse once freed
    del blocks
    assert _memory.release_free_memory() in (True, False)
    assert (_memory._LIBC[0] is not None) == glibc
    monkeypatch.setattr(_memory, "_LIBC", [None])  # a C library without malloc_trim and mallopt
    assert _memory.release_free_memory() is False
    assert _memory.map_large_blocks() is False


_RESIDENT_AFTER = """
import sys
import numpy as np
from autopdp import _memory
if sys.argv[1] == "mapped":
    assert _memory.map_large_blocks()
def resident():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2 ** 20
big = np.ones(24 * 2 ** 20 // 8)  # a 24 MB array, freed: glibc raises its threshold to 24 MB unless it is fixed
del big
before = resident()
arrays, pins = [], []
for i in range(20):  # 20 arrays of 2 MB, each followed by a small live block that pins the heap above it
    arrays.append(np.ones(2 ** 20 // 4))
    pins.append(np.ones(64))
del arrays  # 40 MB freed
print(resident() - before)
"""


@pytest.mark.skipif(not (sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"),
                    reason="glibc's allocator settings: Linux with glibc only")
def test_large_blocks_are_given_back_once_freed_in_the_commands_processes():
    """After a 24 MB array is freed, glibc serves 2 MB arrays from its heap and keeps their memory once freed;
    with the threshold fixed (what the command line and the PDF's process do) each is unmapped when freed."""
    def grown(mode):
        out = subprocess.run([sys.executable, "-c", _RESIDENT_AFTER, mode], capture_output=True, text=True,
                             check=True)
        return float(out.stdout.strip().splitlines()[-1])

    assert grown("mapped") < 8.0
    assert grown("default") > 30.0  # the contrast: what the setting prevents (glibc's own behaviour)


def test_the_command_line_and_the_pdf_process_fix_the_threshold(monkeypatch):
    from autopdp import cli
    from autopdp.report import pdf_process

    calls = []
    monkeypatch.setattr(_memory, "map_large_blocks", lambda *a: calls.append("set") or True)
    assert cli.main(["--version"]) == 0
    assert calls == ["set"]
    monkeypatch.setattr(pdf_process.sys, "stdin", type("In", (), {"buffer": __import__("io").BytesIO()})())
    assert pdf_process.main() == 0  # no job: the child exits at once, after the setting
    assert calls == ["set", "set"]
