"""The docs' shell recipes as the tests run them: verbatim, found by a marker, not copied.

A recipe is the fenced block right after an HTML comment `<!-- recipe: NAME -->` in a doc (the
comment does not render; it survives rewording of the prose around it, and a renamed or lost
marker fails the test that asks for it). `steps` splits a block at its whole-line `# ` comments,
so a test can run the recipe's parts one by one with the docs' own words as their names;
`command` picks one command (with its continuation lines) out of a longer block.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from schemas.config import PROJECT_ROOT

__all__ = ["OPERATIONS", "README", "command", "recipe", "steps"]

OPERATIONS = PROJECT_ROOT / "docs" / "operations.md"
README = PROJECT_ROOT / "README.md"


def recipe(name: str, doc: Path = OPERATIONS) -> str:
    """The block after `<!-- recipe: name -->` in `doc`, dedented (a block in a list item is
    indented in the Markdown), ending with a newline."""
    text = doc.read_text()
    marker = f"<!-- recipe: {name} -->"
    assert text.count(marker) == 1, f"{doc.name}: {text.count(marker)} markers {marker!r}"
    found = re.compile(r"[ \t]*<!-- recipe: [^>]+ -->\n([ \t]*)```[a-z]*\n(.*?)\n[ \t]*```\n",
                       re.S).match(text, text.index(marker) - _indent_before(text, marker))
    assert found, f"{doc.name}: no fenced block right after {marker!r}"
    return textwrap.dedent(found.group(2)) + "\n"


def _indent_before(text: str, marker: str) -> int:
    at = text.index(marker)
    return at - (text.rfind("\n", 0, at) + 1)


def steps(block: str) -> list[tuple[str, str]]:
    """(comment, commands) for each part of `block` that a whole-line `# comment` starts; the
    lines before the first comment come first, under "". Each part ends with a newline, so
    parts can be joined into one script."""
    parts: list[tuple[str, list[str]]] = [("", [])]
    for line in block.splitlines():
        if line.startswith("# "):
            parts.append((line[2:], []))
        else:
            parts[-1][1].append(line)
    return [(name, "".join(f"{line}\n" for line in lines)) for name, lines in parts
            if name or lines]


def command(block: str, starts: str) -> str:
    """The one command of `block` that starts with `starts`, with its `\\` continuation lines,
    as printed (a trailing `# comment` included: bash ignores it)."""
    lines = block.splitlines()
    found = [i for i, line in enumerate(lines) if line.startswith(starts)]
    assert len(found) == 1, f"{len(found)} commands start with {starts!r} in:\n{block}"
    end = found[0]
    while lines[end].split("#", 1)[0].rstrip().endswith("\\"):
        end += 1
    return "\n".join(lines[found[0]:end + 1]) + "\n"
