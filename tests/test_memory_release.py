"""Issue 32: once an audit is over, the C heap's free memory goes back to the system before the report (and its
second process) starts, so the report does not hold the audit's peak."""

import platform
import sys

import numpy as np

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
    monkeypatch.setattr(_memory, "_TRIM", [])
    glibc = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
    blocks = [np.ones(50_000) for _ in range(40)]  # 16 MB in blocks malloc keeps for reuse once freed
    del blocks
    assert _memory.release_free_memory() in (True, False)
    assert (_memory._TRIM[0] is not None) == glibc
    monkeypatch.setattr(_memory, "_TRIM", [None])  # a C library without malloc_trim
    assert _memory.release_free_memory() is False


_ARENAS = r"""
import ctypes, sys, threading
import numpy as np
from autopdp import _memory
took = _memory.limit_heap_arenas() if sys.argv[1] == "limit" else None
kept, gate = [], threading.Barrier(4)
def work():
    gate.wait()  # the four threads allocate at once: glibc gives a thread that meets a locked heap an arena of its own
    for _ in range(200):
        kept.append(np.ones(1000))  # 8 kB blocks: malloc's heaps, below the mmap threshold
threads = [threading.Thread(target=work) for _ in range(4)]
[t.start() for t in threads]
[t.join() for t in threads]
print("took", took, file=sys.stderr)
ctypes.CDLL("libc.so.6").malloc_stats()  # one "Arena N:" block per heap, on stderr
"""


def _arenas(mode, env=None):
    import os
    import subprocess

    run = subprocess.run([sys.executable, "-c", _ARENAS, mode], capture_output=True, text=True, timeout=120,
                         env={**os.environ, **(env or {})})
    assert run.returncode == 0, run.stderr
    return run.stderr.count("Arena "), run.stderr


def test_the_command_gives_its_c_heap_one_arena():
    import pytest

    if not (sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"):
        pytest.skip("glibc's arenas (another C library has its own allocator; limit_heap_arenas does nothing there)")
    env = {"MALLOC_ARENA_MAX": ""}
    limited, text = _arenas("limit", env)
    assert "took True" in text and limited == 1, text
    default, text = _arenas("default", env)
    assert default > 1, text  # without the limit the same threads made heaps of their own: the test can fail
    user, text = _arenas("limit", {"MALLOC_ARENA_MAX": "3"})  # the user's own setting wins
    assert "took False" in text and 1 < user <= 3, text


def test_only_the_program_itself_limits_the_arenas(monkeypatch):
    from autopdp import cli

    calls = []
    monkeypatch.setattr(_memory, "limit_heap_arenas", lambda *a: calls.append(a) or True)
    monkeypatch.setattr(sys, "argv", ["autopdp", "--version"])
    assert cli.main(["--version"]) == 0 and calls == []  # a call from Python: the caller's process is left alone
    assert cli.main() == 0 and calls == [()]
