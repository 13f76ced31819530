"""The edge cases both runners are held to: the Python engine (compare.py, the layer's hash,
device-name matching, a build log's rule, how an include folder is named to the driver, the
text a bundle's program is built with) and replay.cpp (its --compare-cases, --hash-cases,
--name-cases, --build-log-cases, --include-path-cases and --build-option-cases test options)
run over the same files in tests/fixtures and must give
what each case expects, and the same as each other.  (The device rule's cases:
test_device_default.py.)

The plan mode (chain / isolated / strict) has no cases here: it is decided in Python when the
plan is built (cltui/replay/modes.py); replay.cpp only runs the plan it is given."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cltui.capture.hashing import cli_hash64
from cltui.replay.engine.buildlog import at_source, build_errors, first_build_error, log_lines
from cltui.replay.engine.builds import _pick_binary
from cltui.replay.engine.choice import name_likeness, name_tokens
from cltui.replay.engine.compare import Tolerance, _fmt, compare_bytes
from tests.test_export_device import cpp_replay  # a session fixture: the C++ replay, built once

__all__ = ["cpp_replay"]

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _cases(name: str) -> tuple[Path, list[dict[str, Any]]]:
    path = FIXTURES / name
    cases: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    return path, cases


COMPARE_FILE, COMPARE = _cases("compare_cases.json")
HASH_FILE, HASHES = _cases("hash_cases.json")
NAME_FILE, NAMES = _cases("name_cases.json")
BUILD_LOG_FILE, BUILD_LOGS = _cases("build_log_cases.json")
INCLUDE_FILE, INCLUDES = _cases("include_path_cases.json")
BUILD_OPTION_FILE, BUILD_OPTIONS = _cases("build_option_cases.json")


def _ids(cases: list[dict[str, Any]]) -> list[str]:
    return [c["case"] for c in cases]


# Cases a runner gets wrong today: strict, so that the fix fails here and the case moves back
# to the common rule (none now: the float64 ULP count and nested struct fields were mended in
# both runners).
PY_BUGS: dict[str, str] = {}
CPP_BUGS: dict[str, str] = {}


def _marked(cases: list[dict[str, Any]], bugs: dict[str, str]) -> list[Any]:
    return [
        pytest.param(
            c,
            id=c["case"],
            marks=[pytest.mark.xfail(strict=True, reason=bugs[c["case"]])]
            if c["case"] in bugs
            else [],
        )
        for c in cases
    ]


def _run_cpp(exe: Path, option: str, path: Path) -> list[dict[str, Any]]:
    proc = subprocess.run(
        [str(exe), option, str(path)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    out: list[dict[str, Any]] = json.loads(proc.stdout)
    return out


@pytest.fixture(scope="module")
def cpp_results(cpp_replay: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """replay.cpp's result for every case of every file, by option and case (one run each)."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for option, path, cases in (
        ("--compare-cases", COMPARE_FILE, COMPARE),
        ("--hash-cases", HASH_FILE, HASHES),
        ("--name-cases", NAME_FILE, NAMES),
        ("--build-log-cases", BUILD_LOG_FILE, BUILD_LOGS),
        ("--include-path-cases", INCLUDE_FILE, INCLUDES),
        ("--build-option-cases", BUILD_OPTION_FILE, BUILD_OPTIONS),
    ):
        got = _run_cpp(cpp_replay, option, path)
        assert len(got) == len(cases), option
        out[option] = {c["case"]: r for c, r in zip(cases, got, strict=True)}
    return out


def _expect(case: dict[str, Any], got: dict[str, Any]) -> None:
    """Every key the case states, as stated ("first" with only "where": that key only)."""
    for key, want in case["expect"].items():
        have = got[key]
        if key == "first" and want is not None and have is not None:
            have = {k: have[k] for k in want}
        assert have == want, (case["case"], key, got)


# --------------------------------------------------------------------------- compare


def _text(value: Any) -> str:
    """A value of the first difference in replay.cpp's words: compare.py's summary words."""
    return _fmt("nan" if isinstance(value, float) and math.isnan(value) else value)


