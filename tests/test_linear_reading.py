"""Reading is linear whatever the content: reproducers of the quadratic passes (each a small
mutation of a copy of a shared capture, or the input that made a helper quadratic), run
under the hang detector; odd names and duplicated lines give a problem, not a failure."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

import cltui.capture.log.grammar as li
from cltui.capture import open_capture
from cltui.capture import preprocess as pre
from cltui.capture import signature as sig
from cltui.capture.log import build_index
from cltui.capture.names import (
    parse_dump_name,
    parse_replay_dir_name,
    parse_setkernelarg_name,
    too_large_number,
)
from cltui.replay.engine.builds import _build_options
from cltui.replay.experiment.apply import edit_options
from cltui.replay.experiment.variant import Variant
from cltui.text.shellwords import include_options, include_spans, replace_spans

from .conftest import capture_path
from .hang import bounded

MB = 1 << 20


def _edit_options(text: str) -> str:
    """A variant that removes an option, adds one and defines a macro the text defines."""
    return edit_options(text, Variant("0", options_add=("-cl-fast-relaxed-math",),
                                      options_remove=("-cl-mad-enable",),
                                      defines=(("A", "2"),)))  # fmt: skip


def _cut_all_includes(text: str) -> str:
    """Every include folder of ``text`` cut, as the export cuts the ones it bundles."""
    return replace_spans(text, [(start, end, None) for start, end, _d in include_spans(text)])


def _linked_copy(root: Path, work: Path, log: bytes) -> Path:
    """A capture folder: the mutated log, links to the real capture's other entries."""
    d = work / root.name
    d.mkdir()
    for entry in os.listdir(root):
        if entry != "clintercept_log.txt":
            os.symlink(root / entry, d / entry)
    (d / "clintercept_log.txt").write_bytes(log)
    return d


def _enqueue_lines(log: bytes) -> list[tuple[int, int, int]]:
    """(counter, line start, line end) of every ``>>>> ... clEnqueue`` line."""
    out = []
    for m in re.finditer(rb"(?m)^>>>> [^\n]*clEnqueue\w+[^\n]*; EnqueueCounter: (\d+)$", log):
        out.append((int(m.group(1)), m.start(), m.end()))
    return out


@pytest.mark.child
def test_real_coldcache_capture_opens(tmp_path: Path) -> None:
    root = capture_path("pyopencl_lib_coldcache")

    def run() -> None:
        cap = open_capture(root)
        try:
            # the log's own enqueues; the rest are rebuilt from the dump files (test_recovery)
            assert cap.numbers[~cap.recovered].tolist() == list(range(101, 123))
            assert bool(cap.recovered.any())
            assert any("NUL bytes" in p.message for p in cap.problems)
            for n in cap.numbers.tolist():
                cap.enqueue(int(n))
            cap.info()
        finally:
            cap.close()

    bounded("open pyopencl_lib_coldcache (a 929 KB NUL run)", run)


