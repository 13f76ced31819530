"""Property tests for the file-name grammar and sanitize_component."""

from __future__ import annotations

import re
import unicodedata

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from cltui.capture.files import parse_sampler_text
from cltui.capture.files.report import parse_report_text
from cltui.capture.names import (
    parse_dump_name,
    parse_mapunmap_name,
    parse_program_file_name,
    parse_replay_dir_name,
    parse_replay_file_name,
    parse_setkernelarg_name,
    sanitize_component,
    too_large_number,
)

PARSERS = [
    parse_dump_name,
    parse_setkernelarg_name,
    parse_replay_dir_name,
    parse_program_file_name,
    parse_mapunmap_name,
    parse_replay_file_name,
]

# kernel names: anything, including the separators the grammar uses
kernel_names = st.text(
    alphabet=st.one_of(
        st.sampled_from(list("_ArgBufferImageKernel0123456789x.bin()<>:*$, ~")),
        st.characters(exclude_categories=["Cs"]),
    ),
    max_size=60,
)
numbers = st.integers(min_value=0, max_value=10**7)
hex8 = st.integers(min_value=0, max_value=0xFFFFFFFF).map(lambda v: f"{v:08X}")
devs = st.lists(st.sampled_from(["CPU", "GPU", "ACC", "CUSTOM"]), min_size=1, max_size=4).map(
    lambda xs: "_".join(xs)
)


@given(st.text(max_size=200))
def test_parsers_never_raise(name: str) -> None:
    for parse in PARSERS:
        parse(name)
    parse_sampler_text(name)


@given(
    st.text(
        alphabet=st.sampled_from(list("Enqueue_KernelArgBufferImageCLI0123456789ABCDEFx.binraw")),
        max_size=80,
    )
)
def test_parsers_never_raise_on_near_misses(name: str) -> None:
    for parse in PARSERS:
        parse(name)


@given(st.binary(max_size=400))
def test_report_never_raises(data: bytes) -> None:
    rep = parse_report_text(data)
    assert all("\n" not in p.message for p in rep.problems)


@given(numbers, kernel_names, numbers, numbers)
def test_buffer_dump_roundtrip(e: int, k: str, i: int, m: int) -> None:
    p = parse_dump_name(f"Enqueue_{e:04d}_Kernel_{k}_Arg_{i}_Buffer_{m:04d}.bin")
    assert p is not None
    assert (p.enqueue, p.kernel, p.arg, p.mem_id, p.is_image) == (e, k, i, m, False)


@given(numbers, kernel_names, numbers, numbers, st.tuples(numbers, numbers, numbers), numbers)
def test_image_dump_roundtrip(
    e: int, k: str, i: int, m: int, region: tuple[int, int, int], bpp: int
) -> None:
    w, h, d = region
    p = parse_dump_name(
        f"Enqueue_{e:04d}_Kernel_{k}_Arg_{i}_Image_{m:04d}_{w}x{h}x{d}_{bpp}bpp.raw"
    )
    assert p is not None
    assert (p.enqueue, p.kernel, p.arg, p.mem_id) == (e, k, i, m)
    assert p.is_image and p.image_region == region and p.image_bpp == bpp


@given(numbers, kernel_names, numbers)
def test_setkernelarg_roundtrip(e: int, k: str, i: int) -> None:
    p = parse_setkernelarg_name(f"SetKernelArg_{e:04d}_Kernel_{k}_Arg_{i}.bin")
    assert p is not None and (p.enqueue, p.kernel, p.arg) == (e, k, i)


@given(numbers, kernel_names)
def test_replay_dir_roundtrip(e: int, k: str) -> None:
    p = parse_replay_dir_name(f"Enqueue_{e}_{k}")
    assert p is not None and (p.enqueue, p.kernel) == (e, k)


@given(st.one_of(st.none(), numbers), hex8, numbers, hex8, devs, st.sampled_from(range(7)))
def test_program_names_roundtrip(
    num: int | None, h: str, c: int, o: str, dev: str, which: int
) -> None:
    pre = "CLI_" if num is None else f"CLI_{num:04d}_"
    name, expected = [
        (f"{pre}{h}_source.cl", ("source", None, None, None)),
        (f"{pre}{h}_{c:04d}_{o}_options.txt", ("options", c, o, None)),
        (f"{pre}{h}_{c:04d}_{o}_compile_options.txt", ("compile_options", c, o, None)),
        (f"{pre}{h}_{c:04d}_{o}_link_options.txt", ("link_options", c, o, None)),
        (f"{pre}{h}_{c:04d}_{o}_{dev}_build_log.txt", ("build_log", c, o, dev)),
        (f"{pre}{h}_{c:04d}_{o}_{dev}.bin", ("output_binary", c, o, dev)),
        (f"{pre}{h}_{dev}.bin", ("input_binary", None, None, dev)),
    ][which]
    p = parse_program_file_name(name)
    assert p is not None
    # OmitProgramNumber names whose hash is all digits could be read with a program number only
    # if the rest still fit: the fixed tails make that impossible, so the parse is exact.
    assert (p.number, p.hash) == (num, h)
    assert (p.kind, p.compile_count, p.options_hash, p.device) == expected


