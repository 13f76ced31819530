"""The capture model stays UI- and device-free; the CLI stays light for --help."""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path

import pytest

FORBIDDEN_IN_CAPTURE = ("textual", "pyopencl", "rich", "click", "cltui.tui", "cltui.replay")


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return set(out.split())


def _top(mods: set[str], names: tuple[str, ...]) -> set[str]:
    return {m for m in mods for n in names if m == n or m.startswith(n + ".")}


@pytest.mark.child
def test_capture_imports_no_ui_or_device_library() -> None:
    mods = _modules_after(
        "import cltui.capture, cltui.capture.capture, cltui.capture.model\n"
        "from cltui.capture import open_capture"
    )
    assert not _top(mods, FORBIDDEN_IN_CAPTURE)


@pytest.mark.child
@pytest.mark.parametrize("argv", [["--help"], ["ls", "--help"], ["info", "--help"]])
def test_cli_help_imports_neither_textual_nor_pyopencl(argv: list[str]) -> None:
    code = (
        "import sys\nfrom click.testing import CliRunner\nfrom cltui.cli import main\n"
        f"r = CliRunner().invoke(main, {argv!r})\nassert r.exit_code == 0, r.output\n"
    )
    mods = _modules_after(code)
    assert not _top(mods, ("textual", "pyopencl"))


@pytest.mark.child
def test_opening_a_capture_from_the_cli_does_not_import_textual(tmp_path: object) -> None:
    from tests.conftest import capture_path

    cap = capture_path("images_svm_pocl")
    code = (
        "from click.testing import CliRunner\nfrom cltui.cli import main\n"
        f"r = CliRunner().invoke(main, ['ls', {str(cap)!r}])\nassert r.exit_code == 0, r.output\n"
    )
    mods = _modules_after(code)
    assert not _top(mods, ("textual", "pyopencl"))


@functools.cache  # one parse of every module for the tests below (they only read it)
def _import_graph() -> dict[str, set[str]]:
    """cltui's modules and the cltui modules each imports, at top level or inside a function
    (an import of one of its own parent packages is no edge: Python imports those first; nor
    is an ``if TYPE_CHECKING:`` import, which only annotations read)."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    mods: dict[str, Path] = {}
    for path in (root / "cltui").rglob("*.py"):
        if path.parent.name == "python" and "runners" in path.parts:  # run in bundles
            continue
        parts = path.relative_to(root).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        mods[name] = path
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text())
        typing_only = {  # ``if TYPE_CHECKING:`` imports: annotations, never run
            id(n)
            for block in ast.walk(tree)
            if isinstance(block, ast.If) and ast.unparse(block.test).endswith("TYPE_CHECKING")
            for n in ast.walk(block)
        }
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    target = node.module or ""
                found = [target, *(f"{target}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                found = [a.name for a in node.names]
            else:
                continue
            for target in found:
                if target in mods and target != name and not name.startswith(target + "."):
                    graph[name].add(target)
    return graph


def test_no_import_circle() -> None:
    """No module of cltui imports, through any chain, a module that imports it back."""
    graph = _import_graph()
    assert "cltui.capture.model" in graph and graph["cltui.capture.capture"]
    done: set[str] = set()
    circles: list[list[str]] = []

    def visit(name: str, path: list[str]) -> None:
        if name in path:
            circles.append([*path[path.index(name) :], name])
            return
        if name in done:
            return
        for target in sorted(graph[name]):
            visit(target, [*path, name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])
    assert circles == []


def test_the_replay_engine_imports_only_what_a_bundle_carries() -> None:
    """``cltui/replay/engine/`` travels whole into bundles with the helpers of
    ``exporter.ENGINE_HELPERS`` (and their package markers): the engine and the bundle's
    ``replay.py`` import no other cltui module, and each helper is used."""
    import ast
    from pathlib import Path

    from cltui.export.exporter import ENGINE_HELPERS

    markers = {"cltui", "cltui.capture", "cltui.replay"}  # package markers in a bundle
    carried = markers | {
        "cltui." + rel.removesuffix(".py").replace("/", ".") for rel in ENGINE_HELPERS
    }
    graph = _import_graph()
    engine = {n for n in graph if n.startswith("cltui.replay.engine")}
    assert "cltui.replay.engine.core" in engine
    outside = {
        (name, target)
        for name in engine
        for target in graph[name]
        if target not in engine and target not in carried
    }
    assert outside == set()
    template = Path(__file__).resolve().parent.parent / "cltui/runners/python/replay.py"
    script = {
        n.module or ""
        for n in ast.walk(ast.parse(template.read_text()))
        if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("cltui")
    }
    assert "cltui.replay.engine.schema" in script
    assert {m for m in script if m not in engine} <= carried
    used = {t for name in engine for t in graph[name] if t in carried} | (script & carried)
    assert used | markers == carried  # no helper carried for nothing


FILE_LINES = 487  # the house's bound on a module (docs/architecture.md)


def test_every_module_is_within_the_line_bound() -> None:
    """A module that outgrows the bound is split by what it holds (the two that were over it
    moved Capture.find's filters to capture/query.py and show's text to show_text.py)."""
    root = Path(__file__).resolve().parent.parent / "cltui"
    over = {str(p.relative_to(root)): n for p in sorted(root.rglob("*.py"))
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > FILE_LINES}  # fmt: skip
    assert not over, over
