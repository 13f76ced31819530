"""``cltui fleet``'s CI features end to end against real sshd daemons on localhost
(tests/sshd_hosts.py): ``host_vars/`` and ``group_vars/`` beside the inventory, ``--limit``,
``--list-hosts``, tolerances per device from the inventory, and ``--baseline``: Oclgrind's
known rounding at enqueue 2 passes, a planted new divergence fails, a fixed one fails."""

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

from tests.fleet_setup import (
    PY,
    export_bundle,
    fleet,
    fleet_env,
    icd_folder,
    own_cache,  # noqa: F401  (autouse: the module's fleet cache)
)
from tests.schemas import validate
from tests.sshd_hosts import HostSpec, SshHosts

pytestmark = [pytest.mark.device, pytest.mark.slow, pytest.mark.child]

@pytest.fixture(scope="module")
def lab(ssh_hosts: Callable[[list[HostSpec]], SshHosts], tmp_path_factory: pytest.TempPathFactory
        ) -> tuple[SshHosts, Path]:
    root = tmp_path_factory.mktemp("lab")
    icd_folder(root, "pocl")
    icd_folder(root, "oclgrind")
    return ssh_hosts([HostSpec("a"), HostSpec("b")]), root


def _inventory(lab: tuple[SshHosts, Path], name: str, grind: dict[str, Any] | None = None
               ) -> Path:
    """An INI inventory in its own folder: host ``cpu1`` (group cpu) sees PoCL only through
    ``host_vars/cpu1.yml``, host ``grind1`` (group grind) Oclgrind only through
    ``group_vars/grind/env.yml`` (and ``grind``'s more variables in ``group_vars/grind.yml``)."""
    hosts, root = lab
    d = root / name
    (d / "host_vars").mkdir(parents=True)
    (d / "group_vars" / "grind").mkdir(parents=True)
    work = root / "work"
    (d / "hosts.ini").write_text(
        f"[cpu]\ncpu1 ansible_host=127.0.0.1 ansible_port={hosts['a'].port} "
        f"cltui_workdir={work / 'cpu1'}\n"
        f"[grind]\ngrind1 ansible_host=127.0.0.1 ansible_port={hosts['b'].port} "
        f"cltui_workdir={work / 'grind1'}\n"
        "[lab:children]\ncpu\ngrind\n"
        f"[lab:vars]\nansible_ssh_common_args=\"-F {hosts.config}\"\n"
        f"ansible_python_interpreter={PY}\n")
    (d / "host_vars" / "cpu1.yml").write_text(
        json.dumps({"cltui_env": {"OCL_ICD_VENDORS": str(root / "icd_pocl")}}))
    (d / "group_vars" / "grind" / "env.yml").write_text(
        f"cltui_env:\n  OCL_ICD_VENDORS: {root / 'icd_oclgrind'}\n")
    if grind:
        (d / "group_vars" / "grind.yml").write_text(json.dumps(grind))
    return d / "hosts.ini"


def test_list_hosts_reads_the_var_folders_and_limit_picks_hosts(
    lab: tuple[SshHosts, Path],
) -> None:
    inv = _inventory(lab, "listing")
    rep = json.loads(fleet("--list-hosts", str(inv), "--json", codes=(0,)).stdout)
    validate(rep, "cli.schema.json", "fleet_hosts")
    seen = {h["name"]: (h["groups"], [d["platform"] for d in h["devices"]]) for h in rep["hosts"]}
    assert seen == {"cpu1": (["lab", "cpu"], ["Portable Computing Language"]),
                    "grind1": (["lab", "grind"], ["Oclgrind"])}
    text = fleet("--list-hosts", str(inv), "--limit", "lab:!cpu", codes=(0,)).stdout
    assert text.startswith("grind1 [lab, grind]: 1 devices (python runner)\n  grind1:0:0  ")
    assert "cpu1" not in text
    bad = fleet("--list-hosts", str(inv), "--limit", "gpu*", codes=(2,))
    assert bad.stderr.strip() == f"cltui: --limit 'gpu*' names no host of the inventory ({inv})"


