"""Build options are split exactly as ``shlex.split`` splits them.

The fuzz campaign (``tests/fuzz_mutations.py``, kind ``long_word``) found that a 1 MB word in a
capture's ``*_options.txt`` kept ``show``, ``info`` and a replay plan busy for minutes
(``shlex`` grows a word one character at a time); the linear splitter that replaces it (branch
h1) must give the same words.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cltui.capture.signature import parse_build_options
from cltui.text.shellwords import split_words as _split_options


def _shlex(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


@given(st.text(alphabet=st.sampled_from(list(" \t\r\n'\"\\ab=-ID\x00\u00e9\x0b")), max_size=24))
def test_split_is_shlex_split(text: str) -> None:
    assert _split_options(text) == _shlex(text)


@given(st.text(max_size=60))
def test_split_is_shlex_split_on_any_text(text: str) -> None:
    assert _split_options(text) == _shlex(text)


def test_real_options() -> None:
    text = "-D A=1 -DB='x y' -I \"/opt/my dir\" -cl-std=CL2.0 -D 'Q=\"s\"' -D E=a\\ b"
    assert _split_options(text) == shlex.split(text)
    opts = parse_build_options(text)
    assert ("D", "B", "x y") in opts.macros and "/opt/my dir" in opts.include_dirs


def test_include_options_is_the_one_walk_over_minus_i() -> None:
    """The export (folders to bundle) and the engine (folders that exist here) walk the same
    words: ``-I DIR`` and ``-IDIR`` are folders, in place; a trailing ``-I`` is a word."""
    from cltui.export.includes import split_include_options
    from cltui.replay.engine.builds import _build_options
    from cltui.text.shellwords import include_options

    words = _split_options("-D A=1 -I /x -I'/my dir' -cl-mad-enable -Iinc -I")
    assert include_options(words) == [
        ("-D", None), ("A=1", None), ("-I", "/x"), ("-I", "/my dir"),
        ("-cl-mad-enable", None), ("-I", "inc"), ("-I", None)]  # fmt: skip
    assert split_include_options("-D A=1 -I /x -Iinc -O2") == (["/x", "inc"], ["-D", "A=1", "-O2"])
    # a folder that exists and one that does not (drivers pass over it): both as captured
    text = "-D A=1  -I /tmp -I/no/such/dir -O2"
    options, notes = _build_options(text)
    assert options == text
    assert notes == ["include path /no/such/dir does not exist here: given as captured"]


def test_a_captured_include_folder_with_a_space_is_named_from_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PoCL reads no header from an ``-I`` folder with a space in its name: one that exists
    here is named relative to the current folder where that has none (include_spelling);
    the rest of the text stays as captured."""
    from cltui.replay.engine.builds import _build_options

    inc = tmp_path / "my headers" / "inc"
    inc.mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "my headers")
    options, _notes = _build_options(f"-D  A=1 -I {shlex.quote(str(inc))} -D Q='x'")
    assert options == "-D  A=1 -I inc -D Q='x'"
    monkeypatch.chdir(tmp_path)  # only through the space from here: as captured
    options, _notes = _build_options(f'-I "{inc}"')
    assert options == f'-I "{inc}"'


def test_a_current_folder_that_is_gone_names_no_relative_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cltui.replay.engine.base import include_spelling
    from cltui.replay.engine.builds import _build_options

    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    assert include_spelling("/tmp/b x/inc") == "/tmp/b x/inc"
    assert include_spelling("/opt/inc") == "/opt/inc"
    text = "-D A=1 -I inc -I '/no such/dir'"  # from nowhere, neither is found: as captured
    assert _build_options(text) == (text, [
        f"include path {d} does not exist here: given as captured"
        for d in ("inc", "/no such/dir")])  # fmt: skip


def test_edits_leave_the_rest_of_the_captured_text_as_written() -> None:
    """A variant's removals and defines, and the export's bundled folders, cut only their
    own words: the captured ``-D C='a'`` stays a character literal for the driver (re-spelled
    as shell words it became ``-D C=a``, a name), its spacing stays; what a variant adds is
    joined after it."""
    from cltui.export.includes import strip_include_options
    from cltui.replay.experiment.apply import edit_options
    from cltui.replay.experiment.variant import Variant

    text = "-D C='a'  -cl-mad-enable -DW=2 -I\"/my dir\" -D  Q=\"x y\""
    variant = Variant("0", options_remove=("-cl-mad-enable",), options_add=("-D S=a b",),
                      defines=(("W", "3"), ("K", "1 2")))  # fmt: skip
    assert edit_options(text, variant) == (
        "-D C='a' -I\"/my dir\" -D  Q=\"x y\" -D S=a b -D W=3 -D \"K=1 2\"")
    assert edit_options(text, Variant("0")) == text
    assert strip_include_options(text, ["/my dir"]) == (
        "-D C='a'  -cl-mad-enable -DW=2 -D  Q=\"x y\"")
    assert strip_include_options("-I /a -I '/b' -Ic", ["/a", "/b", "c"]) == ""
    assert strip_include_options(text, ["/other"]) == text
