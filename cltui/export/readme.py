"""The bundle's README.md, rendered from its manifest.

Every name taken from the capture (kernel names, labels, device names) is untrusted text: it is
shown inside inline code with backticks and line breaks removed.
"""

from __future__ import annotations

from cltui.replay.engine.schema import Manifest
from cltui.runners.build import build_shell
from cltui.text.units import fmt_bytes

_LISTED = 50  # missing includes the bundle README lists (an untrusted source can hold thousands)


def _code(text: object) -> str:
    s = " ".join(str(text).split()).replace("`", "'")
    return f"`{s}`" if s else "``"


def render_readme(manifest: Manifest, files: list[str]) -> str:
    b = manifest["bundle"]
    cap = b["capture"]
    dev = cap.get("device") or {}
    ident = (
        _code(dev["name"]) + (f" on {_code(dev['platform'])}" if dev.get("platform") else "")
        if dev.get("name")
        else "not recorded in the capture"
    )
    has_cpp = "cpp" in b["languages"]
    out = [
        *_intro(manifest),
        *_run_it(ident, has_cpp),
        *_what_pass_means(manifest),
        *_variant(manifest),
        *_changes(manifest),
        *_enqueues(manifest),
        *_files(manifest, has_cpp),
        *_headers(manifest),
        *_notes(manifest),
    ]
    out.append(f"{len(files) + 1} files.\n")
    return "\n".join(out)


def _intro(manifest: Manifest) -> list[str]:
    b = manifest["bundle"]
    cap = b["capture"]
    steps = manifest["steps"]
    enqueues = [int(s["enqueue"]) for s in steps]
    devices = ", ".join(_code(d) for d in cap["devices"]) or "not recorded in the capture"
    out: list[str] = []
    add = out.append
    add(f"# OpenCL replay bundle: enqueues {_code(b['range'])} of {_code(cap['name'])}\n")
    add(
        f"Exported by cltui {b['cltui']} on {b['created']} from the capture "
        f"{_code(cap['path'])}, recorded by the Intercept Layer for OpenCL Applications on "
        f"{devices}.\n"
    )
    add(
        f"It replays {len(steps)} kernel enqueue{'s' if len(steps) != 1 else ''} "
        f"({enqueues[0]} to {enqueues[-1]}) in **{b['mode']}** mode and compares what they "
        "write with what the capture recorded. Nothing else is needed: Python with numpy and "
        "pyopencl, or a C++17 compiler, CMake and an OpenCL ICD loader.\n"
    )
    return out


def _run_it(ident: str, has_cpp: bool) -> list[str]:
    out: list[str] = []
    add = out.append
    add("## Run it\n")
    add(
        "```sh\npython replay.py --list-devices\npython replay.py --validate            "
        "# exit 0: PASS, 1: FAIL, 3: INCOMPLETE\n"
        "python replay.py --device pocl --repeat 20 --json\n"
        "```\n"
    )
    if has_cpp:
        add(
            f"```sh\n{build_shell('.', 'build')}\n./build/replay --list-devices\n"
            "./build/replay --validate\n```\n"
        )
        add(
            "`./build/replay` reads `manifest.json` from the current folder, else from the "
            "folder it was built from (`--bundle DIR` names another bundle).\n"
        )
    add(
        "Without `--device` both programs replay on the device that made the capture "
        f"({ident}), else on the device sharing the most leading words of its name, else "
        "on the first device that is not a simulator (Oclgrind), else on the first; each "
        "says which and why on stderr (`replay: device: ...`) and in `--json` "
        "(`device_choice`).\n"
    )
    add(
        "Options (both programs): `--list-devices`, `--device P:D|NAME` (a case-insensitive "
        "name substring; repeat it to replay on several devices), `--validate` (exit code), "
        "`--repeat N` (run N times, inputs restored, min/median/max of each stage: "
        "queued->submit, submit->start, start->end, host enqueue call; `replay.cpp` times "
        "each repetition without events, as an application runs, and runs it once more "
        "with an event per launch for the stages), `--json`, "
        "`--out DIR` (write each checked object as replayed), "
        "`--atol X --rtol X --ulp N` (tolerances for floating point), `--trace` (each "
        "enqueue on stderr before it runs: the last one named is the one that crashed), "
        "`--stream` (each finished step on stderr as one JSON line, `replay: step {...}`: "
        "what cltui's fleet keeps when a later enqueue crashes or hangs). "
        "Each device's output starts with its verdict: PASS only when every kernel enqueue "
        "was replayed and every output it should check was checked; otherwise one line says "
        "what was not done, with counts. Exit codes (with `--validate`): 0 PASS, 1 FAIL (a "
        "check differs, or the device could not run the bundle), 2 bad usage, or a damaged "
        "or bad bundle, 3 INCOMPLETE (nothing failed, but something was skipped, unchecked "
        "or not replayed). Before anything runs, both programs verify the bundle: "
        "`manifest.json` against `lib/cltui/replay/engine/manifest.schema.json` (the C++ "
        "program has it as `cpp/manifest_schema.hpp`), every path it names inside this "
        "folder (no absolute path, no `..`, no link, a regular file), every data file's "
        "size and sha256 against the manifest and `SHA256SUMS`; the first problem is one "
        "line (`bundle damaged: data/<sha256>.bin sha256 mismatch`, `bad manifest: steps: "
        "expected an array, got a string`) and exit 2, and nothing runs (a damaged data "
        "file is never reported as a FAIL of the device). On a device without shared "
        "virtual memory (an OpenCL 1.2 device) "
        "SVM allocations are emulated with buffers, and the output says so. Before the "
        "first enqueue both runners check what the device cannot run (a local size over its "
        "limits, fp64 or fp16 it lacks, images, image formats, allocations over its limits, "
        "local memory, the OpenCL C version): such an enqueue is not launched, the output "
        "says `cannot run` and why (`cannot_run` in `--json`), and the verdict is "
        "INCOMPLETE.\n"
    )
    return out


