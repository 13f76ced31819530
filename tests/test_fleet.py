"""``cltui fleet`` end to end against real sshd daemons on localhost (tests/sshd_hosts.py):
a host with PoCL only, one with Oclgrind only, one with both, one down, one that refuses the
key, one whose python lacks pyopencl, and one reached through a plain local shell template;
the Python and the C++ runner; the content-addressed cache; a device that cannot run an
enqueue, a runner that crashes, one that hangs."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cltui.commands.fleet_text import print_fleet
from tests.fleet_setup import (
    PY,
    export_bundle,
    fleet,
    fleet_env,
    icd_folder,
    own_cache,  # noqa: F401  (autouse: the module's fleet cache)
    own_sleep,
)
from tests.schemas import validate
from tests.sshd_hosts import HostSpec, SshHosts

pytestmark = [pytest.mark.device, pytest.mark.slow, pytest.mark.child]

def _wrapper(root: Path, name: str, body: str) -> Path:
    """A python interpreter for ansible_python_interpreter that misbehaves as told."""
    p = root / name
    p.write_text(f"#!/bin/sh\n{body}\nexec {PY} \"$@\"\n")
    p.chmod(0o755)
    return p


def _line(name: str, port: int, work: Path, **more: str) -> str:
    extra = " ".join(f"{k}={json.dumps(v)}" for k, v in more.items())
    return f"{name} ansible_host=127.0.0.1 ansible_port={port} cltui_workdir={work / name} {extra}"


@pytest.fixture(scope="module")
def farm(ssh_hosts: Callable[[list[HostSpec]], SshHosts], tmp_path_factory: pytest.TempPathFactory
         ) -> tuple[SshHosts, Path]:
    root = tmp_path_factory.mktemp("farm")
    pocl = icd_folder(root, "pocl")
    icd_folder(root, "oclgrind")
    hosts = ssh_hosts([
        HostSpec("pocl", env={"OCL_ICD_VENDORS": str(pocl)}),
        HostSpec("ocl"), HostSpec("both"), HostSpec("refused", refuse_key=True),
        HostSpec("down", down=True),
    ])  # fmt: skip
    return hosts, root


def _inventory(farm: tuple[SshHosts, Path], lines: list[str], name: str) -> Path:
    hosts, root = farm
    inv = root / name
    inv.write_text("[lab]\n" + "\n".join(lines) + "\n\n[lab:vars]\n"
                   f"ansible_ssh_common_args=\"-F {hosts.config}\"\n"
                   f"ansible_python_interpreter={PY}\n")
    return inv


def test_the_python_runner_on_six_hosts_gives_one_matrix(
    farm: tuple[SshHosts, Path], images_svm: Path
) -> None:
    hosts, root = farm
    work = root / "work1"
    nopy = _wrapper(root, "python-without-site", f"exec {PY} -S \"$@\"")
    inv = _inventory(farm, [
        _line("pocl", hosts["pocl"].port, work),
        _line("ocl", hosts["ocl"].port, work, cltui_env=f"OCL_ICD_VENDORS={root / 'icd_oclgrind'}"),
        _line("both", hosts["both"].port, work),
        _line("refused", hosts["refused"].port, work),
        _line("down", hosts["down"].port, work),
        _line("nopy", hosts["both"].port, work, ansible_python_interpreter=str(nopy)),
        f"local cltui_transport='env FLEET_HOST={{host}} sh -c {{cmd}}' "
        f"cltui_workdir={work / 'local'} cltui_env='OCL_ICD_VENDORS={root / 'icd_pocl'} "
        f"TMPDIR={work}'",  # a machine of its own: its device locks not in the shared /tmp
    ], "six.ini")  # fmt: skip
    junit = root / "fleet.xml"
    proc = fleet(str(images_svm), "0-8", "--hosts", str(inv), "--json", "--junit", str(junit),
                 codes=(1,))
    rep = json.loads(proc.stdout)
    validate(rep, "cli.schema.json", "fleet")
    status = {h["name"]: h for h in rep["hosts"]}
    assert {n: h["status"] for n, h in status.items()} == {
        "pocl": "ok", "ocl": "ok", "both": "ok", "refused": "authentication",
        "down": "unreachable", "nopy": "missing-dependency", "local": "ok",
    }  # fmt: skip
    assert "Permission denied" in status["refused"]["reason"]
    assert "Connection refused" in status["down"]["reason"]
    assert status["nopy"]["reason"] == f"numpy, pyopencl (python runner: {nopy})"
    cols = {c["id"]: c for c in rep["columns"]}
    names = {cid: c["device"]["name"] for cid, c in cols.items()}
    assert sorted(cols) == ["both:0:0", "both:1:0", "local:0:0", "ocl:0:0", "pocl:0:0"]
    grind = [cid for cid, n in names.items() if "Oclgrind" in n]
    assert sorted(grind) == ["both:0:0", "ocl:0:0"]
    # Oclgrind rounds sample_linear's interpolation 2 ULP away from PoCL: a real divergence
    for cid, col in cols.items():
        assert col["first_divergent"] == (2 if cid in grind else None)
        assert col["verdict"]["status"] == ("fail" if cid in grind else "pass")
        assert col["device"]["driver"]
    (row,) = [r for r in rep["rows"] if r["enqueue"] == 2 and r["label"].startswith("arg 2")]
    for cell in row["cells"]:
        want = "different" if cell["column"] in grind else "equal"
        assert cell["status"] == want
        if want == "different":
            assert cell["max_ulp"] == 2.0
    assert all(len(r["cells"]) == 5 for r in rep["rows"])
    ref = rep["columns"][0]["id"]
    diffs = {(x["b"], x["enqueue"]) for x in rep["cross"] if x["status"] == "different"}
    assert diffs == ({(c, 2) for c in grind if c != ref} if ref not in grind
                     else {(c, 2) for c in cols if c not in grind})
    v = rep["verdict"]
    assert v["status"] == "fail" and v["line"].startswith("FAIL: 5 devices on 4 of 7 hosts")
    assert v["hosts"] == {"total": 7, "ran": 4, "failed": 3}
    assert v["by_status"] == {"fail": 2, "error": 0, "incomplete": 0, "pass": 3}
    _check_junit(junit, rep, grind)


def _check_junit(path: Path, rep: dict[str, Any], grind: list[str]) -> None:
    root = ET.parse(path).getroot()
    enqueues = sorted({r["enqueue"] for r in rep["rows"]})
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {c["id"] for c in rep["columns"]} | {"refused", "down", "nopy"}
    # each column an enqueue per test case; a host that did not run one "host" test case
    assert int(root.get("tests", -1)) == len(enqueues) * 5 + 3 == 7 * 5 + 3
    assert int(root.get("failures", -1)) == len(grind)  # enqueue 2 on each Oclgrind
    assert int(root.get("errors", -1)) == 3  # one per failed host, not one per enqueue
    assert int(root.get("skipped", -1)) == 0
    for cid in grind:
        (case,) = [c for c in suites[cid].findall("testcase") if c.find("failure") is not None]
        assert case.get("name") == "enqueue 2 sample_linear"
        assert "2 ULP" in (case.find("failure").get("message") or "")  # type: ignore[union-attr]
    for host, fault in (("down", "unreachable"), ("refused", "authentication"),
                        ("nopy", "missing-dependency")):
        (case,) = suites[host].findall("testcase")
        err = case.find("error")
        assert case.get("name") == "host" and err is not None
        assert err.get("type") == fault and err.get("message", "").startswith(f"{fault}:")
    fails = [f for s in suites.values() for f in s.iter("failure")]
    assert {f.get("type") for f in fails} == {"different"}


def test_the_cache_sends_only_what_the_host_lacks(
    farm: tuple[SshHosts, Path], images_svm: Path
) -> None:
    hosts, root = farm
    inv = _inventory(farm, [_line("pocl", hosts["pocl"].port, root / "work2")], "one.ini")

    def run(*args: str) -> dict[str, Any]:
        rep: dict[str, Any] = json.loads(fleet(*args, "--hosts", str(inv), "--json",
                                               codes=(0,)).stdout)
        assert rep["verdict"]["status"] == "pass"
        return rep

    first = run(str(images_svm), "0-3")
    again = run(str(images_svm), "0-3")  # the same range: the same (locally cached) export
    bundle = root / "bundle-0-8"
    export_bundle(images_svm, "0-8", bundle)
    wider = run(str(bundle))  # overlapping: the code and the data of 0-3 are there
    same = run(str(bundle))
    s1, s2, s3, s4 = (r["hosts"][0]["sent"] for r in (first, again, wider, same))
    total = wider["bundle"]["files"]
    assert s1["files"] == first["bundle"]["files"] and not s1["cached"]
    assert again["bundle"]["id"] == first["bundle"]["id"]
    assert s2 == s4 == {"cached": True, "files": 0, "bytes": 0}
    assert 0 < s3["files"] < total - 20
    for r in (again, same):
        assert r["hosts"][0]["bytes_sent"] < first["hosts"][0]["bytes_sent"] / 50
    assert same["bundle"]["range"] is None and again["bundle"]["range"] == "0-3"


def test_the_cpp_runner_builds_on_the_host_and_replays_the_filtered_device(
    farm: tuple[SshHosts, Path], images_svm: Path
) -> None:
    hosts, root = farm
    if shutil.which("cmake") is None or shutil.which("c++") is None:
        pytest.skip("cmake or a C++ compiler is not installed")
    inv = _inventory(farm, [_line("both", hosts["both"].port, root / "work3",
                                  cltui_runner="cpp")], "cpp.ini")
    rep = json.loads(fleet(str(images_svm), "0-8", "--hosts", str(inv), "-d", "pocl", "--json",
                           codes=(0,)).stdout)
    validate(rep, "cli.schema.json", "fleet")
    (col,) = rep["columns"]
    # the C++ runner's list gives the driver version (CL_DRIVER_VERSION), as replay.py's does
    from cltui.replay.engine import list_devices

    pocl = next(d for d in list_devices() if "Portable" in d["platform"])
    assert col["runner"] == "cpp" and col["device"]["driver"] == pocl["driver"] != pocl["version"]
    assert rep["devices"][0]["runner"] == "replay.cpp"
    assert rep["devices"][0]["device"]["driver"] == pocl["driver"]
    assert {c["status"] for r in rep["rows"] for c in r["cells"]} == {"equal"}
    assert rep["verdict"]["status"] == "pass"


def _widen_local_size(src: Path, dest: Path) -> Path:
    """A copy of a bundle whose enqueue 2 asks for a 40x30 work-group: PoCL (4096) runs it,
    Oclgrind (1024 at most) refuses it with CL_INVALID_WORK_GROUP_SIZE."""
    shutil.copytree(src, dest)
    plan = json.loads((dest / "manifest.json").read_text())
    for st in plan["steps"]:
        if st["enqueue"] == 2:
            st["local"] = [40, 30]
    data = (json.dumps(plan, indent=1) + "\n").encode()
    (dest / "manifest.json").write_bytes(data)
    sums = dest / "SHA256SUMS"
    digest = hashlib.sha256(data).hexdigest()
    sums.write_text("".join(f"{digest}  manifest.json\n" if ln.endswith("  manifest.json")
                            else ln + "\n" for ln in sums.read_text().splitlines()))
    return dest


def test_cannot_run_crash_and_hang_are_cells_with_their_reasons(
    farm: tuple[SshHosts, Path], images_svm: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hosts, root = farm
    work = root / "work4"
    base = root / "bundle-wide-src"
    export_bundle(images_svm, "0-8", base)
    bundle = _widen_local_size(base, root / "bundle-wide")
    crash = _wrapper(root, "python-crash", '[ "$1" = replay.py ] && kill -SEGV $$')
    sleep, find_sleep = own_sleep(617)
    hang = _wrapper(root, "python-hang", f'[ "$1" = replay.py ] && exec {sleep}')
    ocl = f"OCL_ICD_VENDORS={root / 'icd_oclgrind'}"
    inv = _inventory(farm, [
        _line("ocl", hosts["ocl"].port, work, cltui_env=ocl),
        _line("crash", hosts["pocl"].port, work, ansible_python_interpreter=str(crash)),
        _line("hang", hosts["pocl"].port, work, ansible_python_interpreter=str(hang)),
    ], "bad.ini")  # fmt: skip
    junit = root / "bad.xml"
    proc = fleet(str(bundle), "--hosts", str(inv), "--json", "--timeout", "8", "--junit",
                 str(junit), codes=(1,))
    rep = json.loads(proc.stdout)
    validate(rep, "cli.schema.json", "fleet")
    cols = {c["host"]: c for c in rep["columns"]}
    # the pre-flight on the host: enqueue 2's 40x30 work-group is over Oclgrind's 1024, so it
    # is not launched; the rest of the range runs and is checked
    assert {h: c["status"] for h, c in cols.items()} == {
        "ocl": "ok", "crash": "crash", "hang": "hang"}
    assert cols["ocl"]["verdict"]["status"] == "incomplete"
    assert cols["ocl"]["verdict"]["counts"]["cannot_run"] == 1
    assert "SIGSEGV" in cols["crash"]["error"]
    i = [c["id"] for c in rep["columns"]].index(cols["ocl"]["id"])
    by_enqueue = {r["enqueue"]: r["cells"][i] for r in rep["rows"]}
    assert by_enqueue[2]["status"] == "cannot-run"
    assert "CL_DEVICE_MAX_WORK_GROUP_SIZE 1024" in by_enqueue[2]["summary"]
    assert by_enqueue[0]["status"] == "equal" and by_enqueue[8]["status"] == "equal"
    assert rep["verdict"]["devices"] == {"total": 3, "finished": 1, "failed": 2, "cannot_run": 1}
    assert rep["verdict"]["by_status"] == {"fail": 2, "error": 0, "incomplete": 1, "pass": 0}
    # the verdict line counts what could not run, as the column's own line does
    assert rep["verdict"]["counts"]["cannot_run"] == 1
    assert f"1 kernel enqueue cannot run on 1 device ({cols['ocl']['id']}: 1)" in (
        rep["verdict"]["line"]), rep["verdict"]["line"]
    print_fleet(rep)  # the text report of the same run: the line first and last
    text = capsys.readouterr().out.splitlines()
    assert "1 kernel enqueue cannot run on 1 device" in text[0] and text[-1] == text[0]
    leftover = subprocess.run(find_sleep, capture_output=True, text=True)
    assert leftover.stdout.strip() == "", "the hung runner was left running on the host"
    root_x = ET.parse(junit).getroot()
    suite = {s.get("name"): s for s in root_x.findall("testsuite")}[cols["ocl"]["id"]]
    kinds = [next((k.tag for k in c if k.tag != "system-out"), "pass")
             for c in suite.findall("testcase")]
    assert kinds == ["pass", "pass", "error", "pass", "pass", "pass", "pass"]
    (err,) = [e for c in suite.findall("testcase") if (e := c.find("error")) is not None]
    assert err.get("type") == "cannot-run"
    # the runner died of SIGSEGV before any enqueue ran: the runner's crash (an error of the
    # fleet's infrastructure, cltui.fleet.faults), the enqueues after it not reached
    crashed = {s.get("name"): s for s in root_x.findall("testsuite")}[cols["crash"]["id"]]
    outcomes = [next((k for k in c if k.tag != "system-out"), None)
                for c in crashed.findall("testcase")]
    assert {(o.tag, o.get("type")) for o in outcomes if o is not None} == {
        ("error", "runner-crash"), ("skipped", "not-reached")}, [
        (o.tag, o.get("type")) for o in outcomes if o is not None]


def test_sigterm_cancels_every_host_and_kills_the_runner_on_the_host(
    farm: tuple[SshHosts, Path], images_svm: Path
) -> None:
    import signal

    hosts, root = farm
    sleep, find_sleep = own_sleep(619)
    hang = _wrapper(root, "python-hang-2", f'[ "$1" = replay.py ] && exec {sleep}')
    inv = _inventory(farm, [_line("hang", hosts["pocl"].port, root / "work5",
                                  ansible_python_interpreter=str(hang))], "cancel.ini")
    proc = subprocess.Popen([PY, "-m", "cltui", "fleet", str(images_svm), "0-3", "--hosts",
                             str(inv), "--timeout", "300"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=fleet_env())
    assert proc.stderr is not None
    for line in proc.stderr:  # wait until the runner is started on the host
        if "replaying on" in line:
            break
    else:
        raise AssertionError("the fleet never started replaying")
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, (out, err)
    assert "interrupted" in err
    leftover = subprocess.run(find_sleep, capture_output=True, text=True)
    assert leftover.stdout.strip() == "", "the cancelled runner was left running on the host"