def _plant(src: Path, dest: Path) -> Path:
    """A copy of a bundle whose svm_scale kernel adds 1 to element 5: a new divergence at
    enqueue 6 (and 7, which scales the same data again) on every device."""
    shutil.copytree(src, dest)
    cl = dest / "kernels" / "program_p0.cl"
    text = cl.read_text()
    assert "tmp[l] = data[i] * k;" in text
    data = text.replace("tmp[l] = data[i] * k;", "tmp[l] = data[i] * k + (i == 5);").encode()
    cl.write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()
    plan = json.loads((dest / "manifest.json").read_text())
    for entry in plan["data"].values():
        if entry["path"] == "kernels/program_p0.cl":
            entry["sha256"], entry["size"] = digest, len(data)
    man = (json.dumps(plan, indent=1) + "\n").encode()
    (dest / "manifest.json").write_bytes(man)
    sums = {"kernels/program_p0.cl": digest, "manifest.json": hashlib.sha256(man).hexdigest()}
    lines = (dest / "SHA256SUMS").read_text().splitlines()
    (dest / "SHA256SUMS").write_text("".join(
        f"{sums.get(ln.split('  ', 1)[1], ln.split('  ', 1)[0])}  {ln.split('  ', 1)[1]}\n"
        for ln in lines))
    return dest


def _check_artifacts(arts: Path, rep: dict[str, Any]) -> None:
    """Each column's differing outputs (and only those), its runner log and result, the
    report; the report's checks name the kept files, byte for byte the device's output."""
    assert json.loads((arts / "report.json").read_text())["verdict"] == rep["verdict"]
    for i, col in enumerate(rep["columns"]):
        folder = arts / col["id"].replace(":", "_")
        assert (folder / "runner.log").is_file() and (folder / "result.json").is_file()
        differ = {(r["enqueue"], r["mem"]) for r in rep["rows"]
                  if r["cells"][i]["status"] == "different"}
        named = {(st["enqueue"], c["mem"]): c["output"] for st in rep["devices"][i]["steps"]
                 for c in st["checks"] if c["output"]}
        assert set(named) == differ and differ
        kept = sorted(p.name for p in folder.glob("enqueue-*"))
        assert len(kept) == len(differ)
        for path in named.values():
            assert Path(path).parent == folder.resolve() and Path(path).stat().st_size > 0


def _cells(rep: dict[str, Any], host: str) -> dict[tuple[int, str], dict[str, Any]]:
    i = [c["host"] for c in rep["columns"]].index(host)
    return {(r["enqueue"], r["label"]): r["cells"][i] for r in rep["rows"]}


def test_a_baseline_passes_the_known_rounding_and_fails_a_new_or_a_fixed_divergence(
    lab: tuple[SshHosts, Path], images_svm: Path,
) -> None:
    _hosts, root = lab
    inv = _inventory(lab, "baseline")
    base = root / "known.yml"
    base.write_text("known:\n  - device: '*oclgrind*'\n    enqueue: 2\n    argument: 2\n"
                    "    max_ulp: 2\n    why: Oclgrind rounds sample_linear 1 LSB apart\n")
    bundle = root / "bundle"
    export_bundle(images_svm, "0-8", bundle)
    # without the baseline Oclgrind's column is red: the known 2 ULP at enqueue 2
    plain = json.loads(fleet(str(bundle), "--hosts", str(inv), "--json", codes=(1,)).stdout)
    assert _cells(plain, "grind1")[(2, "arg 2 (buffer 0003)")]["status"] == "different"
    # with it, green: the cell is known, the column and the run pass (exit 0)
    junit = root / "known.xml"
    proc = fleet(str(bundle), "--hosts", str(inv), "--baseline", str(base), "--json",
                 "--junit", str(junit), codes=(0,))
    rep = json.loads(proc.stdout)
    validate(rep, "cli.schema.json", "fleet")
    cell = _cells(rep, "grind1")[(2, "arg 2 (buffer 0003)")]
    assert (cell["status"], cell["baseline"], cell["max_ulp"]) == ("different", "known", 2.0)
    grind = next(c for c in rep["columns"] if c["host"] == "grind1")
    assert grind["verdict"]["status"] == "pass"
    assert grind["verdict"]["line"].startswith("PASS: 1 known divergence (baseline); ")
    assert "1 different)" in grind["verdict"]["line"]  # the line's counts stay true too
    assert "within" not in grind["verdict"]["line"]
    assert grind["verdict"]["counts"]["different"] == 1  # the counts stay true
    assert rep["verdict"]["status"] == "pass" and rep["baseline"]["new"] == []
    assert "1 known divergence (baseline)" in rep["verdict"]["line"]
    suites = {s.get("name"): s for s in ET.parse(junit).getroot().findall("testsuite")}
    assert int(ET.parse(junit).getroot().get("failures", -1)) == 0
    case = next(c for c in suites[grind["id"]].findall("testcase")
                if c.get("name") == "enqueue 2 sample_linear")
    assert "[known]" in (case.findtext("system-out") or "")
    assert float(suites[grind["id"]].get("time", "0")) > 0
    # a planted new divergence (svm_scale changed) is red on both columns, exit 1
    planted = _plant(bundle, root / "planted")
    saved = root / "saved.yml"
    junit2 = root / "planted.xml"
    arts = root / "artifacts"
    proc = fleet(str(planted), "--hosts", str(inv), "--baseline", str(base), "--json",
                 "--junit", str(junit2), "--save-baseline", str(saved), "--artifacts",
                 str(arts), codes=(1,))
    rep = json.loads(proc.stdout)
    validate(rep, "cli.schema.json", "fleet")
    _check_artifacts(arts, rep)
    for host in ("cpu1", "grind1"):
        cells = _cells(rep, host)
        assert cells[(6, "arg 0 (svm 0006)")]["baseline"] == "new"
    assert _cells(rep, "grind1")[(2, "arg 2 (buffer 0003)")]["baseline"] == "known"
    assert rep["verdict"]["status"] == "fail"
    assert "new divergences not in the baseline" in rep["verdict"]["line"]
    assert any(s.startswith("cpu1:0:0 enqueue 6 ") for s in rep["baseline"]["new"])
    fails = [f for s in ET.parse(junit2).getroot().findall("testsuite")
             for c in s.findall("testcase") if (f := c.find("failure")) is not None]
    assert fails and {f.get("type") for f in fails} == {"different"}
    import yaml

    entries = yaml.safe_load(saved.read_text())["known"]
    assert {(e["enqueue"], e["argument"]) for e in entries} >= {(2, "arg 2 (buffer 0003)"),
                                                                (6, "arg 0 (svm 0006)")}
    # an entry that no longer diverges (PoCL listed at enqueue 2) is fixed: exit 1, said
    stale = root / "stale.yml"
    stale.write_text(base.read_text() + "  - device: 'Portable*'\n    enqueue: 2\n"
                     "    differs: true\n")
    rep = json.loads(fleet(str(bundle), "--hosts", str(inv), "--limit", "cpu",
                           "--baseline", str(stale), "--json", codes=(1,)).stdout)
    assert [h["name"] for h in rep["hosts"]] == ["cpu1"]
    assert rep["verdict"]["status"] == "fail"
    assert rep["baseline"]["fixed"] == ["cpu1:0:0: Portable* enqueue 2 (differs)"]
    assert "1 known divergence fixed: update the baseline" in rep["verdict"]["line"]


