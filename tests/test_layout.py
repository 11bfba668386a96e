"""The layout is the pipeline: each module imports only earlier stages and the base modules.

base (``errors``, ``config``, ``_version``, ``utils``, ``datasets``) -> pd (data, grids, PD/ICE; ``pd.tree`` the exact
tree path) -> scores (utilities, ranking, selection) -> findings (noise, materiality, refits) -> trust (ALE, StratPD,
OOD, surrogate) -> io (models, data, results.json, provenance) -> report (context, figures, templates) -> auditing,
gating, cli and integrations on top.  Imports are read from the source with ``ast`` (those inside functions
included), so a lazy import of a later stage fails here too.  Every module is checked, not only the stages'.
"""

import ast
from pathlib import Path

import pytest

import autopdp

PACKAGE = Path(autopdp.__file__).parent
BASE = {"errors", "config", "_version", "__version__", "utils", "datasets", "templates"}  # import no stage; any stage may import them
STAGES = ["pd", "scores", "findings", "trust", "io", "report"]
TOP = {"auditing", "gating", "cli", "integrations", "__main__"}  # above every stage
TOP_LEVEL_MAX = 8


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, name: str | None = None) -> set:
    """Every autopdp module a source file imports, relative imports resolved (``name``: the
    module's dotted name, when the file is not where that module lives)."""
    name = name or _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            out.add(target)
            out.update(f"{target}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {m for m in out if m == "autopdp" or m.startswith("autopdp.")}


def _rank(module: str):
    """-1 for a base module, the stage's index, or len(STAGES) above every stage."""
    parts = module.split(".")
    if len(parts) < 2:
        return len(STAGES)  # autopdp/__init__: the public names, loaded on first use
    if parts[1] in BASE:
        return -1
    if parts[1] in STAGES:
        return STAGES.index(parts[1])
    if parts[1] in TOP:
        return len(STAGES)
    raise AssertionError(f"{module} is in no package of the layout: add it to BASE, STAGES or TOP")


SOURCES = sorted(p for p in PACKAGE.rglob("*.py") if p != PACKAGE / "__init__.py")


def test_every_package_exists_the_top_level_is_small_and_the_old_flat_modules_are_gone():
    for s in [*STAGES, "pd/tree", "utils", "auditing", "gating", "cli", "integrations/mlflow"]:
        assert (PACKAGE / s / "__init__.py").is_file(), s
        assert ast.get_docstring(ast.parse((PACKAGE / s / "__init__.py").read_text())), f"{s} says what it takes and returns"
    flat = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(flat) <= TOP_LEVEL_MAX, flat
    for moved in ("partial_dependence", "tree_ice", "scoring", "selection", "ale", "ood", "trust", "modelfree", "audit",
                  "gate", "results_io", "loading", "mlflow_log", "stage_failures", "cli"):
        assert f"{moved}.py" not in flat, moved
    for gone in ("handover.py", "_memory.py", "_callable.py", "report/pdf_process.py"):
        assert not (PACKAGE / gone).exists(), gone
    assert len(SOURCES) > 100
    for p in SOURCES:
        _rank(_module_name(p))  # every module sits in a package of the layout


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_a_stage_never_imports_a_later_stage(path):
    own = _rank(_module_name(path))
    later = sorted(m for m in _imports(path) if m != "autopdp" and _rank(m) > own)
    where = "a base module" if own < 0 else "above every stage" if own == len(STAGES) else f"stage {STAGES[own]}"
    assert not later, f"{_module_name(path)} ({where}) imports later stages: {later}"


def test_the_check_sees_a_lazy_import_of_a_later_stage(tmp_path):
    """The check itself can fail: a function-level import of the report, written into the PD stage."""
    probe = tmp_path / "data.py"
    probe.write_text((PACKAGE / "pd" / "data.py").read_text()
                     + "\n\ndef _late():\n    from ..report.findings import fmt\n    return fmt\n")
    found = _imports(probe, "autopdp.pd.data")
    assert "autopdp.report.findings" in found
    assert _rank("autopdp.report.findings") > _rank("autopdp.pd.data")


def test_an_audit_validates_its_data_once(monkeypatch):
    """audit() turns X into the validated frame at its entry; every stage below (PDs, 2D grids,
    comparison models, scores, ALE, StratPD, OOD, coverage) is handed that frame, not raw X."""
    import numpy as np
    import pandas as pd
    from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier

    import autopdp.pd.data as data

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(300, 4)), columns=list("abcd"))
    y = (X.a + X.b * X.c > 0).astype(int)
    model = RandomForestClassifier(n_estimators=10, random_state=0).fit(X, y)
    other = GradientBoostingClassifier(n_estimators=10, random_state=0).fit(X, y)
    seen = []
    validated = data._validated

    def counted(X, name):
        seen.append(type(X).__name__)
        return validated(X, name)

    monkeypatch.setattr(data, "_validated", counted)
    a = autopdp.audit(model, X, y, compare={"other": other},
                      config={"grid_resolution": 6, "grid_resolution_2d": 4, "max_rows_2d": 100})
    assert len(a.results_2d) == 6 and "stratpd" in a.scores and "ood_share" in a.scores
    assert seen == ["DataFrame"]
    seen.clear()
    autopdp.ale(model, X, "a")  # a public entry point validates its own X
    assert seen == ["DataFrame"]