def _what_pass_means(manifest: Manifest) -> list[str]:
    b = manifest["bundle"]
    tol = manifest.get("tolerance", {})
    out: list[str] = []
    add = out.append
    add('## What "pass" means\n')
    add(
        "After each kernel, every memory object it was given is read back and compared with "
        "the capture's Post dump of that object:\n\n"
        "1. **equal**: byte for byte identical;\n"
        "2. **within**: integers (and bytes of unknown type) identical, and every floating-point "
        "element with `|replayed - captured| <= atol + rtol * |captured|` or at most `ulp` "
        "units in the last place apart (NaN matches NaN);\n"
        "3. **different**: anything else, or a different size.\n\n"
        "Where the capture holds only the layer's 64-bit hash of an object (`DumpBufferHashes`), "
        "the replayed bytes are hashed the same way and compared: equal or different, no "
        "tolerance (replay.py hashes with a one-work-item kernel on the device, replay.cpp on "
        "the host).\n\n"
        f"A run passes when no check is *different*. The manifest's tolerances are atol="
        f"{tol.get('atol', 0)}, rtol={tol.get('rtol', 0)}, ulp={tol.get('ulp', 0)}: "
        "on the device that made the capture a bit-exact replay is expected; other devices may "
        "round differently, so pass tolerances such as `--ulp 4` there.\n"
    )
    if b["mode"] == "chain":
        add(
            "In chain mode the objects keep their replayed contents from one kernel to the next. "
            "Where the capture shows that something other than a replayed kernel changed an "
            "object (a host write, a copy, a map), the object is reloaded from the capture "
            'before the next kernel ("reload"), and a *before* check reports how the replayed '
            "state compared with the captured one.\n"
        )
    elif b["mode"] == "isolated":
        add("In isolated mode every kernel starts from its own captured Pre dumps.\n")
    else:
        add(
            "In strict mode nothing is reloaded: *before* checks show where the chain departs "
            "from the capture.\n"
        )
    return out


def _variant(manifest: Manifest) -> list[str]:
    """What a variant changed (``cltui export --variant``): the bundle is not the capture's
    own configuration."""
    var = manifest.get("variant")
    if not var:
        return []
    name = f" {_code(var['name'])}" if var.get("name") else ""
    out = [
        f"This bundle carries the variant{name}: it replays the range WITH these changes "
        "(the expected outputs are still the capture's):\n"
    ]
    out += [f"- {line}" for line in var.get("lines", [])]
    out.append("")
    return out


def _changes(manifest: Manifest) -> list[str]:
    out: list[str] = []
    add = out.append
    changes = manifest.get("changes") or []
    if changes:
        add("Changes the capture shows between two replayed kernels:\n")
        for ch in changes:
            by = ", ".join(str(x) for x in ch.get("by") or []) or "something outside the range"
            what = "reloaded from the capture" if ch.get("action") == "reload" else "not reloaded"
            add(
                f"- before enqueue {ch['enqueue']}: {_code(ch.get('label', ch['mem']))} changed "
                f"after enqueue {ch.get('after')} by {_code(by)}: {what}"
            )
        add("")
    return out


def _enqueues(manifest: Manifest) -> list[str]:
    steps = manifest["steps"]
    out: list[str] = []
    add = out.append
    add("## The enqueues\n")
    add("| enqueue | kernel | global | local | captured start->end |")
    add("| ---: | --- | --- | --- | ---: |")
    for s in steps:
        t = s.get("captured_time") or {}
        dur = f"{t['start_to_end'] / 1000:.1f} us" if "start_to_end" in t else "-"
        loc = s["local"]
        local = "x".join(str(v) for v in loc) if loc else "NULL"
        glob = "x".join(str(v) for v in s["global"])
        add(f"| {s['enqueue']} | {_code(s['kernel'])} | {glob} | {local} | {dur} |")
    add("")
    return out


