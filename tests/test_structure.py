"""The code's structure: no import cycles, and entry points import the library, never each other."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("actorq", "launchpad_programs", "experiments", "benchmarks", "configs")
# Modules under experiments/ and benchmarks/ that are not entry points (no main guard).
SHARED = {"experiments.cli", "experiments", "benchmarks"}


def _modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            name = ".".join(path.relative_to(REPO).with_suffix("").parts)
            out[name.removesuffix(".__init__")] = path
    return out


def _imports(path: Path, modules: dict[str, Path], module_level_only: bool) -> set[str]:
    tree = ast.parse(path.read_text())
    nodes = tree.body if module_level_only else list(ast.walk(tree))
    found = set()
    for node in nodes:
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        for name in names:
            while name and name not in modules:
                name = name.rsplit(".", 1)[0] if "." in name else ""
            if name:
                found.add(name)
    return found


def test_the_import_graph_has_no_cycles():
    modules = _modules()
    graph = defaultdict(set)
    for name, path in modules.items():
        graph[name] = _imports(path, modules, module_level_only=True) - {name}
    visiting, done, cycles = set(), set(), []

    def visit(node: str, trail: list[str]) -> None:
        if node in done:
            return
        if node in visiting:
            cycles.append(trail[trail.index(node):] + [node])
            return
        visiting.add(node)
        for nxt in sorted(graph[node]):
            visit(nxt, [*trail, node])
        visiting.discard(node)
        done.add(node)

    for name in sorted(modules):
        visit(name, [])
    assert cycles == []


def test_entry_points_never_import_each_other():
    modules = _modules()
    entry_points = {name for name, path in modules.items()
                    if name.split(".")[0] in ("experiments", "benchmarks")
                    and name not in SHARED and "__main__" in path.read_text()}
    assert {"experiments.ppo_actorq", "benchmarks.policy_inference"} <= entry_points
    offenders = {name: sorted(_imports(modules[name], modules, False) & (entry_points - {name}))
                 for name in entry_points}
    assert {k: v for k, v in offenders.items() if v} == {}