def _module_graph() -> dict:
    """Every autopdp module (not package ``__init__``) -> the modules it imports, lazily or not."""
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py") if p.name != "__init__.py"}
    return {name: {m for m in _imports(path) if m in files and m != name} for name, path in files.items()}


def _cycles(graph: dict) -> list:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_between_modules():
    """Issue 30: no two modules import each other, directly or through others (function-level imports count)."""
    graph = _module_graph()
    assert len(graph) > 50
    assert _cycles(graph) == []


def test_the_cycle_check_can_fail():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("name", ["auditing/pipeline", "auditing/record", "io/results", "auditing/validation"])
def test_the_audit_is_split_by_job_each_module_under_600_lines(name):
    """Issue 30: the pipeline, input validation, the result and its results.json tables, each its own
    module of fewer than 600 lines."""
    assert len((PACKAGE / f"{name}.py").read_text().splitlines()) < 600


def _code_lines(source: str, node) -> int:
    """A function's lines of code: its docstring, blank lines and comments excluded."""
    body = node.body
    start = body[1].lineno if ast.get_docstring(node) and len(body) > 1 else body[0].lineno
    lines = source.splitlines()[start - 1: node.end_lineno]
    return sum(1 for line in lines if line.strip() and not line.strip().startswith("#"))


def _parameters(node) -> int:
    a = node.args
    n = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + bool(a.vararg) + bool(a.kwarg)
    return n - 1 if a.args and a.args[0].arg in ("self", "cls") else n


def test_short_functions_and_modules():
    """Issue 51: no module over 600 lines, no function (numba kernels included) over 80 lines of code or 12
    parameters; a kernel takes grouped arrays as tuples, a public function an options object."""
    long, many, big = [], [], []
    for path in SOURCES + [PACKAGE / "__init__.py"]:
        source = path.read_text()
        if len(source.splitlines()) > 600:
            big.append(str(path.relative_to(PACKAGE)))
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                where = f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}"
                if _code_lines(source, node) > 80:
                    long.append(where)
                if _parameters(node) > 12:
                    many.append(where)
    assert (long, many, big) == ([], [], [])


def test_the_size_checks_can_fail():
    source = "def f(" + ", ".join(f"a{i}" for i in range(13)) + "):\n" + "    x = 1\n" * 81
    node = ast.parse(source).body[0]
    assert _parameters(node) == 13 and _code_lines(source, node) == 81
    text = "class C:\n    def m(self, a, b):\n        '''doc'''\n        # note\n\n        return a\n"
    m = ast.parse(text).body[0].body[0]
    assert _parameters(m) == 2 and _code_lines(text, m) == 1
