"""Template filters for the judging pages."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from annotations.highlight import highlight

register = template.Library()


@register.filter(name="highlight_terms")
def highlight_terms(text: str, terms: frozenset[str]) -> SafeString:
    """`{{ document.text|highlight_terms:terms }}`: the text escaped, with the query's terms marked."""
    return highlight(text or "", terms or frozenset())


@register.filter(name="grade_buttons")
def grade_buttons(scale: list[dict[str, Any]]) -> SafeString:
    """`{{ project.scale|grade_buttons }}`: the judge form's button of each grade of the scale, with its key,
    label and definition, escaped. Built once per scale and process: the task part is rendered on every
    answer, and the loop over the scale was half its rendering."""
    return _grade_buttons(
        tuple(
            (level.get("grade", ""), level.get("label", ""), level.get("definition", "")) for level in scale
        )
    )


@lru_cache(maxsize=256)
def _grade_buttons(levels: tuple[tuple[Any, Any, Any], ...]) -> SafeString:
    button = (
        '\n            <button type="submit" name="grade" value="{0}" class="grade" data-key="{0}" '
        'aria-keyshortcuts="{0}" title="{2}"><kbd>{0}</kbd> {1}</button>\n          '
    )
    return mark_safe("".join(format_html(button, *level) for level in levels))  # noqa: S308  # escaped


@register.filter(name="percent")
def percent(value: float | None, digits: int = 0) -> str:
    """`{{ 0.8125|percent }}` is "81%"; None (undefined) or a missing value is a dash."""
    return f"{100 * value:.{digits}f}%" if isinstance(value, int | float) else "—"


@register.filter(name="figure")
def figure(value: float | None, digits: int = 3) -> str:
    """A number to `digits` decimals; None (undefined) or a missing value is a dash."""
    return f"{value:.{digits}f}" if isinstance(value, int | float) else "—"


@register.filter(name="reason_label")
def reason_label(reason: str) -> str:
    from evalcore.judging import REASONS

    return str(REASONS.get(reason, reason))  # type: ignore[call-overload]