def _py_compare(case: dict[str, Any]) -> dict[str, Any]:
    """compare_bytes over one case, in the keys replay.cpp prints."""
    res = compare_bytes(
        bytes.fromhex(case["expected"]),
        bytes.fromhex(case["actual"]),
        case["dtype"],
        Tolerance.from_dict(case.get("tol")),
        case.get("shape"),
    )
    d = res.to_dict()
    first = res.first
    return {
        "status": res.status,
        "dtype": res.dtype,
        "elements": res.elements,
        "expected_size": res.expected_size,
        "actual_size": res.actual_size,
        "n_diff": res.n_diff,
        "n_bad": res.n_bad,
        "max_abs": d["max_abs"],
        "max_ulp": d["max_ulp"],
        "first_index": None if first is None else first.index,
        "first": None
        if first is None
        else {
            "where": first.where(),
            "expected": _text(first.expected),
            "actual": _text(first.actual),
        },
        "note": res.note,
        "summary": res.summary(),
    }


@pytest.mark.parametrize("case", _marked(COMPARE, PY_BUGS))
def test_the_engine_compares_the_shared_cases(case: dict[str, Any]) -> None:
    _expect(case, _py_compare(case))


@pytest.mark.parametrize("case", _marked(COMPARE, CPP_BUGS))
def test_replay_cpp_compares_the_same_cases_alike(
    case: dict[str, Any], cpp_results: dict[str, dict[str, dict[str, Any]]]
) -> None:
    """Every case as expected, and every key of replay.cpp's result and its summary line as
    the engine has them (where the engine is right)."""
    out = cpp_results["--compare-cases"][case["case"]]
    if case["case"] not in PY_BUGS or case["case"] in CPP_BUGS:  # a bug of both: still alike
        assert out == _py_compare(case), case["case"]
    _expect(case, out)


def test_the_compare_cases_cover_the_edges() -> None:
    statuses = {c["expect"]["status"] for c in COMPARE}
    assert statuses == {"equal", "within", "different"}
    dtypes = {json.dumps(c["dtype"]) for c in COMPARE}
    for spec in ('"<f2"', '"<f4"', '"<f8"', '"<i4"', '"<u8"', '"|b1"', '"(4,)<f4"', "null"):
        assert spec in dtypes, spec
    assert any(c["expected"] == "" for c in COMPARE)  # zero length
    assert any("shape" in c for c in COMPARE)


# --------------------------------------------------------------------------- the hash


