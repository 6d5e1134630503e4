"""No file-level import circles in ``src/fireval`` (the brief: "arrows pointing down").

The graph: one node per module under ``src/fireval`` (a package is its ``__init__.py``); an edge
``a -> b`` for every import statement of ``a`` that names ``b``, wherever it is written: at the
top, inside a function (the lazy imports that keep the CLI fast), or under ``if TYPE_CHECKING:``
(mypy follows those). Resolution:

* ``import a.b.c`` names the module ``a.b.c`` (or its longest prefix that is a module of ours);
* ``from a.b import name`` names ``a.b.name`` when that is a module, else ``a.b``;
* relative imports are resolved against the importing module's package;
* importing ``a.b.c`` also runs the ``__init__`` of ``a`` and ``a.b``, but that is no edge: a
  package's own import statements are counted in its ``__init__.py``, so a circle through a
  package still shows (e.g. ``a.b.c -> a.b`` and ``a.b -> a.b.c``).

Lazy re-exports: :func:`fireval.lazy.lazy_exports` (a package's table of names → sub-modules,
loaded with ``importlib`` on first attribute access) and ``importlib.import_module`` calls make
no edge. The package does not need those sub-modules to import, and each sub-module's own imports
are counted where they are written; this is the one sanctioned way for a package to re-export a
child lazily. A hand-written PEP 562 ``__getattr__`` that imports a child with an import
statement is counted like any other import (``fireval.torch -> fireval.torch.metric``), so such
a package must not be imported by that child's dependencies: they import the shared piece from
a module below it (``fireval.torch.tensors``).

A circle is a strongly connected component of two or more modules. :data:`KNOWN_CYCLES` lists,
exactly, those that still exist (it listed five when this test was written; all are broken now,
see :func:`test_the_circles_this_tidy_broke_stay_broken`): the test fails on a new circle, on one
that grew, and on a listed one that is gone (delete its entry, so the list only shrinks).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"

#: circles that still exist (known debt, each in an area being edited; break them by moving the
#: shared piece down, then delete the entry). None now: the list only shrinks, so keep it empty.
KNOWN_CYCLES: frozenset[frozenset[str]] = frozenset()

#: module -> (file, is a package)
Modules = Mapping[str, tuple[Path, bool]]
#: module -> {imported module: first line that imports it}
Graph = dict[str, dict[str, int]]


def find_modules(src: Path, top: str = "fireval") -> dict[str, tuple[Path, bool]]:
    out = {}
    for path in sorted((src / top).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts.pop()
        out[".".join(parts)] = (path, is_pkg)
    return out


def _known(name: str, modules: Modules) -> str | None:
    """``name`` or its longest prefix that is one of ``modules`` (None: not ours)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(name: str, modules: Modules) -> dict[str, int]:
    """The modules that module ``name`` imports, each with the line of its first import."""
    path, is_pkg = modules[name]
    package = name if is_pkg else name.rpartition(".")[0]
    out: dict[str, int] = {}

    def add(target: str | None, line: int) -> None:
        if target is not None and target != name:
            out.setdefault(target, line)

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(_known(alias.name, modules), node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            for alias in node.names:
                full = f"{source}.{alias.name}"
                add(full if full in modules else _known(source, modules), node.lineno)
    return out


def import_graph(src: Path = SRC, top: str = "fireval") -> Graph:
    modules = find_modules(src, top)
    return {name: imports_of(name, modules) for name in modules}


def cycles(graph: Graph) -> set[frozenset[str]]:
    """Strongly connected components of two or more modules (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    x = stack.pop()
                    on_stack.discard(x)
                    comp.add(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    found.add(frozenset(comp))
    return found


def _describe(comp: frozenset[str], graph: Graph) -> str:
    edges = [
        f"    {a} -> {b} (line {line})"
        for a in sorted(comp)
        for b, line in sorted(graph[a].items())
        if b in comp
    ]
    return "  {" + ", ".join(sorted(comp)) + "}\n" + "\n".join(edges)


def test_no_import_circles_but_the_known_ones() -> None:
    graph = import_graph()
    found = cycles(graph)
    new = found - KNOWN_CYCLES
    gone = KNOWN_CYCLES - found
    msg = []
    if new:
        msg.append(
            "import circles (break them by moving the shared piece down):\n"
            + "\n".join(_describe(c, graph) for c in sorted(new, key=sorted))
        )
    if gone:
        msg.append(
            "no longer circles (delete them from KNOWN_CYCLES, or they changed shape):\n"
            + "\n".join("  {" + ", ".join(sorted(c)) + "}" for c in sorted(gone, key=sorted))
        )
    assert not msg, "\n".join(msg)


def test_the_graph_sees_every_kind_of_import(tmp_path: Path) -> None:
    """The builder on a small package: relative, lazy (in a function), TYPE_CHECKING and
    ``from pkg import module`` imports are edges; ``importlib`` calls and outside modules are not."""
    pkg = tmp_path / "toy"
    (pkg / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "import importlib\ndef __getattr__(n):\n    return importlib.import_module('toy.c')\n",
        "a.py": "from . import b\nimport os\n",
        "b.py": "def f():\n    from toy.sub import d\n",
        "c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .sub.d import X\n",
        "sub/__init__.py": "from toy import VALUE\n",
        "sub/d.py": "from ..a import thing\nX = 1\n",
    }
    for rel, text in files.items():
        (pkg / rel).write_text(text)
    graph = import_graph(tmp_path, "toy")
    assert graph == {
        "toy": {},
        "toy.a": {"toy.b": 1},
        "toy.b": {"toy.sub.d": 2},
        "toy.c": {"toy.sub.d": 3},
        "toy.sub": {"toy": 1},
        "toy.sub.d": {"toy.a": 1},
    }
    assert cycles(graph) == {frozenset({"toy.a", "toy.b", "toy.sub.d"})}


def test_the_circles_this_tidy_broke_stay_broken() -> None:
    """The edges that closed them now point down (kernel and incomplete share metrics.entries;
    fireval.api uses fireval.torch.tensors, not the package that re-exports TVRMetric)."""
    graph = import_graph()
    assert "fireval.metrics.kernel" not in graph["fireval.metrics.incomplete"]
    assert "fireval.metrics.entries" in graph["fireval.metrics.incomplete"]
    assert "fireval.torch" not in graph["fireval.api"]
    assert "fireval.torch.tensors" in graph["fireval.api"]
    assert "fireval.api" in graph["fireval.torch.metric"]  # (the metric sits above the API)


def test_the_shared_pieces_sit_below_both_sides() -> None:
    """The five circles of formats, judging and web were broken by moving the shared piece into
    a module below both sides; the edges that closed them stay gone."""
    graph = import_graph()
    gone = {
        # non-qrels labels (npz, FIRE JSON) are read by formats.labelfmt, below labels and trec
        "fireval.formats.trec": ("fireval.formats.labels",),
        "fireval.formats.labelfmt": ("fireval.formats.labels", "fireval.formats.trec"),
        "fireval.formats.graded_npz": ("fireval.formats.labels", "fireval.formats.trec"),
        # the CSV rows of the dataset files: formats.csvrows, below datasets and msrvtt
        "fireval.formats.msrvtt": ("fireval.formats.datasets",),
        # agreement statistics: judging.alpha, below aggregate (store side) and agreement
        "fireval.judging.aggregate": ("fireval.judging.agreement",),
        "fireval.judging.alpha": ("fireval.judging.aggregate", "fireval.judging.agreement"),
        # the sidecar's default path is provenance's; export imports it from there
        "fireval.judging.provenance": ("fireval.judging.export",),
        # the app's settings: web.config, below the app and its fast paths
        "fireval.web.fastpath": ("fireval.web.app",),
        "fireval.web.annotate_prefetch": ("fireval.web.app",),
        "fireval.web.config": ("fireval.web.app",),
    }
    for module, targets in gone.items():
        for target in targets:
            assert target not in graph[module], f"{module} -> {target}"
    assert "fireval.formats.labelfmt" in graph["fireval.formats.trec"]
    assert "fireval.formats.csvrows" in graph["fireval.formats.msrvtt"]
    assert "fireval.judging.alpha" in graph["fireval.judging.aggregate"]
    assert "fireval.web.config" in graph["fireval.web.fastpath"]
