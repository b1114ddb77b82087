"""The layout and its one-way imports (docs/ARCHITECTURE.md): an AST walk over every module of the package.

Each room (a subpackage, or one of the few modules directly under dpstats/) has a
layer; a module may import only from its own layer or below, neither the module
graph nor the graph of rooms has a cycle, a mechanism never imports the front end,
the results or the output, and a mechanism family imports no other family (only its
own modules, mechanisms/base.py, mechanisms/quantiles.py and the core). The top floor
holds at most 12 modules and no module shares its name with a subpackage.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dpstats"

LAYERS: dict[str, int] = {
    # 0: the core every layer may use
    "privacy": 0,
    "design": 0,
    "uncertainty": 0,
    "glm": 0,
    "former_modules": 0,
    # 1: the mechanisms (a Design, a PrivacyRequest and a generator in, a Release out)
    "mechanisms": 1,
    # 2: the front end (formula + data -> Design) and the output formats of released values
    "frontend": 2,
    "output": 2,
    # 3: results, made from a release
    "results": 3,
    # 4: the entry points that read data, and the planning of a call
    "api": 4,
    "planning": 4,
    "groups": 4,
    "distributed": 4,
    # 5: programs, reports and harnesses on top
    "report": 5,
    "demo": 5,
    "cli": 5,
    "__main__": 5,
    "r_interop": 5,
    "audit": 5,
}
FORBIDDEN_FOR_MECHANISMS = {"frontend", "output", "results", "report"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """The dpstats modules ``path`` imports (relative imports resolved), TYPE_CHECKING blocks included."""
    name = _module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            if node.level and not node.module:
                found |= {f"{module}.{alias.name}" for alias in node.names}
            elif module.startswith("dpstats"):
                found.add(module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith("dpstats")}
    return found


MODULES = {_module_name(p): _imports(p) for p in sorted(PACKAGE.rglob("*.py"))}


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _known(module: str) -> bool:
    return module in MODULES or any(m.startswith(module + ".") for m in MODULES)


def test_every_module_has_a_layer() -> None:
    missing = sorted({_top(m) for m in MODULES if m != "dpstats"} - set(LAYERS))
    assert not missing, f"give these modules a layer in LAYERS and docs/ARCHITECTURE.md: {missing}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m != "dpstats"))
def test_imports_run_down_the_layers(module: str) -> None:
    own = LAYERS[_top(module)]
    upward = sorted(t for t in MODULES[module] if _known(t) and _top(t) and LAYERS[_top(t)] > own)
    assert not upward, f"{module} (layer {own}) imports from a higher layer: {upward}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _top(m) == "mechanisms"))
def test_a_mechanism_imports_neither_the_front_end_nor_results_nor_rendering(module: str) -> None:
    bad = sorted(t for t in MODULES[module] if _top(t) in FORBIDDEN_FOR_MECHANISMS)
    assert not bad, f"{module} imports {bad}"


def _family(module: str) -> str | None:
    parts = module.split(".")
    if len(parts) > 2 and parts[1] == "mechanisms" and f"dpstats.mechanisms.{parts[2]}" in MODULES:
        is_package = (PACKAGE / "mechanisms" / parts[2]).is_dir()
        return parts[2] if is_package else None
    return None


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _family(m)))
def test_a_mechanism_family_imports_no_other_family(module: str) -> None:
    own = _family(module)
    others = sorted(t for t in MODULES[module] if _family(t) not in (None, own))
    assert not others, f"{module} (family {own}) imports another family: {others}"


def test_the_module_graph_has_no_cycle() -> None:
    graph = {m: {t for t in targets if t in MODULES and t != m} for m, targets in MODULES.items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                raise AssertionError("import cycle: " + " -> ".join([*stack[stack.index(nxt) :], nxt]))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)


def test_the_rooms_import_one_way() -> None:
    """No two rooms import each other, directly or round a longer loop (a module-level cycle could hide one)."""
    rooms = {_top(m) for m in MODULES if _top(m)}
    graph = {
        r: {_top(t) for m, ts in MODULES.items() if _top(m) == r for t in ts if _known(t) and _top(t)} - {r}
        for r in rooms
    }
    order: list[str] = []
    remaining = {r: set(targets) for r, targets in graph.items()}
    while remaining:
        leaves = sorted(r for r, targets in remaining.items() if not targets & remaining.keys())
        assert leaves, f"rooms that import each other: {sorted(remaining)}"
        order += leaves
        for leaf in leaves:
            del remaining[leaf]
    assert len(order) == len(rooms)


def test_the_top_floor_holds_at_most_twelve_modules() -> None:
    modules = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(modules) <= 12, modules


def test_no_module_shares_its_name_with_a_subpackage() -> None:
    packages = {p.parent.name for p in PACKAGE.rglob("__init__.py")}
    modules = {p.stem for p in PACKAGE.rglob("*.py") if p.name != "__init__.py"}
    assert not packages & modules, sorted(packages & modules)


def test_import_dpstats_loads_no_submodule_and_no_numerics() -> None:
    """In a fresh interpreter ``import dpstats`` stays lazy: only the former-module finder loads
    (benchmarks/bench_import.py times it)."""
    code = (
        "import sys, dpstats; "
        "print(sorted(m for m in sys.modules if m.startswith(('dpstats.', 'numpy', 'pandas', 'scipy', 'patsy'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['dpstats.former_modules']"


def test_the_walk_sees_relative_imports() -> None:
    """The walk itself: a known edge must be found, so the tests above could fail."""
    assert "dpstats.frontend.formula" in MODULES["dpstats.api.estimators"]
    assert "dpstats.mechanisms.base" in MODULES["dpstats.results.regression"]


def test_the_registry_imports_a_family_only_when_it_is_used() -> None:
    """In a fresh interpreter: asking for NoisyStats loads no other family (KNG's sampler, Tukey, ...), only the
    modules the families share (base.py, and precondition.py, which NoisyStats and DP Newton use)."""
    code = (
        "import sys; from dpstats.mechanisms import REGISTRY, get_mechanism; "
        "assert 'noisystats' in REGISTRY and len(REGISTRY) == 8; get_mechanism('noisystats', 'ols'); "
        "print(sorted({m.split('.')[2] for m in sys.modules if m.startswith('dpstats.mechanisms.')}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['base', 'noisystats', 'precondition']"
