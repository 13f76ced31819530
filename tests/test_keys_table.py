"""The README's keys table is the one the bindings give (scripts/keys_table.py writes it)."""

from __future__ import annotations

from pathlib import Path

from cltui.tui.keys_table import README_BEGIN, README_END, key_rows, markdown_table
from scripts.keys_table import with_table

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_keys_table_is_generated_from_the_bindings() -> None:
    text = README.read_text(encoding="utf-8")
    assert README_BEGIN in text and README_END in text
    assert with_table(text, markdown_table()) == text, (
        "README.md's keys table differs from the bindings: run scripts/keys_table.py"
    )


def test_the_table_holds_every_place_and_the_keys_of_issue_17() -> None:
    rows = key_rows()
    where = {r.where for r in rows}
    assert {"everywhere", "browser", "enqueue list (focused)", "Image tab (focused)",
            "replay results", "three-way diff"} <= where
    browser = {r.keys for r in rows if r.where == "browser"}
    assert {"`+`", "`-`", "`f`", "`x`", "`]`", "`[`", "`/`", "`:` `g`"} <= browser
    # a binding edited in the code changes the table: the table is no copy
    table = markdown_table()
    assert "Give the list more of the screen" in table and "`ctrl+p`" in table
