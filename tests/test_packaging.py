"""The wheel users install: every subpackage and template inside, and working in a brand-new
virtual environment where no editable install or source tree can stand in for a missing file."""

import os
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _source_packages() -> set[str]:
    """Dotted names of every package under autopdp/ in the source tree (folders with __init__.py)."""
    return {
        ".".join(init.parent.relative_to(ROOT).parts)
        for init in (ROOT / "autopdp").rglob("__init__.py")
        if "__pycache__" not in init.parts
    }


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(ROOT)],
        capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return next(out.glob("autopdp-*.whl"))


def test_wheel_holds_every_subpackage_and_template(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    packages = _source_packages()
    assert {"autopdp", "autopdp.scores.utilities", "autopdp.report", "autopdp.templates"} <= packages
    missing = sorted(p for p in packages if p.replace(".", "/") + "/__init__.py" not in names)
    assert missing == [], f"subpackages left out of the wheel: {missing}"
    for data in ("autopdp/templates/report.html.j2", "autopdp/templates/report.css",
                 "autopdp/templates/notebook.html.j2", "autopdp/datasets/data/german_credit.csv"):
        assert data in names, data


def test_wheel_runs_in_a_fresh_virtual_environment(wheel, tmp_path):
    """A new venv gets the wheel (no editable install anywhere on its path); the dependencies come
    from this environment's site-packages as plain path entries, so no .pth hook of an editable
    install can run there. The audit, the HTML report and the console script must work."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300)
    py = venv / "bin" / "python"
    proc = subprocess.run([str(py), "-m", "pip", "install", "--no-deps", "--no-index", "-q", str(wheel)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    # lines of a .pth file become sys.path entries; .pth files inside them are not processed
    (Path(purelib) / "_autopdp_test_deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    script = (
        "import importlib, pkgutil, pathlib, sys\n"
        "import autopdp\n"
        "assert pathlib.Path(autopdp.__file__).is_relative_to(sys.argv[1]), autopdp.__file__\n"
        "for m in pkgutil.walk_packages(autopdp.__path__, 'autopdp.'):\n"
        "    importlib.import_module(m.name)\n"
        "X, y = autopdp.datasets.load_german_credit()\n"
        "a = autopdp.audit(lambda d: d['age'].to_numpy() / 100.0, X.iloc[:100], y.iloc[:100],\n"
        "    config=autopdp.AuditConfig(features=('age', 'duration_months'), grid_resolution=5, grid_resolution_2d=3))\n"
        "html = a.to_html()\n"
        "assert 'Executive summary' in html\n"
        "print('rendered', len(html))\n"
    )
    proc = subprocess.run([str(py), "-c", script, purelib], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "rendered" in proc.stdout
    proc = subprocess.run([str(venv / "bin" / "autopdp"), "--help"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "demo" in proc.stdout and "report" in proc.stdout
    # python -m autopdp is the same command line, exit codes included
    proc = subprocess.run([str(py), "-m", "autopdp", "--help"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0 and "demo" in proc.stdout and "report" in proc.stdout, proc.stderr[-3000:]
    proc = subprocess.run([str(py), "-m", "autopdp", "report", "--model", "missing.skops", "--data", "missing.csv",
                           "--target", "y", "--out", "out"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 2 and "missing.skops" in proc.stderr, (proc.returncode, proc.stderr[-3000:])


def test_public_names_resolve_and_no_module_shares_a_public_function_name():
    """autopdp loads its public names on first use; ``autopdp.audit`` and ``autopdp.gate`` are the functions, defined
    in modules of other names (``autopdp.auditing.pipeline``, ``autopdp.gating.verdict``: issue 51 removed the callable
    modules); importing the submodules named like the public functions (ale, partial_dependence) leaves the functions."""
    import importlib
    import inspect
    import types

    import autopdp

    for name in ("auditing.pipeline", "gating.verdict", "trust.ale", "pd.partial_dependence"):
        importlib.import_module(f"autopdp.{name}")
    for name in autopdp.__all__:
        assert hasattr(autopdp, name), name
    for name in ("ale", "partial_dependence", "compute_all", "stratpd"):
        assert callable(getattr(autopdp, name)) and getattr(autopdp, name).__name__ == name, name
    import autopdp.auditing.pipeline as audit_module
    import autopdp.gating.verdict as gate_module

    assert isinstance(autopdp.audit, types.FunctionType) and autopdp.audit is audit_module.audit
    assert isinstance(autopdp.gate, types.FunctionType) and autopdp.gate is gate_module.gate
    here = Path(autopdp.__file__).parent
    for public in autopdp.__all__:  # no public function shares its name with a module of autopdp/
        if public != "datasets":
            assert not (here / f"{public}.py").exists() and not (here / public).is_dir(), public
    assert autopdp.auditing.validation.MIN_ROWS == 10 and autopdp.gating.verdict.champion_name.__name__ == "champion_name"
    assert list(inspect.signature(autopdp.audit).parameters)[:3] == ["model", "X", "y"]
    assert list(inspect.signature(autopdp.gate).parameters)[:2] == ["audit", "policy"]
    with pytest.raises(autopdp.InputError, match="policy defines no check"):  # the call reaches gate()
        autopdp.gate(object(), {})
    assert isinstance(autopdp.datasets, type(autopdp)) or hasattr(autopdp.datasets, "load_german_credit")
    assert set(autopdp.__all__) <= set(dir(autopdp))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        autopdp.nope  # noqa: B018