@pytest.mark.child
def test_nul_runs_head_middle_tail_and_before_a_tag(tmp_path: Path) -> None:
    root = capture_path("pyopencl_lib_pocl")
    log = (root / "clintercept_log.txt").read_bytes()
    n = len(log)
    runs = [(0, 2000), (n // 3, n // 3 + 100_000), (n // 2, n // 2 + 300)]
    damaged = bytearray(log)
    for a, b in runs:
        damaged[a:b] = b"\x00" * (b - a)
    damaged += b"\x00" * 50_000  # a NUL tail
    # a megabyte NUL run right before the footer tag: the old `\x00+<tag>` retried from
    # each NUL of the run (minutes)
    foot = bytes(damaged).rindex(b"\nCLIntercept is shutting down")
    damaged[foot + 1 : foot + 1] = b"\x00" * MB
    d = _linked_copy(root, tmp_path, bytes(damaged))
    kept = {
        c for c, s, e in _enqueue_lines(log) if all(e <= a or s >= b for a, b in runs) and s > 2000
    }
    everything = {c for c, _, _ in _enqueue_lines(log)}

    def run() -> None:
        idx = build_index(d / "clintercept_log.txt")
        try:
            got = set(idx.numbers.tolist())
            assert kept <= got <= everything, (sorted(kept - got), sorted(got - everything))
            assert idx.shutdowns == 1  # the tag after the NUL run is read
            assert any("NUL bytes (first at byte 0)" in p.message for p in idx.problems)
        finally:
            idx.close()
        cap = open_capture(d)
        try:
            for k in cap.numbers.tolist()[:20]:
                cap.enqueue(int(k))
        finally:
            cap.close()

    bounded("pyopencl_lib_pocl with NUL runs at the head, middle, tail and before a tag", run)


@pytest.mark.child
def test_a_long_word_in_enqueue_and_creator_lines(tmp_path: Path) -> None:
    root = capture_path("pyopencl_lib_pocl")
    log = (root / "clintercept_log.txt").read_bytes()
    word = b"w" * MB
    # a megabyte word in the arguments of kernel enqueue 5 (``show`` decodes it with _kv)
    log = re.sub(
        rb"(clEnqueueNDRangeKernel\( axpbyz \): queue = 0x[0-9a-f]+, )(kernel = [^\n]*"
        rb"EnqueueCounter: 5\n)",
        lambda m: m.group(1) + word + b" " + m.group(2),
        log,
        count=1,
    )
    # and in a buffer's creation line (indexed through _kv and _flags)
    log = log.replace(b"clCreateBuffer: context = ", b"clCreateBuffer: " + word + b" context = ", 1)
    assert log.count(word) == 2
    d = _linked_copy(root, tmp_path, log)

    def run() -> None:
        cap = open_capture(d)
        try:
            e = cap.enqueue(5)
            assert e.row.kernel == "axpbyz"
            for n in cap.numbers.tolist()[:12]:
                cap.enqueue(int(n))
        finally:
            cap.close()

    bounded("show of an enqueue whose line holds a 1 MB word", run)


@pytest.mark.child
def test_quadratic_helpers_are_linear() -> None:
    cases = {
        "_kv of a 1 MB word": lambda: li.kv_pairs("x" * MB + " = 1, y = 2"),
        "_kv of 100k words": lambda: li.kv_pairs("ab-cd>e " * 100_000),
        "_flags of 1 MB of blanks": lambda: li._flags("CL_MEM" + " " * MB + "x (1)"),
        "the queue device of repeated device types": lambda: li._queue_device(
            "device = " + " (CL_DEVICE_TYPE_CPU" * 100_000
        ),
        "the enqueue pattern on a word of 200k clEnqueue": lambda: list(
            li._ENQ_RE.finditer(b"clEnqueue" * 200_000)
        ),
        "device times on a line of 100k heads": lambda: li._DEVTIME_ANY_RE.findall(
            b"Device Time for " * 100_000
        ),
        "build options of one 1 MB word": lambda: sig.parse_build_options("-D" + "x" * MB),
        "the kernel span in 50k unbalanced headers": lambda: sig.kernel_span(
            "__kernel void k(" * 50_000, "k"
        ),
        "parameter spans in 50k definitions": lambda: sig.param_spans(
            "__kernel void k(int a){}" * 50_000, "k"
        ),
        "skeleton of 500k comment openers": lambda: pre.skeletonize("/*" * 500_000),
        "skeleton of 200k top-level blocks": lambda: pre.skeletonize("{}" * 200_000),
        "the masked source of 300k escaped quotes": lambda: sig.kernel_span('"\\' * 300_000, "k"),
        "the driver's options of a 4 MB word": lambda: _build_options(
            "-D X=" + "(" * (4 * MB) + " -I /x -I '/a b'"
        ),
        "a variant's options over 200k words": lambda: _edit_options(
            "-D A=1 -cl-mad-enable " * 100_000
        ),
        "1M include folders cut from the start": lambda: _cut_all_includes("-I a " * 1_000_000),
        "the -I walk over 1M words": lambda: include_options(["-I", "d", "-Ie"] * 350_000),
    }
    for desc, fn in cases.items():
        bounded(desc, fn)
    # the results where they are small enough to check
    assert li.kv_pairs("flags = CL_MEM_READ_WRITE (1), size = 4, x>y = a-b") == {
        "flags": "CL_MEM_READ_WRITE (1)",
        "size": "4",
        "x>y": "a-b",
    }
    assert li._flags(" CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR (21) ") == (
        "CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR"
    )
    assert li._flags("CL_MEM (x1)") == "CL_MEM (x1)"
    assert li._queue_device("context = 0x1, device = CPU dev (CL_DEVICE_TYPE_CPU) (x)") == (
        "CPU dev"
    )
    assert li._queue_device("device = a (CL_DEVICE_TYPE_CPU) x (CL_DEVICE_TYPE_GPU) (y") == (
        "a (CL_DEVICE_TYPE_CPU) x"
    )
    assert sig.parse_build_options('-D A=\'1 2\' -I "x y" -DB=\\"q\\"').macros == [
        ("D", "A", "1 2"),
        ("D", "B", '"q"'),
    ]


def test_duplicated_enqueue_line(tmp_path: Path) -> None:
    root = capture_path("pyopencl_lib_pocl")
    log = (root / "clintercept_log.txt").read_bytes()
    lines = log.split(b"\n")
    i = next(
        k
        for k, ln in enumerate(lines)
        if b"clEnqueueNDRangeKernel" in ln and ln.endswith(b"EnqueueCounter: 5")
    )
    j = next(
        k for k, ln in enumerate(lines) if ln.endswith(b"EnqueueCounter: 40") and b"clEnqueue" in ln
    )
    lines.insert(i + 1, lines[i])
    lines.insert(j + 2, lines[j + 1])
    d = _linked_copy(root, tmp_path, b"\n".join(lines))
    orig = build_index(root / "clintercept_log.txt")
    idx = build_index(d / "clintercept_log.txt")
    try:
        assert idx.numbers.tolist() == orig.numbers.tolist()  # 123, each once
        assert (idx.device_times == orig.device_times).all()
        dup = [p.message for p in idx.problems if "more than one enqueue line" in p.message]
        assert len(dup) == 1 and "EnqueueCounter 5, 40 appear" in dup[0], dup
    finally:
        idx.close()
        orig.close()


def test_two_sessions_repeat_numbers_without_a_duplicate_problem(tmp_path: Path) -> None:
    root = capture_path("pyopencl_lib_pocl")
    log = (root / "clintercept_log.txt").read_bytes()
    d = _linked_copy(root, tmp_path, log + log)
    idx = build_index(d / "clintercept_log.txt")
    try:
        assert len(idx.numbers) == 246
        assert not [p for p in idx.problems if "more than one enqueue line" in p.message]
    finally:
        idx.close()


@pytest.mark.child
def test_a_number_past_64_bits_skips_one_file(tmp_path: Path) -> None:
    src = capture_path("pyopencl_lib_pocl")
    root = tmp_path / "cap"
    shutil.copytree(src, root, symlinks=True)
    huge = "9999999999999999999999"
    pre = root / "memDumpPreEnqueue"
    one = sorted(pre.iterdir())[0]
    bad_dump = f"Enqueue_{huge}_Kernel_k_Arg_5_Buffer_0000.bin"
    shutil.copyfile(one, pre / bad_dump)
    ska = root / "SetKernelArg"
    bad_ska = f"SetKernelArg_{huge}_Kernel_k_Arg_0.bin"
    shutil.copyfile(sorted(ska.iterdir())[0], ska / bad_ska)
    (root / "Replay" / f"Enqueue_{huge}_k").mkdir()
    for p in root.rglob("*"):
        p.chmod(p.stat().st_mode | 0o200)

    def run() -> None:
        cap = open_capture(root)
        try:
            assert len(cap) == 123
            why = {p.where: p.message for p in cap.problems if "64 bits" in p.message}
            assert {Path(k).name for k in why} >= {bad_dump, bad_ska, f"Enqueue_{huge}_k"}, why
            for n in cap.numbers.tolist()[:5]:
                cap.enqueue(int(n))
            cap.info()
        finally:
            cap.close()

    bounded("a capture with dump, SetKernelArg and Replay names past 64 bits", run)
    assert parse_dump_name(bad_dump) is None and too_large_number(bad_dump)
    assert parse_setkernelarg_name(bad_ska) is None and too_large_number(bad_ska)
    assert parse_replay_dir_name(f"Enqueue_{huge}_k") is None
    assert not too_large_number("Enqueue_0001_Kernel_k_Arg_0_Buffer_0002.bin")
    assert parse_dump_name(f"Enqueue_{2**63 - 1}_Kernel_k_Arg_0_Buffer_0002.bin") is not None


@pytest.mark.child
def test_unclosed_literals_do_not_make_the_preprocessor_quadratic() -> None:
    """A line of ``"\\`` pairs (or ``'\\``): pcpp tried a literal at every quote, each to the
    end of the line (20,000 characters took 2.6 s, 400,000 would take ~20 minutes)."""
    kernel = "__kernel void k(__global int* a) { a[0] = 1; }\n"
    for unit in ('"\\', "'\\", "\"'\\"):
        junk = unit * (400_000 // len(unit))

        def run(junk: str = junk) -> None:
            sigs = sig.parse_program(kernel + junk + "\n" + kernel.replace("k(", "k2("), "")
            assert "k" in sigs.kernels

        bounded(f"a source with a {len(junk)}-character line of {unit!r}", run)


def test_unclosed_literals_become_spaces_and_closed_ones_stay() -> None:
    d = pre.defuse_literals
    assert d("char c = 'a'; // it's\n\"ok\" \"bad\n") == "char c = 'a'; // it's\n\"ok\"  bad\n"
    assert d("/* it's */ x = 'a';") == "/* it's */ x = 'a';"  # a quote in a comment
    assert d('"a\\"b" \'\\\'\'') == '"a\\"b" \'\\\'\''  # escaped quotes inside literals
    assert d('"\\\\"x"') == '"\\\\"x '  # an escaped backslash ends the escape
    assert d('"abc\\\ndef"') == '"abc\\\ndef"'  # a continued line holds the literal
    assert d('/* open "x\n') == '/* open  x\n'  # an unclosed comment is no comment
    assert d('"\\"\\"\\"') == ' \\ \\ \\ '  # every quote on the first one's escape path
    text = "plain text, no quotes\n" * 3
    assert d(text) is text


@pytest.mark.child
def test_binary_garbage_in_a_source_is_left_out_and_the_kernels_around_it_parse() -> None:
    """Random bytes (a damaged source): pcpp spent a token and an error on each byte (a
    2 MB one took ~40 s); lines holding control characters are left out, with a warning."""
    import random

    junk = random.Random(3).randbytes(2_000_000).decode("latin-1")
    head = "__kernel void before(__global int* a) { a[0] = 1; }\n"
    tail = "\n__kernel void after(__global float* b, int n) { b[n] = 0; }\n"

    def run() -> None:
        _text, _missing, warnings, _sk = sig.preprocess(head + junk + tail, "")
        assert any("hold control characters" in w for w in warnings), warnings
        # after random bytes anything may follow (an open comment, an open brace), as for a
        # compiler; lines of binary data are left out whole, so what follows them parses
        assert "before" in sig.parse_program(head + junk + tail, "").kernels
        lines = "".join(f"\x1b[{i}m{{ /* \x07\n" for i in range(100_000))
        kernels = sig.parse_program(head + lines + tail, "").kernels
        assert {"before", "after"} <= set(kernels), sorted(kernels)
        assert [p.name for p in kernels["after"].params] == ["b", "n"]

    bounded("a source with 2 MB of random bytes between two kernels", run)


@pytest.mark.child
def test_a_transfer_line_with_a_long_word_is_split_in_linear_time() -> None:
    """``key = value`` of a transfer's log line (plan/transfers.py): the key pattern retried
    at every character of a word of 200 KB (a fuzz input took over 200 CPU seconds)."""
    from cltui.replay.plan.transfers import _line_kv

    line = "clEnqueueFillBuffer( queue = 0x1, buffer = 0x2, pattern = < 1, 2 >, size = 8 )"
    assert _line_kv(line) == {
        "queue": "0x1", "buffer": "0x2", "pattern": "< 1, 2 >", "size": "8 )"
    }  # fmt: skip
    for junk in ("w" * 2_000_000, "a = <" * 400_000, "a = <b, " * 250_000):
        bounded(f"_line_kv of a line of {junk[:8]!r}...", lambda junk=junk: _line_kv(junk))


@pytest.mark.child
def test_the_source_view_scans_unclosed_literals_in_linear_time() -> None:
    """The app's comment scan (highlight.py) retried a string at every quote of a line of
    ``"\\`` pairs, each to the end of the line."""
    from cltui.tui.highlight import _comment_starts

    for unit in ('"\\', "'\\", "/* '\n*/"):
        src = unit * (2_000_000 // len(unit))
        bounded(f"the comment scan of {unit!r} repeated",
                lambda src=src: _comment_starts(src, src.count("\n") + 1))  # fmt: skip


@pytest.mark.child
@pytest.mark.parametrize(
    ("field", "pattern"),
    [
        ("a Device Time value", rb"(Device Time for [^\n]*?\(enqueue \d+\) = )\d+"),
        ("a clSetKernelArg size", rb"(clSetKernelArg[^\n]*? size = )\d+"),
        ("a clSetKernelArg index", rb"(clSetKernelArg[^\n]*?index = )\d+"),
        ("Num Args", rb"(Num Args: )\d+"),
        ("a program number", rb"(program number = )\d+"),
    ],
)
def test_numbers_of_5000_digits_in_log_fields(tmp_path: Path, field: str, pattern: bytes) -> None:
    """int() refuses more than 4,300 digits (ValueError): one such number in a Device Time
    line kept the whole capture from opening, one in a clSetKernelArg size the enqueue from
    decoding (found by the long fuzz run). Such a field is unreadable; the rest reads."""
    from .conftest import copy_capture

    root = copy_capture(capture_path("images_svm_pocl"), tmp_path)
    log = root / "clintercept_log.txt"
    data, n = re.subn(pattern, lambda m: m.group(1) + b"9" * 5000, log.read_bytes())
    assert n, field
    log.write_bytes(data)

    def run() -> None:
        cap = open_capture(root)
        try:
            assert len(cap) == 11
            for k in cap.numbers.tolist():
                enq = cap.enqueue(int(k))
                bad = [p.message for p in enq.problems if "could not decode" in p.message]
                assert not bad, bad
            cap.info()
        finally:
            cap.close()

    bounded(f"a capture with {field} of 5000 digits", run)


@pytest.mark.child
def test_a_log_line_of_half_a_million_enqueue_tags(tmp_path: Path) -> None:
    """A tag repeated 500,000 times inside an enqueue line made a kernel name of 14 MB that
    the source search compiled into a pattern (over 20 CPU seconds): a name that is no C
    identifier names no definition."""
    from .conftest import copy_capture

    root = copy_capture(capture_path("images_svm_pocl"), tmp_path)
    log = root / "clintercept_log.txt"
    data = log.read_bytes()
    at = data.index(b"clEnqueueNDRangeKernel( ") + len(b"clEnqueueNDRangeKernel( ")
    log.write_bytes(data[:at] + b">>>> clEnqueueNDRangeKernel" * 500_000 + data[at:])

    def run() -> None:
        cap = open_capture(root)
        try:
            for k in cap.numbers.tolist():
                cap.enqueue(int(k))
            cap.info()
        finally:
            cap.close()

    bounded("a capture with 500,000 enqueue tags in one line", run)
    assert sig.kernel_span("__kernel void k(int a) {}", ">>>> k") is None


@pytest.mark.child
def test_kernel_definition_search_over_unclosed_attributes() -> None:
    """The capture's search for a kernel's program (and for every kernel a source defines)
    scanned lazily to the end of the source from each ``kernel __attribute__((``: 440 KB
    took 33 s. Attribute parentheses are matched now."""
    from cltui.capture.decode.enqueue_program import _ANY_KERNEL_DEF_RE, _KERNEL_DEF_RE

    one = re.compile(_KERNEL_DEF_RE.format("k"), re.DOTALL)
    real = (
        "__kernel __attribute__((reqd_work_group_size(64, 1, 1))) void k(__global int* a) {}\n"
        "KERNEL REQD_WG_SIZE(64, 1, 1) void k2(int b) {}\n"
        "__kernel __attribute__((vec_type_hint(float4))) __attribute__((x)) void k3() {}\n"
    )
    assert one.search(real) and _ANY_KERNEL_DEF_RE.findall(real) == ["k", "k2", "k3"]
    junk = "kernel __attribute__((" * 100_000

    def run() -> None:
        assert one.search(junk) is None and _ANY_KERNEL_DEF_RE.findall(junk) == []

    bounded("the kernel definition patterns over 100,000 unclosed attributes", run)


@pytest.mark.child
def test_a_line_of_repeated_device_time_tags_is_linear(tmp_path: Path) -> None:
    """The named Device Time lines of lost enqueues (recovery): a line of 350,000 repeated
    ``Device Time for `` tags hung the lazy-name regex (the long fuzz run's one hang); a
    real line among them is still found."""
    from cltui.capture.recovery.logfacts import named_device_times

    log = tmp_path / "clintercept_log.txt"
    real = (b"Device Time for saxpy (enqueue 7) = 10 ns (queued -> submit), 20 ns (submit -> "
            b"start), 30 ns (start -> end)\n")  # fmt: skip
    log.write_bytes(b"Device Time for " * 350_000 + b"\n" + real
                    + b" (enqueue 9) = 1 ns (queued -> submit), 2 ns (submit -> start), 3 ns "
                    b"(start -> end)\n")  # fmt: skip

    def run() -> None:
        found = named_device_times(log, lambda n: True)
        assert list(found) == [7] and found[7][0] == "saxpy", found

    bounded("a line of repeated Device Time tags", run)
