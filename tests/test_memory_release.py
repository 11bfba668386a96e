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
