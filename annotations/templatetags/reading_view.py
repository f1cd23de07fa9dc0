"""Template tags of the rating page's reading view (see `annotations.reading`)."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.safestring import SafeString

from annotations.models import COMMENT_MAX_LENGTH
from annotations.reading import Block, ReadingView, block_html, reading_view

register = template.Library()


@register.simple_tag(takes_context=True, name="reading_view")
def reading_view_tag(context: dict[str, Any], text: str, terms: frozenset[str]) -> ReadingView:
    """`{% reading_view document.text terms as reading %}`. `?view=full` or `?view=passages` picks the
    view for a browser without the page's script, which otherwise switches views in place."""
    request = context.get("request")
    view = request.GET.get("view") if request is not None else None
    return reading_view(text or "", terms or frozenset(), view=view)


@register.filter(name="block_html")
def block_html_filter(block: Block, terms: frozenset[str]) -> SafeString:
    """`{{ block|block_html:terms }}`: the block as its element, escaped, with the terms marked."""
    return block_html(block, terms or frozenset())


@register.simple_tag(name="comment_max_length")
def comment_max_length() -> int:
    """The longest comment an annotator may leave on an answer (the model's limit, for `maxlength`)."""
    return COMMENT_MAX_LENGTH
