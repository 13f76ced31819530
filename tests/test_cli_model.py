"""cltui info / ls / show / demo through click's CliRunner, checked against the raw files."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from cltui.cli import main

ENQ_LINE = re.compile(rb"^>>>> .*?(clEnqueue\w+)(?:\( (.*?) \))?[:;].*EnqueueCounter: (\d+)$", re.M)


def run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.stdout, r.stderr


def raw_enqueues(capture: Path) -> list[tuple[int, str, str | None]]:
    data = (capture / "clintercept_log.txt").read_bytes()
    return [
        (int(m.group(3)), m.group(1).decode(), m.group(2).decode() if m.group(2) else None)
        for m in ENQ_LINE.finditer(data)
    ]


def test_ls_json_matches_the_raw_log(pyocl_pocl: Path) -> None:
    code, out, _ = run("ls", str(pyocl_pocl), "--json")
    assert code == 0
    rows = json.loads(out)
    raw = raw_enqueues(pyocl_pocl)
    assert [(r["number"], r["function"], r["kernel"]) for r in rows] == raw
    by_number = {r["number"]: r for r in rows}
    # sizes as logged: elementwise kernels use global 8192 / local 128 on PoCL
    assert by_number[22]["kernel"] == "sin_kernel"
    assert by_number[22]["global_size"] == [8192] and by_number[22]["local_size"] == [128]
    assert by_number[17]["kind"] == "marker"
    assert by_number[2]["kind"] == "write"
    # dumps exist for the kernels in 0-39 only (DumpBuffersMaxEnqueue=39)
    assert by_number[22]["data"]["pre"] and not by_number[53]["data"]["pre"]
    assert by_number[14]["data"]["replay"] and not by_number[0]["data"]["replay"]


def test_ls_filters(images_svm: Path) -> None:
    code, out, _ = run("ls", str(images_svm), "--kernel", "svm", "--json")
    assert code == 0
    assert [r["number"] for r in json.loads(out)] == [6, 7]
    code, out, _ = run("ls", str(images_svm), "--range", "2-8/sample", "--json")
    assert [r["number"] for r in json.loads(out)] == [2]
    code, out, _ = run("ls", str(images_svm), "--kernel", "^down", "--regex", "--json")
    assert [r["number"] for r in json.loads(out)] == [0, 1]
    code, out, _ = run("ls", str(images_svm))
    assert code == 0 and "sample_linear" in out and "40x30" in out


def test_show_types_values_and_dumps(images_svm: Path) -> None:
    code, out, _ = run("show", str(images_svm), "2", "--json")
    assert code == 0
    d = json.loads(out)
    assert d["kernel"] == "sample_linear" and d["global_size"] == [40, 30]
    args = {a["index"]: a for a in d["args"]}
    assert args[0]["kind"] == "image" and args[1]["kind"] == "sampler"
    assert "CL_ADDRESS_REPEAT" in args[1]["sampler"] and "CL_FILTER_LINEAR" in args[1]["sampler"]
    assert args[2]["name"] == "out" and args[2]["kind"] == "buffer"
    # the output buffer: 40x30 float4 = 19200 bytes; Post values are image samples in [0, 1]
    post = args[2]["post"]
    assert post["bytes"] == 19200 and not post["hash_only"]
    assert post["stats"]["min"] >= 0.0 and post["stats"]["max"] <= 1.0
    dump = images_svm / "SetKernelArg" / "SetKernelArg_0002_Kernel_sample_linear_Arg_3.bin"
    raw = dump.read_bytes()
    assert args[3]["raw"] == raw.hex()
    assert abs(args[3]["value"] - 0.025) < 1e-9
    code, out, _ = run("show", str(images_svm), "2")
    assert "scale: private float = 0.025" in out


def test_show_struct_argument(pyocl_pocl: Path) -> None:
    code, out, _ = run("show", str(pyocl_pocl), "14", "--json")
    assert code == 0
    arg6 = next(a for a in json.loads(out)["args"] if a["index"] == 6)
    assert arg6["type"] == "clip_params_t"
    assert set(arg6["value"]) == {"scale", "offset", "lo", "hi"}


def test_info_counts(opencv: Path) -> None:
    code, out, _ = run("info", str(opencv), "--json")
    assert code == 0
    d = json.loads(out)
    raw = raw_enqueues(opencv)
    assert d["enqueues"] == len(raw) == 84
    kernels = sum(1 for _n, f, _k in raw if f == "clEnqueueNDRangeKernel")
    assert d["kinds"]["kernel"] == kernels == 39
    assert d["kernels"]["KF"]["count"] == 4
    assert d["data"]["replay_folders"] == 24
    assert d["problems"] == [] or all(isinstance(p, str) for p in d["problems"])


def test_bad_input_is_one_line_exit_2(tmp_path: Path, images_svm: Path) -> None:
    code, _, err = run("ls", str(tmp_path / "nope"))
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    code, _, err = run("info", str(tmp_path))
    assert code == 2 and "Traceback" not in err
    code, _, err = run("show", str(images_svm), "99")
    assert code == 2 and "99" in err
    code, _, err = run("ls", str(images_svm), "--range", "9-3")
    assert code == 2 and "before" in err


def test_demo_capture_is_bundled() -> None:
    code, out, _ = run("demo", "--path")
    assert code == 0
    path = Path(out.strip())
    assert (path / "clintercept_log.txt").is_file()
    code, out, _ = run("ls", str(path), "--json")
    assert len(json.loads(out)) == 11


def test_open_accepts_a_dumpdir_split_per_process(
    images_svm: Path, tmp_path: Path, monkeypatch: Any
) -> None:
    """`cltui DUMPDIR` where AppendPid wrote DUMPDIR.<pid> folders: the app is started (and
    opens the process with the enqueues); a DUMPDIR with no such folders is still refused."""
    from tests.conftest import copy_capture

    copy_capture(images_svm, tmp_path).rename(tmp_path / "app.4242")
    started: list[Path] = []

    class FakeApp:
        return_code = 0
        exit_line = None

        def __init__(self, path: Path) -> None:
            self.path = path

        def run(self) -> None:
            started.append(self.path)

    monkeypatch.setattr("cltui.tui.app.make_app", lambda a, b=None, ansi=False: FakeApp(a))
    r = CliRunner().invoke(main, ["open", str(tmp_path / "app")])
    assert r.exit_code == 0, r.output
    assert started == [tmp_path / "app"]
    r = CliRunner().invoke(main, ["open", str(tmp_path / "nothing")])
    assert r.exit_code == 2 and "nothing does not exist" in r.output


def test_every_timeout_must_be_positive(images_svm: Path, tmp_path: Path) -> None:
    """``--timeout 0`` (or less) is bad input for every command that takes one: ``try``,
    ``sweep`` and ``latency`` took it, and a 0 s hang detector gives up on every device."""
    variant = tmp_path / "v.json"
    variant.write_text("{}")
    cap = str(images_svm)
    for args in (["replay", cap, "0"], ["feasible", cap, "0"], ["check", cap, "0"],
                 ["shrink", cap, "0"], ["explain", cap, "0"], ["latency", cap, "0"],
                 ["try", cap, "0", str(variant)], ["sweep", cap, "0", "--param", "N=1,2"],
                 ["fleet", cap, "0", "--hosts", str(tmp_path / "none")]):  # fmt: skip
        for value in ("0", "-1", "nan"):
            code, out, err = run(*args, "--timeout", value)
            assert code == 2 and "--timeout" in err and "Traceback" not in err, (args, value, err)
            assert out == "", (args, value)
