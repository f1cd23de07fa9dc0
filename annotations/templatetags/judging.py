"""Template filters for the judging pages."""

from __future__ import annotations

from django import template
from django.utils.safestring import SafeString

from annotations.highlight import highlight

register = template.Library()


@register.filter(name="highlight_terms")
def highlight_terms(text: str, terms: frozenset[str]) -> SafeString:
    """`{{ document.text|highlight_terms:terms }}`: the text escaped, with the query's terms marked."""
    return highlight(text or "", terms or frozenset())


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
