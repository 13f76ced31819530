"""``cltui fleet ... --explain`` end to end against real sshd hosts on localhost
(tests/sshd_hosts.py): one host with PoCL only, one with Oclgrind only, the planted
``contraction`` kernel (``mad`` fused on Oclgrind, not on PoCL) as the divergence; every run
of the explanation (the rebuilds and the instrumented kernel) replayed on the columns' hosts
as bundles, the comparison made here."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cltui.commands.fleet_text import print_fleet
from cltui.fleet.explain import explain_targets
from tests.fleet_setup import icd_folder
from tests.schemas import validate
from tests.sshd_hosts import HostSpec, SshHosts

pytestmark = [pytest.mark.device, pytest.mark.slow, pytest.mark.child]

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable


@pytest.fixture(scope="module")
def lab(ssh_hosts: Callable[[list[HostSpec]], SshHosts], tmp_path_factory: pytest.TempPathFactory
        ) -> tuple[Path, Path]:
    """Two hosts (PoCL only, Oclgrind only): the inventory, and the folder of the run."""
    root = tmp_path_factory.mktemp("lab")
    pocl, grind = icd_folder(root, "pocl"), icd_folder(root, "oclgrind")
    hosts = ssh_hosts([HostSpec("pocl", env={"OCL_ICD_VENDORS": str(pocl)}),
                       HostSpec("grind", env={"OCL_ICD_VENDORS": str(grind)})])  # fmt: skip
    inv = root / "lab.ini"
    inv.write_text("[lab]\n" + "".join(
        f"{n} ansible_host=127.0.0.1 ansible_port={hosts[n].port} cltui_workdir={root / n}\n"
        for n in ("pocl", "grind")) + "\n[lab:vars]\n"
        f"ansible_ssh_common_args=\"-F {hosts.config}\"\nansible_python_interpreter={PY}\n")
    return inv, root


def _fleet(root: Path, *args: str, code: int) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_CACHE_HOME": str(root / "xdg")}
    proc = subprocess.run([PY, "-m", "cltui", "fleet", *args], capture_output=True, text=True,
                          env=env, timeout=900)  # fmt: skip
    assert proc.returncode == code, (proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:])
    return proc


def test_fleet_explain_names_the_line_and_the_cause_on_the_hosts(
    lab: tuple[Path, Path], planted: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inv, root = lab
    junit = root / "explain.xml"
    proc = _fleet(root, str(planted), "1", "--hosts", str(inv), "--explain", "--json",
                  "--junit", str(junit), code=1)  # fmt: skip
    rep = json.loads(proc.stdout)
    validate(rep, "cli.schema.json", "fleet")
    assert [c["id"] for c in rep["columns"]] == ["pocl:0:0", "grind:0:0"]
    assert [c["first_divergent"] for c in rep["columns"]] == [None, 1]
    (e,) = rep["explain"]
    assert (e["column"], e["reference"], e["enqueue"], e["kernel"], e["status"]) == (
        "grind:0:0", "pocl:0:0", 1, "contraction", "explained")
    ex = e["report"]
    assert ex["devices"]["a"]["id"] == "pocl:0:0" and ex["devices"]["b"]["id"] == "grind:0:0"
    assert "Oclgrind" in ex["devices"]["b"]["name"] and ex["devices"]["b"]["name"].startswith(
        "grind: ")
    assert ex["verdict"]["status"] == "diverges"
    assert ex["why"]["cause"] == "contraction" and ex["why"]["within_spec"] is True
    # the README's ground truth: line 8, `float f = mad(m, b[i], c[i]);`, operands equal
    line = ex["line"]
    assert line["status"] == "found", line["text"]
    assert line["site"]["line"] == 8 and "mad(" in line["source_line"]
    assert line["first"]["operands_equal"] is True
    assert line["same_outputs"] == {"a": True, "b": True}  # the instrumented kernel's, there
    assert "which line: line 8" in e["line"] and e["line"].startswith("grind:0:0 at enqueue 1")
    # the explanation is the failure message of the column's first divergent enqueue
    suites = {s.get("name"): s for s in ET.parse(junit).getroot().iter("testsuite")}
    (case,) = suites["grind:0:0"].iter("testcase")
    msg = case.find("failure")
    assert msg is not None and "explain: " in (msg.get("message") or "")
    assert "cause: contraction" in msg.get("message", "") and "line 8" in msg.get("message", "")
    (ok,) = suites["pocl:0:0"].iter("testcase")
    assert ok.find("failure") is None
    print_fleet(rep)
    out = capsys.readouterr().out
    assert "explain grind:0:0: its first divergence from pocl:0:0, enqueue 1 contraction" in out
    assert "  which line: line 8" in out


def test_a_bundle_fleet_says_why_a_column_is_not_explained(
    lab: tuple[Path, Path], planted: Path, tmp_path: Path
) -> None:
    inv, root = lab
    bundle = tmp_path / "b"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    subprocess.run([PY, "-m", "cltui", "export", str(planted), "1", "-o", str(bundle)],
                   check=True, capture_output=True, env=env, timeout=300)  # fmt: skip
    proc = _fleet(root, str(bundle), "--hosts", str(inv), "--explain", code=1)
    assert ("explain grind:0:0 at enqueue 1: not explained: the fleet sent a bundle: an "
            "explanation replays the enqueue from its capture's inputs (give DUMPDIR RANGE)"
            ) in proc.stdout  # fmt: skip


def test_targets_are_each_columns_first_divergence_from_the_reference() -> None:
    col = lambda i, first: {"id": i, "first_divergent": first}  # noqa: E731
    x = lambda e, b, s="different": {"enqueue": e, "kernel": "k", "mem": "m", "label": "arg 0",  # noqa: E731
                                     "a": "h:0:0", "b": b, "status": s}
    report: dict[str, Any] = {
        "columns": [col("h:0:0", None), col("g:0:0", 3), col("f:0:0", 2), col("e:0:0", 5)],
        "cross": [x(4, "g:0:0"), x(3, "g:0:0"), x(2, "f:0:0", "within"),
                  x(5, "e:0:0", "equal")],
    }  # fmt: skip
    targets, quiet = explain_targets(report)
    assert [(t.column, t.reference, t.enqueue) for t in targets] == [("g:0:0", "h:0:0", 3)]
    assert [(q["column"], q["status"]) for q in quiet] == [
        ("f:0:0", "not-explained"), ("e:0:0", "not-explained")]
    assert "not from the reference column h:0:0" in quiet[0]["line"]


def test_e_in_the_fleet_results_explains_the_cursor_column_on_its_hosts(
    lab: tuple[Path, Path], planted: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The app: ``e`` on a column of the fleet's matrix explains its first divergence from
    the reference column (on both hosts) in the explain screen; on the reference column it
    says why there is nothing to explain."""
    from textual.widgets import Static

    from cltui.tui.app import make_app
    from cltui.tui.screens.explain import ExplainScreen
    from cltui.tui.screens.fleet_results import FleetResultsScreen
    from cltui.tui.screens.replay_request import ReplayRequest
    from tests.conftest import copy_capture
    from tests.test_tui_replay import SIZE, loaded, wait_for

    inv, root = lab
    cap = copy_capture(planted, tmp_path)
    report = json.loads(_fleet(root, str(cap), "1", "--hosts", str(inv), "--json",
                               code=1).stdout)  # fmt: skip
    assert "explain" not in report
    monkeypatch.setenv("XDG_CACHE_HOME", str(root / "xdg"))
    request = ReplayRequest(devices=[], inventory=str(inv),
                            hosts={"pocl": ("0:0",), "grind": ("0:0",)})  # fmt: skip

    async def run() -> None:
        async with make_app(cap).run_test(size=SIZE) as pilot:
            main = await loaded(pilot)
            res = FleetResultsScreen(report, main.capture, request)
            await pilot.app.push_screen(res)
            await pilot.pause()
            assert "e" in {b.key for b in res.BINDINGS}  # type: ignore[union-attr]
            table = res.query_one("#results-table")
            table.move_cursor(row=0, column=2)  # type: ignore[attr-defined]
            await pilot.press("e")  # the reference column: nothing to explain, said
            await pilot.pause()
            assert isinstance(pilot.app.screen, FleetResultsScreen)
            await pilot.press("f")  # the differing cell: grind's column
            await pilot.press("e")
            await wait_for(pilot, lambda: isinstance(pilot.app.screen, ExplainScreen), 600)
            shown = pilot.app.screen
            assert isinstance(shown, ExplainScreen)
            await pilot.pause()
            verdict = str(shown.query_one("#explain-verdict", Static).render())
            assert verdict.startswith("DIVERGES: enqueue 1 (contraction) on pocl: ")
            assert "vs grind: Oclgrind" in verdict and "cause: contraction" in verdict
            body = str(shown.query_one("#explain-body", Static).render())
            assert "▶     8      float f = mad(m, b[i], c[i]);" in body, body[:600]
            await pilot.press("escape")
            await wait_for(pilot, lambda: isinstance(pilot.app.screen, FleetResultsScreen))

    asyncio.run(run())


