"""A bundle verifies itself before anything runs, in both runners: the cases of
tests/fixtures/bundle_cases.json (hostile paths, damaged or missing data files, bad types,
negative sizes, a bad SHA256SUMS) are each made by editing a copy of a real exported bundle,
then run through ``python replay.py`` (under an audit hook that records every file Python
opens) and the C++ replay (under strace where it is installed): both exit 2 with the case's
one line, and neither opens a file outside the bundle.  The intact bundle still passes.
``cltui fleet`` and ``cltui feasible`` refuse such a bundle here, before any host or device.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cltui.capture import open_capture
from cltui.export import export_range
from cltui.replay.engine.schemacheck import SchemaError, first_problem, manifest_schema
from tests.test_export_device import cpp_replay  # a session fixture: the C++ replay, built once

__all__ = ["cpp_replay"]

pytestmark = pytest.mark.device

PY = sys.executable
CASES: list[dict[str, Any]] = json.loads(
    (Path(__file__).resolve().parent / "fixtures" / "bundle_cases.json").read_text("utf-8")
)

# Runs replay.py with an audit hook that records every path Python opens (argv: log, script, args)
AUDIT = """\
import os, runpy, sys
log, opened = sys.argv[1], []
def hook(event, args):
    if event == "open" and args and isinstance(args[0], (str, bytes, os.PathLike)):
        opened.append(os.fsdecode(args[0]))
sys.addaudithook(hook)
sys.argv = sys.argv[2:]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
finally:
    with open(log, "w") as f:
        f.write("\\n".join(opened[:-1] if opened and opened[-1] == log else opened))
"""


@pytest.fixture(scope="module")
def intact(images_svm: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("verify") / "bundle"
    export_range(open_capture(images_svm), "0-8", out)
    return out


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _facts(bundle: Path) -> dict[str, str]:
    """What a case's words name: the data file step 0 loads first, a memory object, a program."""
    m = json.loads((bundle / "manifest.json").read_text("utf-8"))
    key = m["steps"][0]["loads"][0]["data"]
    ref = m["data"][key]
    sums = (bundle / "SHA256SUMS").read_text("utf-8").splitlines()
    return {"{key}": key, "{path}": ref["path"], "{size}": str(ref["size"]),
            "{size+1}": str(ref["size"] + 1), "{mem}": next(iter(m["memory"])),
            "{prog}": next(iter(m["programs"])), "{sums_lines+1}": str(len(sums) + 1)}  # fmt: skip


def _fill(value: Any, facts: dict[str, str]) -> Any:
    if isinstance(value, str):
        for k, v in facts.items():
            value = value.replace(k, v)
    return value


def make_case(intact: Path, tmp: Path, case: dict[str, Any]) -> tuple[Path, str]:
    """A copy of ``intact`` damaged as ``case`` says, beside an ``outside/secret`` file; and
    the line both runners must print."""
    bundle = tmp / "bundle"
    shutil.copytree(intact, bundle)
    (tmp / "outside").mkdir()
    (tmp / "outside" / "secret").write_bytes(b"not the bundle's\n")
    facts = _facts(bundle)
    mpath = bundle / "manifest.json"
    m = json.loads(mpath.read_text("utf-8"))
    if "set" in case or "delete" in case:
        *at, last = [_fill(p, facts) for p in case.get("set", case.get("delete"))]
        node = m
        for p in at:
            node = node[p]
        if "set" in case:
            node[last] = case["value"]
        else:
            del node[last]
        mpath.write_text(json.dumps(m, indent=1), encoding="utf-8")
    if "text" in case:
        mpath.write_text(case["text"], encoding="utf-8")
    target = bundle / facts["{path}"]
    todo = case.get("file")
    if todo == "flip":
        raw = bytearray(target.read_bytes())
        raw[0] ^= 0xFF
        target.write_bytes(bytes(raw))
    elif todo == "append":
        target.write_bytes(target.read_bytes() + b"\0")
    elif todo in ("remove", "link_out", "link_in", "fifo"):
        target.unlink()
        if todo == "link_out":
            target.symlink_to(tmp / "outside" / "secret")
        elif todo == "link_in":
            target.symlink_to(bundle / "manifest.json")
        elif todo == "fifo":
            os.mkfifo(target)
    elif todo == "folder_link_out":
        shutil.move(bundle / "data", tmp / "outside" / "data")
        (bundle / "data").symlink_to(tmp / "outside" / "data")
    sums = bundle / "SHA256SUMS"
    lines = sums.read_text("utf-8").splitlines()
    todo = case.get("sums")
    if todo == "remove":
        sums.unlink()
    elif todo == "drop":
        lines = [ln for ln in lines if not ln.endswith("  " + facts["{path}"])]
    elif todo == "wrong":
        lines = [("0" * 64 + "  " + facts["{path}"]) if ln.endswith("  " + facts["{path}"])
                 else ln for ln in lines]  # fmt: skip
    elif todo == "garble":
        lines.append("garbage")
    if todo in ("drop", "wrong", "garble"):
        sums.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return bundle, "replay: " + _fill(case["error"], facts)


