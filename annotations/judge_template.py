"""The judge page's task part (annotations/jinja2/judge_task.html), rendered by Jinja2.

The part is rendered on every answer (the one-request answer replies with it) and on every load of the
judge page, which includes it. In Django's template language its rendering was a tenth of the answer's
Python (the load benchmark's page mode): each of its forty-odd variables resolved through the context
stack, each value localized and escaped by the engine's generic path. Jinja2 compiles the template to
Python once per process. It escapes as Django does (`<`, `>`, `&`, quotes; quotes spelled `&#34;` and
`&#39;` where Django writes `&quot;` and `&#x27;`), and Django's safe strings (the highlighted text,
the grade buttons) pass through it unescaped, as they do in Django's.

It renders only this part: the page around it (judge.html) stays Django's, and receives the part
rendered (`render`'s result is safe).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import jinja2
from django.template.defaultfilters import floatformat, pluralize
from django.utils.safestring import SafeString, mark_safe

from annotations.models import COMMENT_MAX_LENGTH
from annotations.reading import Block, ReadingView, block_html, reading_view
from annotations.templatetags.judging import grade_buttons, highlight_terms

TEMPLATE = "judge_task.html"


@jinja2.pass_context
def _reading_view(context: Any, text: str | None, terms: frozenset[str] | None) -> ReadingView:
    """`reading_view(document.text, terms)`: the document's reading view. `?view=full` or
    `?view=passages` picks the view for a browser without the page's script, which otherwise switches
    views in place."""
    request = context.get("request")
    view = request.GET.get("view") if request is not None else None
    return reading_view(text or "", terms or frozenset(), view=view)


def _block_html(block: Block, terms: frozenset[str] | None) -> SafeString:
    """`block|block_html(terms)`: the block as its element, escaped, with the terms marked."""
    return block_html(block, terms or frozenset())


@cache
def _environment() -> jinja2.Environment:
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).resolve().parent / "jinja2"),
        autoescape=True,
        auto_reload=False,
        undefined=jinja2.Undefined,
    )
    environment.filters.update(
        highlight_terms=highlight_terms,
        block_html=_block_html,
        grade_buttons=grade_buttons,
        floatformat=floatformat,
        pluralize=pluralize,
    )
    environment.globals.update(reading_view=_reading_view, comment_max_length=COMMENT_MAX_LENGTH)
    return environment


def render(context: dict[str, Any]) -> SafeString:
    """The task part for `context` (`views._judge_context`'s, with `request` and `csrf_token`)."""
    html = _environment().get_template(TEMPLATE).render(context)
    return mark_safe(html)  # noqa: S308  # autoescaped by Jinja2


__all__ = ["TEMPLATE", "render"]
