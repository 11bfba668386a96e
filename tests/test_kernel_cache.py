"""Issue 32: the compiled kernels are kept once per machine (``autopdp.utils.kernel_cache``), in a user-level folder
keyed by the kernel module's source, so a new virtual environment (a fresh CI container that keeps the folder, a
new ``make demo``) loads them instead of compiling them again.

Known answers from numba's own counters (``dispatcher.stats``): a process with an empty folder compiles and writes
the kernel there (a cache miss), the next process with the same folder loads it (a hit, no miss); a folder that
cannot be written leaves numba's own locators in charge and the kernel still runs.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

_SCRIPT = r"""
import json
import numpy as np
from autopdp.trust.ood_kernel import kth_distance
from autopdp.trust.ood import NUMERIC
rng = np.random.default_rng(0)
values = np.ascontiguousarray(rng.normal(size=(2, 60)))
kinds = np.full(2, NUMERIC, dtype=np.int64)
order = np.argsort(values[0], kind="stable").astype(np.int64)
d = kth_distance(values, kinds, np.ascontiguousarray(values[:, :5]), np.arange(5, dtype=np.int64), 3, 0, order,
                 np.ascontiguousarray(values[:, order]), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
                 np.zeros(0))
# the known answer: brute force over the other rows
full = ((values[:, :5, None] - values[:, None, :]) ** 2).sum(axis=0)
full[np.arange(5), np.arange(5)] = np.inf
expected = np.sort(full, axis=1)[:, 2]
st = kth_distance.stats
print(json.dumps({"hits": sum(st.cache_hits.values()), "misses": sum(st.cache_misses.values()),
                  "exact": bool(np.allclose(d, expected, rtol=0, atol=1e-12))}))
"""


def _run(cache_dir) -> dict:
    env = dict(os.environ, AUTOPDP_CACHE_DIR=str(cache_dir))
    env.pop("NUMBA_DISABLE_JIT", None)
    out = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_new_process_loads_the_kernels_the_first_one_compiled(tmp_path):
    first = _run(tmp_path)
    assert first["exact"] and first["misses"] == 1 and first["hits"] == 0  # compiled here ...
    folders = [p for p in tmp_path.iterdir() if p.name.startswith("trust.ood_kernel-")]
    assert len(folders) == 1 and list(folders[0].glob("*.nbi")) and list(folders[0].glob("*.nbc"))  # ... kept there
    second = _run(tmp_path)
    assert second["exact"] and second["hits"] == 1 and second["misses"] == 0  # loaded, not compiled


def test_an_unwritable_folder_falls_back_to_numbas_own_cache(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    result = _run(blocker / "kernels")  # cannot be created under a file
    assert result["exact"]
    assert not (blocker / "kernels").exists()


def test_the_folder_follows_the_environment(monkeypatch, tmp_path):
    from autopdp.utils.kernel_cache import cache_dir

    monkeypatch.setenv("AUTOPDP_CACHE_DIR", str(tmp_path / "k"))
    assert cache_dir() == tmp_path / "k"
    monkeypatch.delenv("AUTOPDP_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == Path(tmp_path / "xdg" / "autopdp" / "kernels")


def test_warmup_compiles_once_and_the_next_process_loads(tmp_path):
    """``autopdp warmup`` (for a CI image): the first call compiles every kernel a tree model's audit uses into the
    folder, a second process finds them all there and compiles none."""
    env = dict(os.environ, AUTOPDP_CACHE_DIR=str(tmp_path))
    runs = [subprocess.run([sys.executable, "-m", "autopdp", "warmup"], env=env, capture_output=True, text=True,
                           timeout=600) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
        assert str(tmp_path) in r.stdout
    import re

    first = re.search(r"(\d+) kernels ready .*\((\d+) compiled, (\d+) already kept\)", runs[0].stdout)
    second = re.search(r"(\d+) kernels ready .*\((\d+) compiled, (\d+) already kept\)", runs[1].stdout)
    assert first and second, (runs[0].stdout, runs[1].stdout)
    assert int(first.group(2)) >= 10 and int(first.group(3)) == 0
    assert int(second.group(2)) == 0 and int(second.group(3)) >= 10
    assert sorted(p.name.split("-")[0] for p in tmp_path.iterdir()) == [
        "pd.tree.kernels", "pd.tree.moves", "pd.tree.pair_kernels", "trust.ood_kernel", "trust.strat_kernel"]
