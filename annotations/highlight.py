"""Highlight a query's terms in a document, server-side and escaped.

The text is split into words and the rest; every piece is HTML-escaped on its own and matching words are
wrapped in <mark>, so no markup in the document can get through and no escape sequence is ever split.
"""

from __future__ import annotations

import html
import re
from functools import lru_cache

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

_WORD = re.compile(r"(\w+)")
_STOPWORDS = frozenset(
    {
        "a", "an", "and", "are", "as", "at", "be", "between", "by", "can", "do", "does", "for", "from", "how",
        "i", "in", "into", "is", "it", "me", "my", "of", "on", "or", "that", "the", "this", "to", "use",
        "using", "what", "when", "where", "which", "who", "why", "will", "with", "work", "works", "you", "your",
    }
)  # fmt: skip


@lru_cache(maxsize=65536)
def _stem(word: str) -> str:
    """A crude suffix strip, enough for `exceptions`/`exception` and `sorting`/`sort` to meet.

    Cached: a document repeats its words, and a 2,000-line one is stemmed twice (full text and passages).
    """
    word = word.lower()
    for suffix in ("ing", "es", "ed", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def query_terms(query: str) -> frozenset[str]:
    """The stems of the query's words worth highlighting: no stopwords, no single letters."""
    return frozenset(
        _stem(word) for word in _WORD.findall(query) if len(word) > 1 and word.lower() not in _STOPWORDS
    )


def contains_term(text: str, terms: frozenset[str]) -> bool:
    """Whether any word of `text` is one of the query's `terms` (as `highlight` would mark it)."""
    return any(_stem(word) in terms for word in _WORD.findall(text))


def highlight(text: str, terms: frozenset[str]) -> SafeString:
    if not terms:
        return escape(text)
    pieces = _WORD.split(text)
    # re.split with a capturing group alternates non-words (even indices) and words (odd indices). A word
    # (\w+) holds no character HTML gives a meaning to, so only the pieces between words need escaping:
    # half the work on a 2,000-line document.
    out = [
        (f"<mark>{piece}</mark>" if _stem(piece) in terms else piece) if index % 2 else html.escape(piece)
        for index, piece in enumerate(pieces)
    ]
    return mark_safe("".join(out))  # noqa: S308 - every piece between words is escaped above