_FORBIDDEN = re.compile(r'[/\\\x00<>:"|?*]')


def _check_safe(out: str, max_len: int) -> None:
    assert out
    assert not _FORBIDDEN.search(out)
    assert ".." not in out and out not in (".", "..")
    assert not out.startswith((".", "-", " ")) and not out.endswith((".", " "))
    assert all(ch.isprintable() for ch in out)
    assert len(out.encode("utf-8")) <= max(32, max_len)
    assert unicodedata.normalize("NFC", out) == out
    assert out.split(".")[0].upper() not in {"CON", "PRN", "AUX", "NUL", "COM1", "LPT1"}


@given(st.text(max_size=300), st.integers(min_value=1, max_value=255))
def test_sanitize_is_safe(name: str, max_len: int) -> None:
    _check_safe(sanitize_component(name, max_len), max_len)
    _check_safe(sanitize_component(name, max_len, fold_case=True), max_len)


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=300))
def test_sanitize_keeps_safe_names(name: str) -> None:
    out = sanitize_component(name)
    if out == name:
        return
    assert re.search(r"-h[0-9a-f]{12}$", out)


@settings(max_examples=300)
@given(st.text(max_size=120), st.text(max_size=120), st.integers(min_value=1, max_value=120))
def test_sanitize_distinct_inputs_distinct_outputs(a: str, b: str, max_len: int) -> None:
    assume(a != b)
    assert sanitize_component(a, max_len) != sanitize_component(b, max_len)
    fa = sanitize_component(a, max_len, fold_case=True)
    fb = sanitize_component(b, max_len, fold_case=True)
    assert fa.casefold() != fb.casefold()


@given(st.sampled_from(["x", "X", "ab", "aB", "Ab"]), st.sampled_from(["x", "X", "ab", "aB", "AB"]))
def test_sanitize_case_collisions(a: str, b: str) -> None:
    assume(a != b)
    fa = sanitize_component(a, fold_case=True)
    fb = sanitize_component(b, fold_case=True)
    assert fa.casefold() != fb.casefold()


def test_sanitize_examples() -> None:
    assert sanitize_component("saxpy") == "saxpy"
    assert sanitize_component("unsigned short") == "unsigned short"
    out = sanitize_component("foo(int*)")
    assert out.startswith("foo(int_)-h")
    up = sanitize_component("../../etc/passwd")
    assert "/" not in up and ".." not in up and re.fullmatch(r"[^.].*etc_passwd-h[0-9a-f]{12}", up)
    assert sanitize_component("CON").startswith("_CON-h")
    long = sanitize_component("k" * 500, 100)
    assert len(long) == 100 and long.startswith("k" * 80)
    assert sanitize_component("a" * 500, 100) != sanitize_component("a" * 501, 100)
    assert sanitize_component("") != sanitize_component("_")


# ---- numbers past 64 bits: refused (the name is skipped with a problem), never raised ----

huge = st.integers(min_value=2**63, max_value=10**60)


@settings(max_examples=100, deadline=None)
@given(e=huge, k=kernel_names, i=numbers, m=numbers)
def test_numbers_past_64_bits_are_refused(e: int, k: str, i: int, m: int) -> None:
    names = [
        (parse_dump_name, f"Enqueue_{e}_Kernel_{k}_Arg_{i}_Buffer_{m:04d}.bin"),
        (parse_dump_name, f"Enqueue_{i:04d}_Kernel_{k}_Arg_{e}_Buffer_{m:04d}.bin"),
        (parse_dump_name, f"Enqueue_{e}_Kernel_{k}_Arg_{i}_Image_{m:04d}_1x1x1_32bpp.raw"),
        (parse_setkernelarg_name, f"SetKernelArg_{e}_Kernel_{k}_Arg_{i}.bin"),
        (parse_mapunmap_name, f"Map_Buffer_{m:04d}_Offset_0000_Enqueue_{e}.bin"),
        (parse_replay_dir_name, f"Enqueue_{e}_{k}"),
        (parse_replay_file_name, f"Argument{e}.bin"),
        (parse_program_file_name, f"CLI_{e}_ABCDEF01_source.cl"),
    ]
    for parse, name in names:
        assert parse(name) is None, name
        assert too_large_number(name), name


@given(name=st.text(alphabet="0123456789_EnqueuKrlAgBfbi.", max_size=255))
def test_too_large_number_never_raises(name: str) -> None:
    too_large_number(name)
