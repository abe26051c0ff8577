"""Imports point one way between the packages (docs/architecture.md): a module imports from its own package and
from lower layers only, whether the import is at the top of the module or inside a function."""

from __future__ import annotations

import ast
import re
from graphlib import TopologicalSorter
from itertools import dropwhile, takewhile
from pathlib import Path

import pytest
from conftest import ROOT

PACKAGE = "supersonic_interlink"
RESOLVED = re.compile(rf"{PACKAGE}(\.\w+)+:\w+")
SOURCES = sorted((ROOT / PACKAGE).rglob("*.py"))
# The packages by layer, lowest first ("" is the package's __init__: ROOT only). A layer's packages are siblings:
# they do not import each other.
ORDER = [
    ["", ".contract", ".files", ".objdiff", ".progress"],
    [".config", ".postrender"],
    [".chart"],
    [".components"],
    [".program"],
    [".render"],
    [".takeover", ".wake", ".state", ".engine"],
    [".drift", ".diff", ".rehearse"],
    [".cli"],
    [".__main__"],
]
LAYERS = {PACKAGE + name: layer for layer, names in enumerate(ORDER) for name in names}


def unit_of(module: str) -> str:
    """The longest entry of LAYERS that is ``module`` or a package above it; a module at the package root must be
    listed itself (the root's own entry is its ``__init__`` only)."""
    parts = module.split(".")
    above = (".".join(parts[:end]) for end in range(len(parts), 0, -1))
    if unit := next((name for name in above if name in LAYERS and (name != PACKAGE or name == module)), None):
        return unit
    raise AssertionError(f"{module}: not placed in a layer; add its package to LAYERS and docs/architecture.md")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(tree: ast.AST, module: str, is_package: bool) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            # `from package import module` imports the module: place it by the longer name when it is one.
            for alias in node.names:
                full = f"{name}.{alias.name}"
                found.append((node.lineno, full if _is_module(full) else name))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and RESOLVED.fullmatch(node.value):
            # A "module:function" that pkgutil.resolve_name loads when a verb runs is an import too.
            found.append((node.lineno, node.value.split(":")[0]))
    return [(line, name) for line, name in found if name.split(".")[0] == PACKAGE]


def _is_module(name: str) -> bool:
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imports_of(path: Path) -> list[tuple[int, str]]:
    return imported(ast.parse(path.read_text(), str(path)), module_name(path), path.name == "__init__.py")


def test_imports_point_down_the_layers_and_never_in_a_circle() -> None:
    imports = {path: imports_of(path) for path in SOURCES}
    assert len(imports) > 40, "the walk found the package's modules"
    upward = []
    for path, found in imports.items():
        unit = unit_of(module_name(path))
        for line, name in found:
            target = unit_of(name)
            if target != unit and LAYERS[target] >= LAYERS[unit]:
                upward.append(
                    f"{path.relative_to(ROOT)}:{line}: {unit} (layer {LAYERS[unit]}) imports {name} "
                    f"(layer {LAYERS[target]}): imports point down only"
                )
    assert upward == []
    graph = {module_name(path): {name for _, name in found} - {module_name(path)} for path, found in imports.items()}
    assert sum(map(len, graph.values())) > 40, "the graph holds the package's imports"
    TopologicalSorter(graph).prepare()  # raises CycleError naming the modules of a circle


def test_the_checks_catch_an_unplaced_module_an_upward_import_and_an_unsaid_nested_import() -> None:
    with pytest.raises(AssertionError, match="not placed in a layer"):
        unit_of("supersonic_interlink.newpkg.part")
    upward = (
        "def f():\n    from supersonic_interlink.cli.main import VERBS\n    calls('supersonic_interlink.cli.x:run')\n"
    )
    names = imported(ast.parse(upward), "supersonic_interlink.config.loading", False)
    assert names == [(2, "supersonic_interlink.cli.main"), (3, "supersonic_interlink.cli.x")], "by name counts too"
    where = ROOT / PACKAGE / "config" / "example.py"
    nested = "def f():\n    # lazy\n    x = 1\n    from supersonic_interlink import contract\n"
    assert nested_imports(where, nested) == [f"{PACKAGE}/config/example.py:4: import inside f()"]
    said = "def f():\n    # Lazy for start-up time.\n    from supersonic_interlink import contract\n    import yaml\n"
    assert nested_imports(where, said + "    from supersonic_interlink import files\n") == []


def test_every_package_is_placed_and_named_in_the_architecture_note_and_no_module_is_named_command() -> None:
    packages = {p.parent.name for p in (ROOT / PACKAGE).glob("*/__init__.py")}
    placed = {name.split(".")[1] for name in LAYERS if name.count(".") == 1 and not name.endswith("__main__")}
    assert packages <= placed, f"packages without a layer: {sorted(packages - placed)}"
    note = (ROOT / "docs" / "architecture.md").read_text()
    missing = [p for p in sorted(packages) if f"`{p}/`" not in note]
    assert missing == [], f"docs/architecture.md does not describe: {missing}"
    # A module says what it does; "command" says only that a verb calls it.
    assert [str(p.relative_to(ROOT)) for p in SOURCES if p.stem in {"command", "commands"}] == []


def said_lazy(lines: list[str], number: int) -> bool:
    """Line ``number`` (1-based) is an import that the comment block above it, or its own comment, calls lazy; the
    imports of one group share the block."""
    above = dropwhile(lambda line: line.strip().startswith(("import ", "from ")), reversed(lines[: number - 1]))
    block = takewhile(lambda line: line.strip().startswith("#"), above)
    return "# lazy" in lines[number - 1].lower() or any("lazy" in line.lower() for line in block)


def nested_imports(path: Path, text: str | None = None) -> list[str]:
    """Project imports inside a function of ``path`` that no comment calls lazy."""
    lines = (path.read_text() if text is None else text).splitlines()
    found = []
    for function in ast.walk(ast.parse("\n".join(lines), str(path))):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in [n for n in ast.walk(function) if isinstance(n, (ast.Import, ast.ImportFrom))]:
            project = imported(ast.Module([node], []), module_name(path), path.name == "__init__.py")
            if project and not said_lazy(lines, node.lineno):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: import inside {function.name}()")
    return found


def test_project_imports_sit_at_the_top_of_the_module_unless_said_lazy() -> None:
    assert [problem for path in SOURCES for problem in nested_imports(path)] == []
