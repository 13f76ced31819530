"""What a capture says about its devices (name, platform, type): the bundle manifest's
``bundle.capture.device`` and the default replay device's input."""

from __future__ import annotations

from pathlib import Path

from cltui.capture import open_capture
from cltui.capture.devinfo import captured_devices, device_identities
from tests.conftest import copy_capture

POCL = "pthread-skylake-avx512-AMD EPYC"


def test_pocl_and_oclgrind_captures_name_their_platform_and_type(
    images_svm: Path, pyocl_oclgrind: Path
) -> None:
    assert device_identities(open_capture(images_svm).log) == {
        POCL: {
            "name": POCL,
            "platform": "Portable Computing Language",
            "type": "CPU",
            "version": None,  # the log does not hold clGetDeviceInfo's answers
            "driver": None,
        }
    }
    (grind,) = device_identities(open_capture(pyocl_oclgrind).log).values()
    assert grind["platform"] == "Oclgrind" and grind["type"] == "CPU | GPU | ACCELERATOR"


def test_without_the_listing_call_the_platform_is_unknown(images_svm: Path, tmp_path: Path) -> None:
    cap = copy_capture(images_svm, tmp_path)
    log = cap / "clintercept_log.txt"
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(ln for ln in lines if "clGetDeviceIDs" not in ln))
    (ident,) = device_identities(open_capture(cap).log).values()
    assert ident["name"] == POCL and ident["platform"] is None and ident["type"] == "CPU"


def test_names_the_queues_do_not_know_keep_only_their_name(images_svm: Path) -> None:
    log = open_capture(images_svm).log
    assert [i["platform"] for i in captured_devices(log, [POCL, "gfx1100"])] == [
        "Portable Computing Language",
        None,
    ]
    assert captured_devices(None, ["x"]) == [
        {"name": "x", "platform": None, "type": None, "version": None, "driver": None}
    ]
