"""The annotator's reading view of a document: reflowed paragraphs, kept preformatted blocks, and passages.

Documents often arrive hard-wrapped at 70-80 characters (plain-text dumps, man pages, pydoc). Shown as
they are, in a panel wider than the wrap, half the panel stays empty and the wrap fights the panel's own
line breaks. Here blank lines separate blocks; a block whose lines were broken inside a paragraph is
joined back into one paragraph, while a block that looks laid out by hand (indented code, tables, lines
with runs of spaces) stays preformatted, since reflowing it would destroy its meaning.

A long document is first shown as its passages: the lines around the query's terms, a few lines of
context each, merged when close. Everything here is one linear pass over the lines, so a 2,000-line
document costs a few milliseconds and no database work.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from annotations.highlight import contains_term, highlight

Kind = Literal["heading", "paragraph", "lines", "pre"]

#: A document longer than this many lines opens on its passages when the query's terms occur in it.
LONG_DOCUMENT_LINES = 60
#: Lines of context shown before and after each line with a query term.
PASSAGE_CONTEXT = 2
#: Passages closer than this many lines are merged: showing the lines costs less than a gap.
PASSAGE_MERGE_GAP = 3
#: When the passages would show more than this share of the lines, the full text is just as short.
PASSAGES_MAX_SHARE = 0.7

_UNDERLINE = re.compile(r"^\s*([=*~^#+-])\1{2,}\s*$")
# Indentation, tabs, runs of three spaces inside a line (two follow a full stop in many texts), table
# borders and interpreter prompts: the layout carries meaning, so the block is kept as it is.
_LAID_OUT = re.compile(r"^[ \t]|\t|\S {3,}\S|^\s*[|+][-=+|]|^>>>")
_BULLET = re.compile(r"^(?:[-*+•]|\d{1,3}[.)])\s")
_HYPHEN_BREAK = re.compile(r"[A-Za-z]-$")
# A paragraph counts as hard-wrapped when its lines (all but the last) reach this width...
_WRAP_MIN_WIDTH = 40
# ...and none of them falls below this share of the longest line: short lines are a list, not a wrap.
_WRAP_MIN_SHARE = 0.5


@dataclass(frozen=True)
class Block:
    """One block of the reading view; `text` is plain, `line` the 1-based line it starts on."""

    kind: Kind
    text: str
    line: int

    @property
    def tag(self) -> str:
        return {"heading": "h4", "paragraph": "p", "lines": "p", "pre": "pre"}[self.kind]


@dataclass(frozen=True)
class Passage:
    """Lines `first_line`..`last_line` (1-based, inclusive) of the document, as blocks."""

    first_line: int
    last_line: int
    blocks: tuple[Block, ...]


@dataclass(frozen=True)
class ReadingView:
    """Everything the rating page needs to show a document: the full text and the passages."""

    blocks: tuple[Block, ...]
    passages: tuple[Passage, ...]
    line_count: int
    passage_line_count: int
    starts_in_passages: bool

    @property
    def passages_end_early(self) -> bool:
        """Whether lines follow the last passage (the view then ends on a gap)."""
        return bool(self.passages) and self.passages[-1].last_line < self.line_count


def _join(lines: Sequence[str]) -> str:
    """Lines of one paragraph joined by spaces; a word broken after its hyphen (`non-` / `virtual`)
    is joined without one, which keeps compound words whole."""
    text = ""
    for line in lines:
        line = line.strip()
        if not text:
            text = line
        elif _HYPHEN_BREAK.search(text) and line[:1].islower():
            text += line
        else:
            text += " " + line
    return text


def _is_hard_wrapped(lines: Sequence[str]) -> bool:
    widths = [len(line.rstrip()) for line in lines]
    longest = max(widths)
    body = widths[:-1]
    return longest >= _WRAP_MIN_WIDTH and min(body) >= _WRAP_MIN_SHARE * longest


def _items(lines: Sequence[str]) -> list[str]:
    """A bulleted or numbered list without indentation: one item a line, each item's own wrap joined."""
    items: list[list[str]] = []
    for line in lines:
        if _BULLET.match(line) or not items:
            items.append([line])
        else:
            items[-1].append(line)
    return [_join(item) for item in items]


