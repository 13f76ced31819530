"""Apply a unified diff to one text, strictly: every hunk's old lines must be exactly where
its header says (no fuzz, no offset), else one :class:`PatchError` line names the hunk.

Linear in the sizes of the text and the diff.  A diff may carry ``---``/``+++`` headers (any
file names: the program is chosen by the caller) and ``\\ No newline at end of file`` lines.
"""

from __future__ import annotations

import re

from cltui.replay.experiment.variant import VariantError

__all__ = ["PatchError", "apply_patch"]

_HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class PatchError(VariantError):
    """A diff that is not a unified diff, or a hunk that does not apply."""


def _hunks(diff: str) -> list[tuple[int, list[str], list[str], int]]:
    """(old start, old lines, new lines, hunk number) per hunk; lines keep their ends."""
    out: list[tuple[int, list[str], list[str], int]] = []
    lines = diff.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        m = _HUNK_RE.match(lines[i])
        if m is None:
            if out and lines[i].strip() and not lines[i].startswith(("---", "+++", "diff ")):
                raise PatchError(f"line {i + 1} of the diff is not part of a hunk: "
                                 f"{lines[i].rstrip()[:60]!r}")  # fmt: skip
            i += 1
            continue
        n_old = int(m.group(2)) if m.group(2) is not None else 1
        n_new = int(m.group(4)) if m.group(4) is not None else 1
        old: list[str] = []
        new: list[str] = []
        last = ""
        i += 1
        while i < len(lines) and (len(old) < n_old or len(new) < n_new or
                                  lines[i].startswith("\\")):  # fmt: skip
            line = lines[i]
            tag, body = line[:1], line[1:]
            if tag == "\\":
                for lst in (old, new) if last == " " else ((old,) if last == "-" else (new,)):
                    _strip_newline(lst)
            elif tag == " " or line in ("\n", "\r\n"):
                body = body if tag == " " else line
                old.append(body)
                new.append(body)
                tag = " "
            elif tag == "-":
                old.append(body)
            elif tag == "+":
                new.append(body)
            else:
                raise PatchError(f"hunk {len(out) + 1} of the diff is cut short at line {i + 1}")
            last = tag if tag != "\\" else last
            i += 1
        if len(old) != n_old or len(new) != n_new:
            raise PatchError(f"hunk {len(out) + 1} of the diff has {len(old)}/{len(new)} lines, "
                             f"its header says {n_old}/{n_new}")  # fmt: skip
        start = int(m.group(1))
        out.append((start - 1 if n_old else start, old, new, len(out) + 1))
    if not out:
        raise PatchError("the diff holds no hunk (expected a unified diff: @@ -a,b +c,d @@)")
    return out


def _strip_newline(lines: list[str]) -> None:
    if lines and lines[-1].endswith("\n"):
        lines[-1] = lines[-1].rstrip("\r\n")


def apply_patch(text: str, diff: str, what: str = "the source") -> str:
    """``text`` with ``diff`` applied; a hunk that does not match exactly raises."""
    src = text.splitlines(keepends=True)
    out: list[str] = []
    pos = 0
    for start, old, new, number in _hunks(diff):
        if start < pos:
            raise PatchError(f"hunk {number} overlaps the hunk before it")
        got = src[start : start + len(old)]
        if [ln.rstrip("\r\n") for ln in got] != [ln.rstrip("\r\n") for ln in old]:
            bad = next(
                (k for k, (a, b) in enumerate(zip(got, old, strict=False))
                 if a.rstrip("\r\n") != b.rstrip("\r\n")),
                min(len(got), len(old)),
            )  # fmt: skip
            raise PatchError(
                f"hunk {number} does not apply to {what}: line {start + bad + 1} is "
                f"{(got[bad].rstrip() if bad < len(got) else '<end of file>')[:60]!r}, "
                f"the diff expects {(old[bad].rstrip() if bad < len(old) else '')[:60]!r}"
            )
        out += src[pos:start]
        out += new
        pos = start + len(old)
    out += src[pos:]
    return "".join(out)
