"""Replay a bundle with the pre-flight's kernel findings switched off (the driver decides),
and print each kernel's CL_KERNEL_WORK_GROUP_SIZE next to the captured local size (on the
lent H200 machine, before the pre-flight left that finding to the launch; results in
benchmarks/results/h200-wgsize/):

    python3 benchmarks/h200/wgsize_probe.py BUNDLE > RESULT.json 2> PROBE.err
"""
import runpy
import sys

bundle = sys.argv[1]
sys.path.insert(0, bundle + "/lib")
import cltui.replay.engine.preflight as pf  # noqa: E402


def spy(st: dict, kf: dict, dev: dict) -> list:  # type: ignore[type-arg]
    what = f"enqueue {st['enqueue']} {st['kernel']} local {st['local']}"
    print(f"probe: {what} kernel facts {kf}", file=sys.stderr)
    return []


pf.kernel_findings = spy
sys.argv = ["replay.py", "--device", "nvidia", "--json", "--ulp", "4"]
runpy.run_path(bundle + "/replay.py", run_name="__main__")
