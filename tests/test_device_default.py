"""The default replay device: the capture's own, else the one named most like it."""

from __future__ import annotations

from typing import Any

from cltui.replay.devices import closest_device

GRIND = {"id": "0:0", "name": "Oclgrind Simulator"}
POCL_INTEL = {"id": "1:0", "name": "pthread-skylake-avx512-Intel(R) Xeon(R) Processor"}
POCL_AMD = {"id": "1:0", "name": "pthread-skylake-avx512-AMD EPYC"}
H200 = {"id": "2:0", "name": "NVIDIA H200"}
DEVICES: list[dict[str, Any]] = [GRIND, POCL_INTEL, H200]


def test_the_capture_s_own_device_wins() -> None:
    assert closest_device([GRIND, POCL_AMD], ["pthread-skylake-avx512-AMD EPYC"]) == (
        POCL_AMD,
        "captured",
    )
    # exact even when a longer common prefix exists elsewhere
    assert closest_device(DEVICES, ["NVIDIA H200"]) == (H200, "captured")


def test_a_device_named_like_the_capture_s_is_chosen_next() -> None:
    assert closest_device(DEVICES, ["pthread-skylake-avx512-AMD EPYC"]) == (POCL_INTEL, "similar")
    assert closest_device(DEVICES, ["NVIDIA H100 80GB HBM3"]) == (H200, "similar")
    # the longest run of leading words decides, whatever the order of the devices
    other = {"id": "3:0", "name": "pthread-haswell-AMD EPYC"}
    assert closest_device([other, POCL_INTEL], ["pthread-skylake-avx512-AMD EPYC"]) == (
        POCL_INTEL,
        "similar",
    )


def test_no_common_word_falls_back_to_the_first_device() -> None:
    assert closest_device(DEVICES, ["gfx1100"]) == (GRIND, "first")
    assert closest_device(DEVICES, []) == (GRIND, "first")
    assert closest_device([], ["gfx1100"]) == (None, "none")


def test_name_likeness_counts_leading_words() -> None:
    from cltui.replay.engine import name_likeness

    assert name_likeness("pthread-skylake-avx512-AMD EPYC", POCL_INTEL["name"]) == 3
    assert name_likeness("NVIDIA H100 80GB HBM3", "NVIDIA H200") == 1
    assert name_likeness("Oclgrind Simulator", POCL_INTEL["name"]) == 0
    assert name_likeness("NVIDIA_H200", "nvidia h200") == 2  # case, '_' and ' ' alike


def test_pick_binary_prefers_the_device_then_the_most_alike() -> None:
    from cltui.replay.engine import _pick_binary

    amd = {"data": "a", "device": "pthread-skylake-avx512-AMD EPYC"}
    haswell = {"data": "h", "device": "pthread-haswell-AMD EPYC"}
    h100 = {"data": "n", "device": "NVIDIA H100"}
    assert _pick_binary([haswell, amd], "pthread-skylake-avx512-AMD EPYC") == (amd, "binary")
    assert _pick_binary([haswell, amd, h100], POCL_INTEL["name"]) == (
        amd,
        "binary made on pthread-skylake-avx512-AMD EPYC",
    )
    assert _pick_binary([amd, h100], "NVIDIA H200") == (h100, "binary made on NVIDIA H100")
    assert _pick_binary([amd, h100], "Oclgrind Simulator") == (None, "")
    assert _pick_binary([], "NVIDIA H200") == (None, "")
