"""`{% plotly_script %}`: the script tag of the vendored plotly.js, the page's chart loader, and the
templates the page's figures name, once per page (`evalplatform.charts.plotly_templates`);
`{% plotly_script templates=False %}` on a page whose figures name none."""

from __future__ import annotations

from functools import cache

from django import template
from django.templatetags.static import static
from django.utils.html import format_html, json_script
from django.utils.safestring import SafeString

from evalplatform.charts import plotly_js_url, plotly_templates

register = template.Library()

#: The id of the templates' `json_script` block, which `charts.js` reads.
TEMPLATES_ID = "plotly-templates"


@cache
def _templates_script() -> SafeString:
    """Written once per process: the templates never change while it runs."""
    return json_script(plotly_templates(), TEMPLATES_ID)


@register.simple_tag
def plotly_script(*, templates: bool = True) -> str:
    """The scripts, and the templates' block unless the page's figures name none (`templates=False`)."""
    return format_html(
        '<script src="{}" defer></script>\n<script src="{}" defer></script>{}',
        plotly_js_url(),
        static("evalplatform/charts.js"),
        format_html("\n{}", _templates_script()) if templates else "",
    )