def _hash_input(case: dict[str, Any]) -> bytes:
    if "hex" in case:
        return bytes.fromhex(case["hex"])
    if "text" in case:
        return str(case["text"]).encode()
    pattern = bytes.fromhex(case["pattern"])
    n = int(case["length"])
    return (pattern * (n // len(pattern) + 1))[:n]


@pytest.mark.parametrize("case", HASHES, ids=_ids(HASHES))
def test_the_layer_hash_of_the_shared_cases(case: dict[str, Any]) -> None:
    h = cli_hash64(_hash_input(case))
    _expect(case, {"hash64": f"{h:x}", "name": f"{h & 0xFFFFFFFF:08X}"})


@pytest.mark.parametrize("case", HASHES, ids=_ids(HASHES))
def test_replay_cpp_hashes_the_same_cases_alike(
    case: dict[str, Any], cpp_results: dict[str, dict[str, dict[str, Any]]]
) -> None:
    _expect(case, cpp_results["--hash-cases"][case["case"]])


def test_the_hash_cases_cover_every_tail_and_the_layer() -> None:
    lengths = {len(_hash_input(c)) for c in HASHES}
    assert {0, 1, 2, 3, 4, 5, 1 << 20, (1 << 20) + 1} <= lengths
    assert sum("the layer's" in c["case"] for c in HASHES) >= 3  # names the layer wrote


# --------------------------------------------------------------------------- device names


def _py_name(case: dict[str, Any]) -> dict[str, Any]:
    if "binaries" in case:
        binaries = [{"data": str(i), "device": d} for i, d in enumerate(case["binaries"])]
        chosen, how = _pick_binary(binaries, case["device"])
        return {"index": None if chosen is None else int(chosen["data"]), "how": how}
    a, b = case["a"], case["b"]
    return {"tokens_a": name_tokens(a), "tokens_b": name_tokens(b), "likeness": name_likeness(a, b)}


@pytest.mark.parametrize("case", NAMES, ids=_ids(NAMES))
def test_the_engine_matches_the_shared_device_names(case: dict[str, Any]) -> None:
    _expect(case, _py_name(case))


@pytest.mark.parametrize("case", NAMES, ids=_ids(NAMES))
def test_replay_cpp_matches_the_same_device_names(
    case: dict[str, Any], cpp_results: dict[str, dict[str, dict[str, Any]]]
) -> None:
    _expect(case, cpp_results["--name-cases"][case["case"]])


# --------------------------------------------------------------------------- build logs


def _py_build_log(case: dict[str, Any]) -> dict[str, Any]:
    log, name = case["log"], case["name"]
    return {"lines": [at_source(ln, name) for ln in log_lines(log)],
            "errors": build_errors(log), "first_error": first_build_error(log)}  # fmt: skip


@pytest.mark.parametrize("case", BUILD_LOGS, ids=_ids(BUILD_LOGS))
def test_the_engine_reads_the_shared_build_logs(case: dict[str, Any]) -> None:
    _expect(case, _py_build_log(case))


@pytest.mark.parametrize("case", BUILD_LOGS, ids=_ids(BUILD_LOGS))
def test_replay_cpp_reads_the_same_build_logs_alike(
    case: dict[str, Any], cpp_results: dict[str, dict[str, dict[str, Any]]]
) -> None:
    _expect(case, cpp_results["--build-log-cases"][case["case"]])


LONG = 300_000  # replay.cpp's std::regex overflowed its stack from about 64 KB on


@pytest.mark.child
@pytest.mark.cmake
def test_a_long_build_log_line_costs_one_pass_in_both_runners(
    cpp_replay: Path, tmp_path: Path
) -> None:
    """A kernel whose failing line is long (a generated table, a minified source) gives a
    build log line as long: both runners rewrite its position, and neither crashes."""
    log = "a" * LONG + " input.cl:1:2: error: x\n" + "b/" * LONG + "\n"
    case = {"case": "long", "log": log, "name": "k.cl"}
    path = tmp_path / "long_cases.json"
    path.write_text(json.dumps([case]), encoding="utf-8")
    (got,) = _run_cpp(cpp_replay, "--build-log-cases", path)
    want = _py_build_log(case)
    assert want["lines"][0] == "a" * LONG + " k.cl:1:2: error: x"
    assert got == want


def test_the_build_log_cases_cover_both_drivers_and_the_cut() -> None:
    logs = " ".join(c["log"] for c in BUILD_LOGS)
    assert "tempfile_" in logs and "input.cl" in logs and "<stdin>" in logs
    assert any(len(c["expect"]["first_error"].encode()) == 200 for c in BUILD_LOGS)
    assert any(c["expect"]["lines"] == [c["log"].rstrip("\n")] for c in BUILD_LOGS)  # unchanged


# --------------------------------------------------------------------------- include folders


def _py_include(case: dict[str, Any]) -> dict[str, Any]:
    from cltui.replay.engine.base import include_spelling
    from cltui.text.shellwords import include_option

    spelled = include_spelling(case["path"], case["cwd"])
    return {"spelled": spelled, "option": include_option(spelled)}


@pytest.mark.parametrize("case", INCLUDES, ids=_ids(INCLUDES))
def test_the_engine_names_the_shared_include_folders(case: dict[str, Any]) -> None:
    _expect(case, _py_include(case))


@pytest.mark.parametrize("case", INCLUDES, ids=_ids(INCLUDES))
def test_replay_cpp_names_the_same_include_folders_alike(
    case: dict[str, Any], cpp_results: dict[str, dict[str, dict[str, Any]]]
) -> None:
    _expect(case, cpp_results["--include-path-cases"][case["case"]])


# --------------------------------------------------------------------------- build options


@pytest.mark.parametrize("case", BUILD_OPTIONS, ids=_ids(BUILD_OPTIONS))
def test_the_engine_gives_the_driver_the_shared_build_options(case: dict[str, Any]) -> None:
    """What a bundle's program is built with: its include folders, then its options as they
    are (the Python runner re-spelled them as shell words before: quotes, spacing)."""
    import os

    from cltui.replay.engine.base import add_bundle_includes
    from cltui.replay.engine.builds import _build_options

    plan: Any = {"programs": {"p": {"options": case["options"],
                                    "include_dirs": case["include_dirs"]}}}  # fmt: skip
    assert os.path.isabs(case["bundle"])
    add_bundle_includes(plan, Path(case["bundle"]), case["cwd"])
    # then the engine's own pass (captured folders mapped): none of these folders is here
    _expect(case, {"driver": _build_options(plan["programs"]["p"]["options"])[0]})


@pytest.mark.parametrize("case", BUILD_OPTIONS, ids=_ids(BUILD_OPTIONS))
def test_replay_cpp_gives_the_driver_the_same_build_options(
    case: dict[str, Any], cpp_results: dict[str, dict[str, dict[str, Any]]]
) -> None:
    _expect(case, cpp_results["--build-option-cases"][case["case"]])
