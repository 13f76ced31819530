"""One exception root (cltui.errors): every error class of cltui derives from CltuiError,
cancels from Cancelled, and the CLI turns any that no command caught into one line and the
error's exit code."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest
from click.testing import CliRunner

from cltui.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, Cancelled, CltuiError

ROOT = Path(__file__).resolve().parent.parent


def _exception_classes() -> list[type[BaseException]]:
    found: list[type[BaseException]] = []
    for path in sorted((ROOT / "cltui").rglob("*.py")):
        if path.parent.name == "python" and "runners" in path.parts:  # the bundle runner
            continue
        parts = path.relative_to(ROOT).with_suffix("").parts
        module_name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        tree = ast.parse(path.read_text())
        names = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
        if not names:
            continue
        module = importlib.import_module(module_name)
        for name in names:
            obj = getattr(module, name)
            if isinstance(obj, type) and issubclass(obj, BaseException):
                found.append(obj)
    return found


def test_every_error_class_has_the_one_root() -> None:
    classes = _exception_classes()
    assert len(classes) >= 20
    outside = [f"{c.__module__}.{c.__qualname__}" for c in classes if not issubclass(c, CltuiError)]
    assert outside == []
    cancels = [c.__name__ for c in classes if "Cancel" in c.__name__ or c.__name__ == "_Abandoned"]
    assert cancels and all(issubclass(c, Cancelled) for c in classes if c.__name__ in cancels)


def test_errors_keep_the_builtin_types_callers_catch() -> None:
    from cltui.capture.confine import OutsideCapture
    from cltui.capture.ranges import RangeError
    from cltui.replay.plan import PlanError

    assert issubclass(OutsideCapture, OSError) and issubclass(RangeError, ValueError)
    assert issubclass(PlanError, ValueError)


@pytest.mark.parametrize(
    ("error", "code", "line"),
    [
        ("diverge", EXIT_BAD_INPUT, "cltui: no such thing\\x1b[31m here\n"),
        ("cancel", EXIT_INTERRUPTED, "cltui: interrupted\n"),
    ],
)
def test_cli_last_resort(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, error: str, code: int, line: str
) -> None:
    """An error no command catches: one line (control characters escaped), its exit code."""
    import cltui.capture
    from cltui.analysis.diverge import DivergeError
    from cltui.analysis.shrink import ShrinkCancelled
    from cltui.cli import main

    def boom(*_a: object, **_k: object) -> None:
        if error == "diverge":
            raise DivergeError("no such\nthing\x1b[31m here")
        raise ShrinkCancelled("stopped")

    monkeypatch.setattr(cltui.capture, "open_capture", boom)
    res = CliRunner().invoke(main, ["info", str(tmp_path)])
    assert res.exit_code == code, res.output
    assert res.stderr == line
    assert "Traceback" not in res.output
