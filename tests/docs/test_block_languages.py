"""Every code block in the READMEs is one the other tests here check, or shown only by choice.

Sybil reads fenced blocks in the languages it is given, so a block indented instead of fenced, or
fenced without a language or in another one, would go unchecked without a word. A CommonMark parser
(markdown-it-py, which robohal has through rich) lists every block, and Sybil must find each one
it is meant to check.
"""

from __future__ import annotations

from pathlib import Path

from markdown_it import MarkdownIt
from sybil import Sybil
from sybil.parsers.markdown import CodeBlockParser

CHECKED = {"python": "test_python_blocks.py", "sh": "test_shell_blocks.py", "console": "test_shell_blocks.py",
           "toml": "test_toml_blocks.py"}
SHOWN_ONLY = {"text": "a diagram or a URI", "yaml": "a CI job for a lab's own CI"}


def test_every_code_block_is_fenced_in_a_known_language(readme: Path) -> None:
    tokens = MarkdownIt("commonmark").parse(readme.read_text(encoding="utf-8"))
    indented = [token.map[0] + 1 for token in tokens if token.type == "code_block"]
    assert not indented, f"indented code blocks at lines {indented}: fence them, with their language"
    unknown = [(token.map[0] + 1, token.info) for token in tokens
               if token.type == "fence" and token.info.strip() not in {**CHECKED, **SHOWN_ONLY}]
    assert not unknown, (f"fenced blocks (line, language) in no language these tests know: {unknown}; "
                         f"known: {sorted({**CHECKED, **SHOWN_ONLY})}")


def test_sybil_finds_every_block_to_check(readme: Path) -> None:
    tokens = MarkdownIt("commonmark").parse(readme.read_text(encoding="utf-8"))
    fenced = sorted(token.map[0] + 1 for token in tokens if token.type == "fence" and token.info.strip() in CHECKED)
    found = Sybil([CodeBlockParser(language) for language in CHECKED]).parse(readme)
    assert sorted(block.line for block in found) == fenced
