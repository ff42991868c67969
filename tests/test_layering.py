"""The import graph of the package: every layer imports only the layers below it.

core (errors, config, target) imports nothing of sirius; toolchain imports the core;
analysis imports the core; fusion imports analysis, core and toolchain. No module of
analysis or fusion imports commands, tuning, backend, testing or the pipeline, at the top
of the module or inside a function. Within fusion, the IR and the printer import no pass.
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


# the fused-kernel IR and the printer sit below the passes: they may import the IR, the
# schedule's data types, the text edits of copied code and the path counters, never a stage
# that decides something (a plan's type named in an annotation only, under TYPE_CHECKING, is
# no dependence)
IR_AND_PRINTER = ("kernel_ir", "fragment_text", "included_text", "kernel_text", "host_text", "codegen")
BELOW_THE_PASSES = {f"sirius.fusion.{m}" for m in (*IR_AND_PRINTER, "schedule", "region_paths")}


def _run_time_imports(path: Path) -> list[tuple[int, str]]:
    """The fusion modules ``path`` imports outside ``if TYPE_CHECKING:`` blocks, ``from
    sirius.fusion import x`` as ``sirius.fusion.x``."""
    tree = ast.parse(path.read_text(), str(path))
    typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                   and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
                   for n in ast.walk(node)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and id(node) not in typing_only and node.module:
            if node.module == "sirius.fusion":
                found += [(node.lineno, f"sirius.fusion.{a.name}") for a in node.names]
            elif node.module.startswith("sirius.fusion."):
                found.append((node.lineno, node.module))
    return found


@pytest.mark.parametrize("module", IR_AND_PRINTER)
def test_ir_and_printer_import_no_pass(module):
    path = PACKAGE / "fusion" / f"{module}.py"
    passes = [f"{path.name}:{line} imports {m}" for line, m in _run_time_imports(path) if m not in BELOW_THE_PASSES]
    assert not passes, "\n".join(passes)


def test_the_printer_check_sees_a_pass(tmp_path):
    """It can fail: a printer module importing a pass at run time is found; the same import
    under TYPE_CHECKING is not."""
    probe = tmp_path / "probe.py"
    probe.write_text("from typing import TYPE_CHECKING\nfrom sirius.fusion import kernel_ir, promises\n"
                     "if TYPE_CHECKING:\n    from sirius.fusion.wavefront import Wavefront\n")
    assert [m for _, m in _run_time_imports(probe) if m not in BELOW_THE_PASSES] == ["sirius.fusion.promises"]
