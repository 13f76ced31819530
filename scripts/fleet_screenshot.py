"""Regenerate ``screenshots/36-fleet.svg``: ``cltui fleet`` on real sshd "hosts" started here
(tests/sshd_hosts.py: PoCL only, Oclgrind only, both, one down, one that refuses the key),
its text output as a terminal shows it.

    .venv/bin/python scripts/fleet_screenshot.py [--captures ../shared/captures] [--out screenshots]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rich.console import Console  # noqa: E402
from rich.text import Text  # noqa: E402

from tests.sshd_hosts import HostSpec, start_hosts  # noqa: E402

WIDTH = 132


def _icd(root: Path, name: str) -> Path:
    d = root / f"icd_{name}"
    d.mkdir()
    shutil.copy(f"/etc/OpenCL/vendors/{name}.icd", d)
    return d


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--captures", type=Path, default=REPO.parent / "shared" / "captures")
    ap.add_argument("--out", type=Path, default=REPO / "screenshots")
    ns = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="cltui-fleet-shot-"))
    try:
        pocl, ocl = _icd(root, "pocl"), _icd(root, "oclgrind")
        hosts = start_hosts(root / "sshd", [
            HostSpec("cpu-box", env={"OCL_ICD_VENDORS": str(pocl)}),
            HostSpec("sim-box", env={"OCL_ICD_VENDORS": str(ocl)}),
            HostSpec("lab-both"), HostSpec("old-box", down=True),
            HostSpec("locked", refuse_key=True),
        ])  # fmt: skip
        try:
            lines = [f"{h.name} ansible_host=127.0.0.1 ansible_port={h.port} "
                     f"cltui_workdir={root / 'work' / h.name}" for h in hosts]
            inv = root / "lab.ini"
            inv.write_text("[lab]\n" + "\n".join(lines) + "\n[lab:vars]\n"
                           f"ansible_ssh_common_args=\"-F {hosts.config}\"\n"
                           f"ansible_python_interpreter={sys.executable}\n")
            env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": str(WIDTH),
                   "FORCE_COLOR": "1", "TERM": "xterm-256color",
                   "XDG_CACHE_HOME": str(root / "xdg")}
            cmd = ["cltui", "fleet", "images_svm_pocl", "0-8", "--hosts", "lab.ini"]
            proc = subprocess.run([sys.executable, "-m", *cmd[0:1], *cmd[1:2],
                                   str(ns.captures / "images_svm_pocl"), "0-8", "--hosts",
                                   str(inv)], capture_output=True, text=True, env=env,
                                  timeout=600)
        finally:
            hosts.stop()
        console = Console(record=True, width=WIDTH, force_terminal=True, color_system="truecolor")
        console.print(Text("$ " + " ".join(cmd), style="bold"))
        console.print(Text.from_ansi(proc.stdout))
        ns.out.mkdir(parents=True, exist_ok=True)
        console.save_svg(str(ns.out / "36-fleet.svg"), title="cltui fleet")
        print(f"wrote {ns.out / '36-fleet.svg'} (exit {proc.returncode})")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
