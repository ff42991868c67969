"""The import graph of the package: every layer imports only the layers below it.

core (errors, config, target) imports nothing of sirius; toolchain imports the core;
analysis imports the core; fusion imports analysis, core and toolchain. No module of
analysis or fusion imports commands, tuning, backend, testing or the pipeline, at the top
of the module or inside a function.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "sirius"

ALLOWED = {
    "core": {"core"},
    "toolchain": {"core", "toolchain"},
    "analysis": {"core", "analysis"},
    "fusion": {"core", "toolchain", "analysis", "fusion"},
}


def _layer(module: str) -> str | None:
    """The layer of ``sirius.X...`` (None for ``sirius`` itself)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "sirius" else ("sirius" if parts == ["sirius"] else None)


def _modules(layer: str) -> list[Path]:
    path = PACKAGE / layer
    return sorted(path.rglob("*.py")) if path.is_dir() else [path.with_suffix(".py")]


def _package(path: Path) -> str:
    return ".".join(("sirius", *path.relative_to(PACKAGE).with_suffix("").parts[:-1]))


def _imports(path: Path, package: str) -> list[tuple[int, str]]:
    """Every sirius module ``path`` (a module of ``package``) imports, relative imports resolved."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.append((node.lineno, module))
            # ``from sirius import fusion`` names a layer in the imported names
            if module == "sirius":
                found += [(node.lineno, f"sirius.{a.name}") for a in node.names]
    return [(line, m) for line, m in found if m == "sirius" or m.startswith("sirius.")]


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_layer_imports_only_the_layers_below(layer):
    modules = _modules(layer)
    assert modules, f"no modules found for layer {layer}"
    wrong = []
    for path in modules:
        for line, module in _imports(path, _package(path)):
            if module == "sirius" or _layer(module) not in ALLOWED[layer]:
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {module}")
    assert not wrong, "\n".join(wrong)


def test_the_check_sees_forbidden_imports(tmp_path):
    """The check can fail: a function-local import of the pipeline and a relative import of a
    backend, written into a copy of a fusion module, are both found."""
    probe = tmp_path / "probe.py"
    probe.write_text((PACKAGE / "fusion" / "policies.py").read_text()
                     + "\n\ndef _late():\n    from sirius.pipeline import run_pipeline\n"
                     + "    from ..backend import cpu\n")
    found = {m for _, m in _imports(probe, "sirius.fusion")}
    assert {"sirius.pipeline", "sirius.backend"} <= found
    assert all(_layer(m) in ALLOWED["fusion"] for m in found - {"sirius.pipeline", "sirius.backend"})
