"""The package's layering, kept by reading its imports: no import circles, no import running back up a layer,
features (H+, HBCT) never importing each other, nothing importing the command line.

Every import statement counts, also those inside functions and ``if TYPE_CHECKING`` blocks: a lazy import is still
a dependency. The layers are the README's "Layout" section, bottom to top.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "src" / "hyte"

# Bottom to top. A module belongs to the first entry that is its name or a package above it.
LAYERS = [
    # remote code: flat, self-contained, importing only each other
    ("hyte.lorentz", "hyte.configuration_hyte", "hyte.modeling_hyte", "hyte.sentence_transformers_hyte",
     "hyte.configuration_hyte_phrase", "hyte.modeling_hyte_phrase"),
    # foundation
    ("hyte", "hyte.errors", "hyte.auto_classes", "hyte.bundled", "hyte.lineage", "hyte.artifacts", "hyte.identity",
     "hyte.io", "hyte.results", "hyte.markdown", "hyte.model_kinds"),
    ("hyte.data",),
    ("hyte.encoders", "hyte.export", "hyte.hub"),
    ("hyte.retrieval", "hyte.corpus", "hyte.generation", "hyte.rag"),
    ("hyte.integrations",),
    ("hyte.evaluation",),
    ("hyte.training",),
    ("hyte.phrase", "hyte.compatibility"),  # features
    ("hyte.runner", "hyte.report", "hyte.quickstart", "hyte.demo"),
    ("hyte.cli",),
]
FEATURES = ("hyte.phrase", "hyte.compatibility")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SOURCE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in SOURCE.rglob("*.py")}


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The ``hyte`` modules that ``name`` imports (``from pkg import module`` resolves to the module)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.split(".")[0] == "hyte"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "hyte":
                continue
            for alias in node.names:
                found.add(f"{target}.{alias.name}" if f"{target}.{alias.name}" in modules else target)
    unknown = found - set(modules)
    assert not unknown, f"{name} imports modules that do not exist: {sorted(unknown)}"
    return found - {name}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _layer(module: str) -> int:
    best = None
    for level, names in enumerate(LAYERS):
        for prefix in names:
            if module == prefix or module.startswith(prefix + "."):
                if best is None or len(prefix) > best[1]:
                    best = (level, len(prefix))
    assert best is not None, f"{module} belongs to no layer: add it to LAYERS and to the README's layout section"
    return best[0]


def _owner(module: str) -> str:
    """The layer entry a module belongs to (its package, or itself)."""
    return max((prefix for names in LAYERS for prefix in names
                if module == prefix or module.startswith(prefix + ".")), key=len)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, components = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def test_every_module_has_a_layer():
    for module in _modules():
        _layer(module)


def test_no_import_circles():
    # A package importing its own submodules (``__init__`` re-exports) is not a circle between layers; every other
    # pair of modules must not reach each other.
    graph = {name: {t for t in targets if not (name == t.rpartition(".")[0] and _is_package(name))}
             for name, targets in _graph().items()}
    assert _cycles(graph) == []


def _is_package(name: str) -> bool:
    return (SOURCE.parent / Path(*name.split(".")) / "__init__.py").is_file()


def test_no_import_runs_back_up_a_layer():
    upward = sorted((source, target) for source, targets in _graph().items() for target in targets
                    if _layer(target) > _layer(source))
    assert upward == []


def test_features_do_not_import_each_other():
    crossing = sorted((source, target) for source, targets in _graph().items() for target in targets
                      if _owner(source) in FEATURES and _owner(target) in FEATURES
                      and _owner(source) != _owner(target))
    assert crossing == []


def test_nothing_imports_the_command_line():
    importers = sorted(source for source, targets in _graph().items() for target in targets
                       if _owner(target) == "hyte.cli" and _owner(source) != "hyte.cli")
    assert importers == []


def test_remote_code_imports_only_remote_code():
    remote = set(LAYERS[0])
    outside = sorted((source, target) for source, targets in _graph().items() if source in remote
                     for target in targets if target not in remote)
    assert outside == []


@pytest.mark.parametrize("bad", ["circle", "upward"])
def test_the_checks_catch_what_they_are_for(bad):
    """The graph walk sees real violations: a circle and an upward import injected into a copy of the graph."""
    graph = _graph()
    if bad == "circle":
        graph["hyte.io"] = graph["hyte.io"] | {"hyte.results"}  # results imports io
        assert _cycles(graph)
    else:
        graph["hyte.retrieval.index"] = graph["hyte.retrieval.index"] | {"hyte.cli.app"}
        assert any(_layer(t) > _layer(s) for s, ts in graph.items() for t in ts)


def _readme_layout() -> str:
    readme = (SOURCE.parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Layout"):]
    return section[section.index("```") + 3:section.index("```", section.index("```") + 3)]


def test_readme_layout_names_every_module_and_only_existing_ones():
    block = _readme_layout()
    named = set(re.findall(r"[\w]+\.py", block))
    packages = {path.parent.name for path in SOURCE.rglob("__init__.py") if path.parent != SOURCE}
    files = {path.name for path in SOURCE.rglob("*.py")
             if path.name not in ("__init__.py", "__main__.py") and "metric_module" not in path.parts}
    assert named - files - {"__init__.py"} == set(), "the README names files that do not exist"
    assert files - named == set(), "files missing from the README's layout section"
    assert {p for p in packages if p != "metric_module" and f"{p}/" not in block} == set()


# An incident label: a letter and a number standing for a log entry that is not in the repository (C104, T227, ...),
# or a user trial by number. The reason belongs in the comment itself.
INCIDENT_LABEL = re.compile(r"\((?:trial \d+|[CTPS]\d{1,3})\b|\b[CTPS]\d{1,3}(?:/[CTPS]\d{1,3})*: |\btrial \d+\b")


def test_no_incident_labels_in_the_package_its_tests_and_benchmarks():
    root = SOURCE.parents[1]
    paths = [*SOURCE.rglob("*.py"), *(root / "tests").glob("*.py"), *(root / "benchmarks").rglob("*.py")]
    found = [f"{path.relative_to(root)}:{number}: {line.strip()}"
             for path in sorted(paths) if path != Path(__file__).resolve()  # this file holds examples of labels
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if INCIDENT_LABEL.search(line)]
    assert not found, "say why in words, not by an incident label:\n" + "\n".join(found)


@pytest.mark.parametrize("line", ["# refused (C104)", "# C104: it was ignored", "# T136/T137: too late",
                                  "# as the command line refuses (trial 20, S3)"])
def test_the_incident_label_check_catches_labels(line):
    assert INCIDENT_LABEL.search(line)


def test_every_error_class_of_the_package_is_a_hyte_error():
    """One base a user can catch (README, "Errors you can catch"): a new error class outside it fails here."""
    import importlib

    from hyte.errors import HyteError

    found = []
    for path in sorted(SOURCE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.name.endswith("Error") and not node.name.startswith("_"):
                found.append((_module_name(path), node.name))
    assert len(found) >= 10
    outside = [f"{module}.{name}" for module, name in found
               if not issubclass(getattr(importlib.import_module(module), name), HyteError)]
    assert not outside, f"error classes outside hyte.HyteError: {outside}"