def test_a_tolerance_per_device_from_group_vars(
    lab: tuple[SshHosts, Path], images_svm: Path,
) -> None:
    inv = _inventory(lab, "tolerant", grind={"cltui_tolerances": {"*Oclgrind*": {"ulp": 2}}})
    rep = json.loads(fleet(str(images_svm), "0-8", "--hosts", str(inv), "--json",
                           codes=(0,)).stdout)
    cell = _cells(rep, "grind1")[(2, "arg 2 (buffer 0003)")]
    assert (cell["status"], cell["max_ulp"]) == ("within", 2.0)
    assert {c["status"] for c in _cells(rep, "cpu1").values()} == {"equal"}


def test_bad_baselines_and_limits_are_one_line(tmp_path: Path) -> None:
    inv = tmp_path / "hosts"
    inv.write_text("[g]\nh1\nh2\n")
    base = tmp_path / "b.yml"
    base.write_text("- device: x\n  enqueue: 2\n")
    proc = fleet(str(tmp_path), "--hosts", str(inv), "--baseline", str(base), codes=(2,))
    assert proc.stderr == f"cltui: {base}: entry 1: give max_ulp: N or differs: true " \
        "(one of them)\n"
    proc = fleet("--hosts", str(inv), codes=(2,))
    assert proc.stderr.startswith("cltui: give SOURCE")
    proc = fleet(str(tmp_path), "--list-hosts", str(inv), codes=(2,))
    assert proc.stderr.startswith("cltui: --list-hosts INVENTORY runs nothing")


