"""How the C++ runner is built: the one recipe (CMake, a Release build) that every builder
runs: ``cltui latency``'s local build (:func:`cltui.latency.native.build_runner`), a fleet
host's remote build (:mod:`cltui.fleet.host`, as shell words), the bundle's README (what a
user types) and the tests' session build."""

from __future__ import annotations

import shlex

BUILD_TYPE = "Release"


def build_commands(src: str, build: str, jobs: str | None = None) -> list[list[str]]:
    """The configure and build commands (argv lists) for the sources in ``src`` into the
    folder ``build``, with ``jobs`` parallel jobs (the tool's default when None)."""
    configure = ["cmake", "-S", src, "-B", build, f"-DCMAKE_BUILD_TYPE={BUILD_TYPE}"]
    make = ["cmake", "--build", build] + (["-j", jobs] if jobs else [])
    return [configure, make]


def build_shell(src: str, build: str, jobs: str | None = None, *, quote: bool = True) -> str:
    """The same commands as one ``&&`` shell line; ``quote=False`` when ``src``, ``build`` and
    ``jobs`` are already shell words (``"$S/build"``: a remote script's variables)."""
    words = shlex.quote if quote else str
    return " && ".join(" ".join(words(w) for w in cmd) for cmd in build_commands(src, build, jobs))
