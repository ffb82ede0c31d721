"""The import graph of the installed package (``tcsim.*``) and of the campaigns (``calib.*``), read from the source
(every ``import`` statement, also those inside functions; nothing of it is imported):

* no cycle between modules (each is reported as a chain ``a -> b -> ... -> a`` with the line of every import);
* tcsim never imports the campaigns (``calib``) or the tests, and reaches its own folders only as ``tcsim.*``
  (a bare ``import sim`` / ``hw`` / ``isa`` / ``examples`` would load a second copy from the checkout);
* the campaigns never import the tests.

The installed packages are the ones pyproject.toml declares (``[tool.setuptools] packages`` and ``package-dir``),
each checked against where the import system finds it."""
from __future__ import annotations

import ast
import importlib.util
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------------------------ the graph
def package_modules(package: str, folder: Path) -> dict:
    """{module name: file} of the .py files directly in ``folder`` (the package ``package``)."""
    out = {}
    for p in sorted(folder.glob("*.py")):
        out[package if p.stem == "__init__" else f"{package}.{p.stem}"] = p
    return out


def installed_modules() -> dict:
    """{module name: file} of every module of the packages pyproject.toml installs."""
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    dirs = conf["package-dir"]
    out = {}
    for pkg in conf["packages"]:
        base = max((k for k in dirs if pkg == k or pkg.startswith(k + ".")), key=len)
        folder = ROOT / dirs[base] / Path(*pkg[len(base):].split(".")[1:])
        spec = importlib.util.find_spec(pkg)
        assert spec is not None and Path(spec.origin).resolve().parent == folder.resolve(), \
            f"{pkg} is imported from {spec and spec.origin}, not from {folder} (reinstall: pip install -e .)"
        out.update(package_modules(pkg, folder))
    return out


def campaign_modules(root: Path = ROOT, top: str = "calib") -> dict:
    """{module name: file} of the campaigns (``calib`` and its sub-packages: folders with an __init__.py)."""
    out = {}
    for init in sorted((root / top).rglob("__init__.py")):
        rel = init.parent.relative_to(root)
        out.update(package_modules(".".join(rel.parts), init.parent))
    return out


def imports(name: str, path: Path):
    """(imported module name as written or resolved from a relative import, line) of every import in ``path``;
    ``from pkg import x`` also yields ``pkg.x`` (a submodule, when it is one)."""
    is_pkg = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = name.split(".") if is_pkg else name.split(".")[:-1]
                parts = parts[:len(parts) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            else:
                base = node.module
            yield base, node.lineno
            for a in node.names:
                yield f"{base}.{a.name}", node.lineno


def import_graph(modules: dict) -> dict:
    """{module: {imported module of ``modules``: line}}: each import goes to the longest module name it starts
    with (``tcsim.isa.errors.TcsimError`` -> ``tcsim.isa.errors``)."""
    graph = {}
    for name, path in modules.items():
        edges = {}
        for target, line in imports(name, path):
            t = target
            while t and t not in modules:
                t = t.rpartition(".")[0]
            if t and t != name:
                edges.setdefault(t, line)
        graph[name] = edges
    return graph


def cycles(graph: dict) -> list:
    """One cycle of every strongly connected component of more than one module, as a list of modules whose
    last element imports the first (Tarjan's algorithm, iterative)."""
    index, low, on, stack, comps = {}, {}, set(), [], []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(graph[w])))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    comps.append(set(comp))
    out = []
    for comp in comps:                          # a shortest way back to the start, inside the component
        start = min(comp)
        prev, frontier = {start: None}, [start]
        while frontier and start not in [w for v in frontier for w in graph[v]]:
            nxt = []
            for v in frontier:
                for w in graph[v]:
                    if w in comp and w not in prev:
                        prev[w] = v
                        nxt.append(w)
            frontier = nxt
        last = next(v for v in frontier if start in graph[v])
        path = [last]
        while prev[path[-1]] is not None:
            path.append(prev[path[-1]])
        out.append(path[::-1])
    return out


def describe(cycle: list, graph: dict, modules: dict) -> str:
    hops = zip(cycle, cycle[1:] + cycle[:1])
    return " -> ".join(f"{a} ({modules[a].relative_to(ROOT)}:{graph[a][b]})" for a, b in hops) + f" -> {cycle[0]}"


# ------------------------------------------------------------------------------------------------ the tests
MODULES = {**installed_modules(), **campaign_modules()}
GRAPH = import_graph(MODULES)


def test_the_graph_covers_the_package_and_the_campaigns():
    # every folder of the package and of the campaigns is read (names that must be there, not a count)
    for name in ("tcsim", "tcsim.cli", "tcsim.isa.parser", "tcsim.hw.cli_diff", "tcsim.hw.launcher",
                 "tcsim.examples.gemm_async", "tcsim.timing.model", "calib.pipeline", "calib.tma.record",
                 "calib.microbench.fit", "calib.fuzz.record", "calib.probes.alu_probe"):
        assert name in MODULES, name
    assert "tcsim.hw.cli_diff" in GRAPH["tcsim.cli"]


def test_no_import_cycles():
    found = cycles(GRAPH)
    assert not found, "import cycles:\n" + "\n".join(describe(c, GRAPH, MODULES) for c in found)


def _foreign_imports(prefix: str, forbidden: tuple) -> list:
    bad = []
    for name, path in MODULES.items():
        if name != prefix and not name.startswith(prefix + "."):
            continue
        for target, line in imports(name, path):
            if target.split(".")[0] in forbidden:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {target}")
    return sorted(set(bad))


def test_tcsim_imports_neither_the_campaigns_nor_the_tests():
    bad = _foreign_imports("tcsim", ("calib", "tests", "conftest", "sim", "isa", "hw", "examples"))
    assert not bad, "\n".join(bad)


def test_the_campaigns_do_not_import_the_tests():
    bad = _foreign_imports("calib", ("tests", "conftest", "sim", "isa", "hw", "examples"))
    assert not bad, "\n".join(bad)


def test_a_cycle_is_found_and_reported(tmp_path):
    """Negative control: a package whose modules import each other, one of them inside a function."""
    pkg = tmp_path / "calib"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("import os\n\n\ndef f():\n    from calib.sub.c import g\n    return g\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "c.py").write_text("from ..a import x\n")
    (pkg / "d.py").write_text("from calib import a\n")            # imports into the cycle, is not on it
    mods = campaign_modules(tmp_path)
    g = import_graph(mods)
    assert g["calib.b"] == {"calib.sub.c": 5} and g["calib.sub.c"] == {"calib.a": 1}
    found = cycles(g)
    assert found == [["calib.a", "calib.b", "calib.sub.c"]]
    assert cycles({"x": {"y": 1}, "y": {}}) == []