def _files(manifest: Manifest, has_cpp: bool) -> list[str]:
    dumps = [v for v in manifest["data"].values() if str(v.get("path", "")).startswith("data/")]
    unique = {str(v["path"]): int(v.get("size", 0)) for v in dumps}
    out: list[str] = []
    add = out.append
    add("## Files\n")
    add(
        "- `manifest.json`: the replay plan (format "
        f"`{manifest['format']}` v{manifest['version']}): programs with their build options, "
        "memory objects (buffers, images with their format and size, SVM), and per step the "
        "work sizes, arguments by kind, the inputs loaded before it, the checks after it; "
        "`data` maps each reference to its file; `bundle` says where it came from.\n"
        f"- `data/`: {len(unique)} distinct contents ({fmt_bytes(sum(unique.values()))}) for "
        f"{len(dumps)} references, each named by its SHA-256 and stored once however often "
        "the range uses it.\n"
        "- `kernels/`: the program sources (a device binary only where the capture has "
        "nothing else; it builds on the device named in the manifest, and is tried on a "
        "device named like it, whose driver may accept it: PoCL's on another CPU of the same "
        "target, NVIDIA's PTX on another NVIDIA GPU) and, under "
        "`kernels/include/`, the headers they include.\n"
        "- `replay.py`, `lib/`: the Python replay (`lib/cltui/replay/engine/` is cltui's own "
        "replay engine, copied whole and unchanged, with the four modules of cltui it imports: "
        "`errors.py`, `text/units.py`, `text/shellwords.py`, `capture/safeopen.py`).\n"
        + (
            "- `replay.cpp`, `cpp/*.hpp`, `CMakeLists.txt`: the same replay in C++17.\n"
            if has_cpp
            else ""
        )
        + "- `SHA256SUMS`: the sha256 of every file; the runners check the data files' "
        "against it before they run, and `sha256sum -c SHA256SUMS` checks them all.\n"
    )
    return out


_ORIGINS = {
    "pyopencl": "pyopencl's own package (its `cl` folder on the exporting machine)",
    "include-dir": "a folder the exporting user named (`--include-dir`)",
}


def _headers(manifest: Manifest) -> list[str]:
    """Which headers came from where, which includes are missing, which captured include
    folders were not read (a capture does not choose host files for a bundle)."""
    b = manifest["bundle"]
    copied = b.get("host_files", [])
    refused = b.get("refused_includes", [])
    missing = b.get("missing_includes", [])
    unread = b.get("unread_include_dirs", [])
    if not (copied or refused or missing or unread):
        return []
    out: list[str] = ["## Headers\n"]
    add = out.append
    if copied:
        add("Copied into `kernels/include/` from the exporting machine, only from pyopencl's "
            "package and the folders the exporting user named (never because the capture "
            "names a folder):\n")  # fmt: skip
        for h in copied:
            where = _ORIGINS.get(str(h.get("origin")), _code(h.get("origin")))
            add(f"- {_code(h['bundle_path'])} from {where}: {_code(h['host_path'])}")
        add("\nWhere this folder's path has a space, run the programs from it (or from "
            "`build/`): PoCL reads no header from an include folder whose name has a space, "
            "and both programs then name `kernels/include/` relative to the current folder.")
        add("")
    if refused or missing:
        add("Not in the bundle (it may not build from source where the compiler does not find "
            "them):\n")  # fmt: skip
        for r in refused:
            add(f"- {_code(r['program'])}: `#include` {_code(r['include'])} "
                f"(refused: {_code(r['why'])})")  # fmt: skip
        for m in missing[:_LISTED]:
            add(f"- {_code(m['program'])}: `#include` {_code(m['include'])} (found in no "
                "bundled folder)")  # fmt: skip
        if len(missing) > _LISTED:
            add(f"- and {len(missing) - _LISTED:,} more (`manifest.json` lists them all)")
        add("")
    if unread:
        add("Include folders the capture names that were not read (a capture does not choose "
            "host files for a bundle; `cltui export ... --include-dir DIR` adds a folder's "
            "headers):\n")  # fmt: skip
        for u in unread:
            lacks = ", ".join(_code(m) for m in u["missing"][:_LISTED]) or "none"
            if len(u["missing"]) > _LISTED:
                lacks += f" and {len(u['missing']) - _LISTED:,} more"
            add(f"- {_code(u['dir'])}: the source's includes not in the bundle: {lacks}")
        add("")
    return out


def _notes(manifest: Manifest) -> list[str]:
    b = manifest["bundle"]
    out: list[str] = []
    add = out.append
    notes = [*manifest.get("notes", []), *b.get("notes", [])]
    if notes:
        add("## Notes\n")
        for n in notes:
            add(f"- {_code(n)}")
        add("")
    return out