def test_a_column_whose_hosts_cannot_be_reached_again_says_why(
    planted: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The explanation's runs on hosts that do not answer (a closed port): the entry is
    ``incomplete`` and says so; a column whose host is not among the fleet's is
    ``not-explained``, with why."""
    from cltui.capture import open_capture
    from cltui.fleet.explain import explain_columns
    from cltui.fleet.host import RunSettings
    from cltui.fleet.inventory import Host

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    dev = {"name": "dev", "platform": "p", "driver": "1"}
    report: dict[str, Any] = {
        "columns": [{"id": f"{h}:0:0", "host": h, "first_divergent": f,
                     "device": {"id": "0:0", **dev}}
                    for h, f in (("gone", None), ("shut", 1), ("other", 1))],
        "cross": [{"enqueue": 1, "kernel": "contraction", "mem": "m", "label": "arg 3",
                   "a": "gone:0:0", "b": b, "status": "different"}
                  for b in ("shut:0:0", "other:0:0")],
    }  # fmt: skip
    hosts = [Host(name=h, address="127.0.0.1", port=1, ssh_args=("-F", "/dev/null"),
                  workdir=str(tmp_path / h)) for h in ("gone", "shut")]  # fmt: skip
    shut, other = explain_columns(report, open_capture(planted), hosts,
                                  RunSettings(timeout=20.0))  # fmt: skip
    assert (shut["column"], shut["status"]) == ("shut:0:0", "incomplete")
    assert shut["reason"].startswith("INCOMPLETE: enqueue 1 (contraction) on gone: dev vs "
                                     "shut: dev: not replayed (gone: dev: unreachable: ")
    assert shut["report"]["verdict"]["status"] == "incomplete"
    assert (other["status"], other["reason"]) == (
        "not-explained", "host other is not among the fleet's hosts")
    assert other["line"] == ("other:0:0 at enqueue 1: not explained: host other is not "
                             "among the fleet's hosts")