def _outside(opened: list[str], cwd: Path, allowed: list[str]) -> list[str]:
    """The opened paths (links resolved, as they stand now) under none of ``allowed``."""
    roots = [os.path.realpath(a) for a in allowed]
    out = []
    for p in opened:
        real = os.path.realpath(os.path.join(cwd, p))
        if not any(real == r or real.startswith(r.rstrip("/") + "/") for r in roots):
            out.append(real)
    return out


def run_py(bundle: Path, log: Path) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    wrapper = log.parent / "audit_replay.py"
    wrapper.write_text(AUDIT, encoding="utf-8")
    proc = subprocess.run(
        [PY, str(wrapper), str(log), str(bundle / "replay.py"), "--validate"],
        cwd=bundle, capture_output=True, text=True, env=_env(), timeout=300,
    )  # fmt: skip
    opened = log.read_text("utf-8").splitlines()
    allowed = [str(bundle), sys.prefix, sys.base_prefix, sys.exec_prefix, "/usr", "/proc", "/dev"]
    return proc, _outside(opened, bundle, allowed)


def run_cpp(
    exe: Path, bundle: Path, log: Path
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    strace = shutil.which("strace")
    cmd = [str(exe), "--bundle", str(bundle), "--validate"]
    if strace:
        cmd = [strace, "-f", "-qq", "-e", "trace=open,openat,openat2", "-o", str(log), *cmd]
    proc = subprocess.run(cmd, cwd=bundle, capture_output=True, text=True, timeout=300)
    opened = []
    if strace:
        for line in log.read_text("utf-8", "replace").splitlines():
            if '"' in line:
                opened.append(line.split('"')[1])
    allowed = [str(bundle), str(exe.parent), "/usr", "/lib", "/lib64", "/etc/ld.so.cache",
               "/proc", "/sys", "/dev"]  # fmt: skip
    return proc, _outside(opened, bundle, allowed)


@pytest.mark.child
def test_the_intact_bundle_passes_in_both_runners_and_opens_its_data(
    intact: Path, cpp_replay: Path, tmp_path: Path
) -> None:
    """The other cases' hooks see what is opened: here they see the bundle's data files."""
    proc, outside = run_py(intact, tmp_path / "py.log")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "PASS" in proc.stdout and outside == []
    opened = (tmp_path / "py.log").read_text("utf-8")
    assert str(intact / "data") in opened
    proc, outside = run_cpp(cpp_replay, intact, tmp_path / "cpp.log")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    if shutil.which("strace"):
        assert str(intact / "data") in (tmp_path / "cpp.log").read_text("utf-8", "replace")


@pytest.mark.child
@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_a_hostile_or_damaged_bundle_is_refused_by_both_runners_in_one_line(
    case: dict[str, Any], intact: Path, cpp_replay: Path, tmp_path: Path
) -> None:
    bundle, line = make_case(intact, tmp_path, case)
    for name, (proc, outside) in (
        ("replay.py", run_py(bundle, tmp_path / "py.log")),
        ("replay.cpp", run_cpp(cpp_replay, bundle, tmp_path / "cpp.log")),
    ):
        said = proc.stderr.splitlines()
        assert (proc.returncode, said) == (2, [line]), f"{name}: {proc.stderr[-2000:]}"
        assert proc.stdout == "", name
        assert outside == [], f"{name} opened files outside the bundle"


@pytest.mark.parametrize("case", [c for c in CASES if "schema" in c], ids=lambda c: c["case"])
def test_jsonschema_agrees_with_the_runners_validator(
    case: dict[str, Any], intact: Path, tmp_path: Path
) -> None:
    """jsonschema (not in a bundle) refuses what the runners' own validator refuses."""
    import jsonschema

    schema = manifest_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(json.loads((intact / "manifest.json").read_text("utf-8")), schema)
    bundle, _line = make_case(intact, tmp_path, case)
    doc = json.loads((bundle / "manifest.json").read_text("utf-8"))
    assert first_problem(doc, schema) is not None
    if case["schema"]:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(doc, schema)


def test_a_schema_keyword_the_validators_do_not_know_is_refused() -> None:
    with pytest.raises(SchemaError, match="pattern"):
        first_problem("x", {"type": "string", "pattern": "^y$"})


@pytest.mark.child
def test_fleet_and_feasible_refuse_a_hostile_bundle_here(intact: Path, tmp_path: Path) -> None:
    """No host is contacted (the inventory's one host does not answer) and no device used."""
    case = next(c for c in CASES if c["case"] == "a data path up and out")
    bundle, line = make_case(intact, tmp_path, case)
    hosts = tmp_path / "hosts"
    hosts.write_text("box ansible_host=127.0.0.1 ansible_port=1\n", encoding="utf-8")
    for args in (["fleet", str(bundle), "--hosts", str(hosts)], ["feasible", str(bundle)]):
        proc = subprocess.run([PY, "-m", "cltui", *args], capture_output=True, text=True,
                              timeout=300)  # fmt: skip
        said = proc.stderr.splitlines()
        assert proc.returncode == 2, proc.stderr[-2000:]
        assert said == [f"cltui: {bundle}: {line.removeprefix('replay: ')}"], args[0]
