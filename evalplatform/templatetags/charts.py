"""`{% plotly_script %}`: the script tag of the vendored plotly.js, and the page's chart loader."""

from __future__ import annotations

from django import template
from django.templatetags.static import static
from django.utils.html import format_html

from evalplatform.charts import plotly_js_url

register = template.Library()


@register.simple_tag
def plotly_script() -> str:
    return format_html(
        '<script src="{}" defer></script>\n<script src="{}" defer></script>',
        plotly_js_url(),
        static("evalplatform/charts.js"),
    )
