"""One BENCHMARKS.md section replaced in place (or inserted before ``## Keys``): what the
benchmarks that write their own section share."""

from __future__ import annotations

from pathlib import Path

MD = Path(__file__).resolve().parent.parent / "BENCHMARKS.md"


def replace_section(title: str, lines: list[str], md: Path = MD) -> None:
    """The section headed ``title`` becomes ``lines`` (its own heading first)."""
    text = md.read_text()
    body = "\n".join(lines) + "\n"
    if title in text:
        start = text.index(title)
        nxt = text.find("\n## ", start + len(title))
        text = text[:start] + body + (text[nxt + 1:] if nxt >= 0 else "")
    else:
        at = text.index("## Keys")
        text = text[:at] + body + text[at:]
    md.write_text(text)