def test_a_device_another_fleet_holds_is_waited_for_or_refused(
    lab: tuple[SshHosts, Path], images_svm: Path,
) -> None:
    """While another holder has cpu1's PoCL device, ``--lock-wait 0`` refuses it (the column
    an error saying so) and the default waits, says it waits, and runs when it is free."""
    import fcntl
    import threading

    from cltui.fleet.lock import LOCK_NAME, busy_reason, lock_key
    from cltui.replay.engine import list_devices

    inv = _inventory(lab, "locked")
    pocl = next((d for d in list_devices() if "Portable" in d["platform"]), None)
    if pocl is None:
        pytest.skip("PoCL is not installed")
    host_tmp = lab[0]["a"].tmpdir  # cpu1 is sshd host a: its TMPDIR holds its device locks
    assert host_tmp is not None
    locks = host_tmp / LOCK_NAME
    locks.mkdir(mode=0o1777, exist_ok=True)
    lock = locks / f"{lock_key(pocl)}.lock"
    args = (str(images_svm), "0-3", "--hosts", str(inv), "--limit", "cpu1")
    with lock.open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        rep = json.loads(fleet(*args, "--lock-wait", "0", "--json", codes=(1,)).stdout)
        (col,) = rep["columns"]
        assert (col["status"], col["error"]) == ("error", busy_reason(0))
        proc = subprocess.Popen([PY, "-m", "cltui", "fleet", *args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=fleet_env())
        said: list[str] = []
        waiting = threading.Event()

        def read() -> None:
            assert proc.stderr is not None
            for ln in proc.stderr:
                said.append(ln)
                if "waiting: another cltui fleet holds the device" in ln:
                    waiting.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            assert waiting.wait(300), said  # a hang detector, not a timing
            fcntl.flock(held, fcntl.LOCK_UN)
            out, _ = proc.communicate(timeout=600)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        reader.join(10)
    assert proc.returncode == 0, (out[-2000:], said[-20:])
    assert out.startswith("PASS: 1 devices on 1 of 1 hosts")


def test_retry_flaky_tells_a_result_that_changes_from_a_stable_divergence(
    lab: tuple[SshHosts, Path], images_svm: Path,
) -> None:
    """``flip``'s interpreter replays on Oclgrind, then on PoCL, then Oclgrind...: its
    enqueue 2 differs on the first run and not on the next, so the column is FLAKY (a FAIL,
    not a pass, even with a baseline that knows the divergence); ``grind1`` differs the same
    way every run: retried twice, a plain FAIL."""
    hosts, root = lab
    inv = _inventory(lab, "flaky")
    count = root / "flip-count"
    flip = root / "python-flip"
    flip.write_text(
        "#!/bin/sh\nif [ \"$1\" = replay.py ]; then\n"
        f"  c=$(cat {count} 2>/dev/null || echo 0); echo $((c + 1)) > {count}\n"
        f"  if [ $((c % 2)) -eq 0 ]; then export OCL_ICD_VENDORS={root / 'icd_oclgrind'}\n"
        f"  else export OCL_ICD_VENDORS={root / 'icd_pocl'}; fi\nfi\nexec {PY} \"$@\"\n")
    flip.chmod(0o755)
    with inv.open("a") as f:
        f.write(f"[flipper]\nflip ansible_host=127.0.0.1 ansible_port={hosts['a'].port} "
                f"cltui_workdir={root / 'work' / 'flip'} ansible_python_interpreter={flip} "
                f"cltui_env='OCL_ICD_VENDORS={root / 'icd_oclgrind'}'\n"
                f"[flipper:vars]\nansible_ssh_common_args=\"-F {hosts.config}\"\n")
    base = root / "flaky-known.yml"
    base.write_text("- {device: '*', enqueue: 2, argument: 2, max_ulp: 2}\n")
    junit = root / "flaky.xml"
    proc = fleet(str(images_svm), "0-3", "--hosts", str(inv), "--limit", "grind1,flip",
                 "--retry-flaky", "2", "--baseline", str(base), "--json", "--junit", str(junit),
                 codes=(1,))
    rep = json.loads(proc.stdout)
    validate(rep, "cli.schema.json", "fleet")
    cols = {c["host"]: c for c in rep["columns"]}
    flaky = ["enqueue 2 arg 2 (buffer 0003)"]
    assert (cols["flip"]["retries"], cols["flip"]["flaky"]) == (1, flaky)
    assert cols["flip"]["verdict"]["status"] == "fail"
    assert cols["flip"]["verdict"]["line"].startswith(
        "FAIL: flaky: 1 output changed between 2 runs (enqueue 2 arg 2 (buffer 0003))")
    assert _cells(rep, "flip")[(2, "arg 2 (buffer 0003)")]["flaky"] is True
    # the stable one: the baseline knows its divergence, retried twice, the same: a pass
    assert (cols["grind1"]["retries"], cols["grind1"]["flaky"]) == (2, [])
    assert cols["grind1"]["verdict"]["status"] == "pass"
    assert "1 device flaky: results changed between runs (flip:0:0: " in rep["verdict"]["line"]
    fails = [f for s in ET.parse(junit).getroot().findall("testsuite")
             for c in s.findall("testcase") if (f := c.find("failure")) is not None]
    assert [f.get("type") for f in fails] == ["flaky"]