def _group_blocks(lines: Sequence[str], first: int) -> list[Block]:
    """The blocks of one run of non-blank lines, which starts on (0-based) line `first`."""
    if _UNDERLINE.match(lines[0]):  # an overline, or an underline whose title lies outside the passage
        return _group_blocks(lines[1:], first + 1) if len(lines) > 1 else []
    if len(lines) >= 2 and _UNDERLINE.match(lines[1]) and not _LAID_OUT.search(lines[0]):
        rest = _group_blocks(lines[2:], first + 2) if len(lines) > 2 else []
        return [Block("heading", lines[0].strip(), first + 1), *rest]
    if any(_LAID_OUT.search(line) for line in lines):
        return [Block("pre", "\n".join(line.rstrip() for line in lines), first + 1)]
    if len(lines) > 1 and any(_BULLET.match(line) for line in lines):
        return [Block("lines", "\n".join(_items(lines)), first + 1)]
    if len(lines) == 1 or _is_hard_wrapped(lines):
        return [Block("paragraph", _join(lines), first + 1)]
    return [Block("lines", "\n".join(line.strip() for line in lines), first + 1)]


def reflow(lines: Sequence[str], *, first: int = 0) -> list[Block]:
    """The blocks of `lines` (line `first` of the document onwards): blank lines end a block."""
    blocks: list[Block] = []
    start = None
    for index, line in enumerate([*lines, ""]):
        if line.strip():
            if start is None:
                start = index
        elif start is not None:
            blocks.extend(_group_blocks(lines[start:index], first + start))
            start = None
    return blocks


def _windows(hits: Sequence[int], *, line_count: int) -> list[tuple[int, int]]:
    """0-based inclusive line ranges around the hit lines, merged when they overlap or nearly touch."""
    windows: list[tuple[int, int]] = []
    for hit in hits:
        start, end = max(0, hit - PASSAGE_CONTEXT), min(line_count - 1, hit + PASSAGE_CONTEXT)
        if windows and start <= windows[-1][1] + 1 + PASSAGE_MERGE_GAP:
            windows[-1] = (windows[-1][0], max(windows[-1][1], end))
        else:
            windows.append((start, end))
    return windows


def passages(lines: Sequence[str], terms: frozenset[str]) -> list[Passage]:
    """The passages around the lines that contain one of the query's `terms`; none without a match."""
    if not terms:
        return []
    hits = [index for index, line in enumerate(lines) if contains_term(line, terms)]
    found = []
    for start, end in _windows(hits, line_count=len(lines)):
        blocks = reflow(lines[start : end + 1], first=start)
        if blocks:
            found.append(Passage(start + 1, end + 1, tuple(blocks)))
    return found


def reading_view(text: str, terms: frozenset[str], *, view: str | None = None) -> ReadingView:
    """The reading view of `text`. It starts on the passages when the document is long, the terms occur
    in it and the passages are markedly shorter; `view` ("full" or "passages") overrides that."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    found = tuple(passages(lines, terms))
    shown = sum(p.last_line - p.first_line + 1 for p in found)
    worth_it = bool(found) and len(lines) > LONG_DOCUMENT_LINES and shown <= PASSAGES_MAX_SHARE * len(lines)
    if found and view in ("full", "passages"):
        worth_it = view == "passages"
    return ReadingView(
        blocks=tuple(reflow(lines)),
        passages=found,
        line_count=len(lines),
        passage_line_count=shown,
        starts_in_passages=worth_it,
    )


def block_html(block: Block, terms: frozenset[str]) -> SafeString:
    """A block as its element, text escaped and terms marked; `data-line` lets the page keep its place
    when switching between the passages and the full text."""
    if block.kind == "lines":
        inner = mark_safe("<br>".join(highlight(line, terms) for line in block.text.split("\n")))  # noqa: S308
    else:
        inner = highlight(block.text, terms)
    tag = block.tag
    return mark_safe(  # noqa: S308 - the text is escaped by highlight(), the rest is ours
        f'<{tag} class="block-{block.kind}" data-line="{escape(block.line)}">{inner}</{tag}>'
    )
