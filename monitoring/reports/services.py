"""Reports to share and cite, made from the rows the jobs stored (nothing is computed here).

- `evaluation_report`, `comparison_report` and `monitor_run_report` write one self-contained HTML file:
  its CSS, plotly.js (from the plotly package, as the site serves it), the chart loader, the plotly
  template and every figure's data are inline, so it opens offline and loads nothing. Each chart has its
  numbers in a table beside it; the head names the team, the inputs, the options and when it was made.
- `comparison_table` lays a finished comparison out as `evalcore.report_tables.SignificanceTable`, which
  `comparison_latex` and `comparison_markdown` write in ranx's report convention.

plotly.js is 4.6 MB of every HTML report; the figures add little because they are bounded: a monitor
run's series show its last `SERIES_POINTS` runs, and a comparison draws means and pairs, not per-query bars.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from django.http import Http404, HttpResponse
from django.template.loader import render_to_string
from django.utils import timezone

import evalplatform
from evalcore.comparison import mean_rule, paired_rule
from evalcore.embeddings import MonitorParams
from evalcore.report_tables import (
    SignificanceTable,
    best,
    latex_escape,
    letters,
    markers,
    note,
    to_latex,
    to_markdown,
)
from evalcore.stats import DEFAULT_BOOTSTRAP
from evalplatform import csp
from evalplatform.charts import plotly_js_source, plotly_js_version, plotly_templates
from evalplatform.jobs import JobStatus
from monitoring.embeddings import charts as stream_charts
from monitoring.embeddings import services as monitors
from monitoring.evaluations import charts as evaluation_charts
from monitoring.evaluations import selectors
from monitoring.evaluations.selectors import ComparisonView
from monitoring.models import Comparison, Evaluation, MonitorRun
from monitoring.reports import charts

#: A monitor run's report draws each metric over at most this many runs, the run's and those before it.
SERIES_POINTS = 200
#: Worst queries listed per measure in an evaluation's report.
WORST_QUERIES = 10
#: Rounding of the cited tables (ranx's default).
TABLE_DIGITS = 3

#: The report formats of a comparison, with their media types and file extensions.
FORMATS = {
    "html": ("text/html; charset=utf-8", "html"),
    "latex": ("application/x-tex; charset=utf-8", "tex"),
    "markdown": ("text/markdown; charset=utf-8", "md"),
}


def unfinished(job: Any, what: str) -> Http404:
    return Http404(f"{what} {job.pk} is {job.status}; there is nothing to report yet.")


# --- the inline assets ----------------------------------------------------------------------------------


@cache
def _assets() -> dict[str, str]:
    """plotly.js, the site's chart loader and the plotly template, as text to inline (read once).

    A `</script` inside a script would end it early: none is in plotly.js, and any would be escaped."""
    static = Path(evalplatform.__file__).parent / "static" / "evalplatform"
    return {
        "plotly_js": plotly_js_source().replace("</script", "<\\/script"),
        "charts_js": (static / "charts.js").read_text(encoding="utf-8"),
        "plotly_version": plotly_js_version(),
    }


def _render(template: str, context: dict[str, Any]) -> str:
    return render_to_string(
        template,
        {**_assets(), "templates": plotly_templates(), "generated_at": timezone.now(), **context},
    )


def report_response(body: str, *, filename: str, fmt: str = "html") -> HttpResponse:
    """A report as a download. An HTML report runs its own inline script, so it is never rendered in the
    site's origin: an attachment, and `csp.DOWNLOAD_POLICY` (a sandbox) should a browser show it anyway."""
    content_type, _ = FORMATS[fmt]
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response[csp.HEADER] = csp.DOWNLOAD_POLICY
    return response


# --- an evaluation --------------------------------------------------------------------------------------


def evaluation_report(evaluation: Evaluation) -> str:
    """A finished evaluation (with its per-query arrays loaded) as a self-contained HTML report."""
    if evaluation.status != JobStatus.DONE:
        raise unfinished(evaluation, "Evaluation")
    selectors.label_runs([evaluation.run])
    sections = []
    for position, result in enumerate(evaluation.results):
        column = selectors.measure_column(result.measure)
        values = evaluation.per_query.get(result.measure, [])
        bins = selectors.histogram(values, column=column)
        sections.append({
            "id": f"figure-{position}", "result": result, "column": column, "bins": bins,
            "figure": evaluation_charts.histogram_figure(
                bins, column=column, run=evaluation.run, integers=selectors.integer_valued(values)
            ) if bins else None,
            "worst": selectors.worst_queries(evaluation.qids, values, column=column, limit=WORST_QUERIES),
        })  # fmt: skip
    return _render(
        "monitoring/reports/evaluation.html",
        {"team": evaluation.team, "evaluation": evaluation, "run": evaluation.run, "sections": sections,
         "bootstrap": DEFAULT_BOOTSTRAP, "title": f"Evaluation #{evaluation.pk}: {evaluation.run.name} on {evaluation.qrels.name}"},
    )  # fmt: skip


# --- a comparison ---------------------------------------------------------------------------------------


def _finished_view(comparison: Comparison) -> ComparisonView:
    if comparison.status != JobStatus.DONE:
        raise unfinished(comparison, "Comparison")
    return selectors.comparison_view(comparison=comparison)


def _ordered_runs(view: ComparisonView) -> list[Any]:
    return sorted(view.runs.values(), key=lambda run: run.pk)


def comparison_table(view: ComparisonView) -> SignificanceTable:
    """The comparison's means (runs in id order, measures as asked) and its pairs' tests as arrays."""
    runs = _ordered_runs(view)
    index = {run.pk: i for i, run in enumerate(runs)}
    position = {measure: m for m, measure in enumerate(view.measures)}
    shape = (len(runs), len(runs), len(view.measures))
    diff, significant = np.zeros(shape), np.zeros(shape, dtype=bool)
    for pair in view.pairs:
        i, j, m = index[pair.run_a_id], index[pair.run_b_id], position[pair.measure]
        diff[i, j, m], diff[j, i, m] = pair.diff, -pair.diff
        significant[i, j, m] = significant[j, i, m] = pair.significant
    means = np.array(
        [[_mean(view.summaries.get((run.pk, measure))) for measure in view.measures] for run in runs],
        dtype=float,
    ).reshape(len(runs), len(view.measures))
    comparison = view.comparison
    return SignificanceTable(
        systems=[run.label for run in runs],
        measures=list(view.measures),
        means=means,
        diff=diff,
        significant=significant,
        test=comparison.get_test_display(),
        alpha=comparison.alpha,
        higher_is_better=[selectors.measure_column(m).direction != "lower" for m in view.measures],
        correction=comparison.get_correction_display(),
    )


def _mean(summary: Any) -> float:
    return np.nan if summary is None or summary.mean is None else float(summary.mean)


def _caption(comparison: Comparison) -> str:
    queries = len(comparison.qids)
    return f"Comparison {comparison.pk} on {comparison.qrels.name}, {queries} queries."


def comparison_latex(comparison: Comparison) -> str:
    """A finished comparison (per-query arrays not needed) as a booktabs table, ranx style."""
    view = _finished_view(comparison)
    return to_latex(
        comparison_table(view), digits=TABLE_DIGITS, caption=_latex_caption(comparison),
        label=f"tab:comparison-{comparison.pk}",
    )  # fmt: skip


def _latex_caption(comparison: Comparison) -> str:
    return latex_escape(_caption(comparison))


def comparison_markdown(comparison: Comparison) -> str:
    """A finished comparison as a Markdown pipe table, ranx style, its caption above."""
    view = _finished_view(comparison)
    return f"{_caption(comparison)}\n\n{to_markdown(comparison_table(view), digits=TABLE_DIGITS)}"


@dataclass(frozen=True)
class CitedCell:
    """A cell of the HTML report's citation table: the rounded score, bold or not, and its markers."""

    score: str | None
    bold: bool
    markers: str


def _cited_rows(table: SignificanceTable) -> list[tuple[str, str, list[CitedCell]]]:
    names, marks, bold = letters(len(table.systems)), markers(table), best(table, digits=TABLE_DIGITS)
    rows = []
    for i, system in enumerate(table.systems):
        cells = [
            CitedCell(
                None if not np.isfinite(table.means[i, m]) else f"{table.means[i, m]:.{TABLE_DIGITS}f}",
                bool(bold[i, m]),
                "".join(marks[i][m]),
            )
            for m in range(len(table.measures))
        ]
        rows.append((names[i], system, cells))
    return rows


def comparison_report(comparison: Comparison) -> str:
    """A finished comparison as a self-contained HTML report (its per-query arrays are not read)."""
    view = _finished_view(comparison)
    table = comparison_table(view)
    runs = _ordered_runs(view)
    sections = []
    for position, measure in enumerate(view.measures):
        column = selectors.measure_column(measure)
        rows = [view.summaries[(run.pk, measure)] for run in runs if (run.pk, measure) in view.summaries]
        pairs = view.pairs_of(measure)
        sections.append({
            "measure": measure, "column": column, "rows": rows, "pairs": pairs,
            "means_id": f"figure-means-{position}", "means_figure": charts.means_figure(rows, column=column),
            "pairs_id": f"figure-pairs-{position}",
            "pairs_figure": evaluation_charts.pairs_figure(pairs, column=column, runs=view.runs) if pairs else None,
        })  # fmt: skip
    return _render(
        "monitoring/reports/comparison.html",
        {
            "team": comparison.team, "comparison": comparison, "view": view, "runs": runs,
            "cited_rows": _cited_rows(table), "cited_note": note(table), "measures": view.measures,
            "sections": sections, "means_over": mean_rule(complete=comparison.complete),
            "pairs_over": paired_rule(complete=comparison.complete), "bootstrap": DEFAULT_BOOTSTRAP,
            "title": f"Comparison #{comparison.pk} of {len(runs)} runs on {comparison.qrels.name}",
        },
    )  # fmt: skip


def comparison_export(comparison: Comparison, fmt: str) -> str:
    """The comparison in one of `FORMATS`."""
    if fmt == "latex":
        return comparison_latex(comparison)
    if fmt == "markdown":
        return comparison_markdown(comparison)
    return comparison_report(comparison)


# --- a monitor run --------------------------------------------------------------------------------------


def monitor_run_chosen(*, stream: Any, pk: str | int | None) -> MonitorRun:
    """The stream's monitor run `pk`, or without one its newest finished run; a 404 when there is none."""
    if pk not in (None, ""):
        if not str(pk).isdigit():
            raise Http404("No such monitor run.")
        return monitors.get_run(stream=stream, pk=pk)
    newest: MonitorRun | None = monitors.stream_runs(stream=stream).filter(status=JobStatus.DONE).first()
    if newest is None:
        raise Http404(f"No monitor run of {stream.slug} has finished yet.")
    return newest


def monitor_run_report(run: MonitorRun) -> str:
    """A finished monitor run as a self-contained HTML report: its values with the rules on them, each
    metric over the stream's runs up to it (at most `SERIES_POINTS`), and its scree."""
    if run.status != JobStatus.DONE:
        raise unfinished(run, "Monitor run")
    stream = run.stream
    values = monitors.run_values(run)
    series = [
        charts.series_until(s, observed_at=run.observed_at, points=SERIES_POINTS)
        for s in monitors.stream_series(stream=stream)
    ]
    sections = []
    for position, found in enumerate(s for s in series if s.points):
        column = selectors.measure_column(found.metric)
        sections.append({
            "id": f"figure-metric-{position}", "series": found, "column": column,
            "figure": stream_charts.metric_series_figure(found, column=column),
            "opened": {event.observed_at for event in found.events},
        })  # fmt: skip
    rules = {s.metric: s.rules for s in series}
    opened = {s.metric: [e for e in s.events if e.observed_at == run.observed_at] for s in series}
    value_rows = [
        {"metric": metric, "column": selectors.measure_column(metric), "section": row["section"],
         "value": row["value"], "rules": rules.get(metric, []), "opened": opened.get(metric, [])}
        for metric, row in values.items()
    ]  # fmt: skip
    spectrum = run.spectrum if run.spectrum.get("rank") else None
    spectrum_rows = []
    if spectrum:
        reference = spectrum.get("reference") or [None] * len(spectrum["rank"])
        spectrum_rows = list(zip(spectrum["rank"], spectrum["current"], reference, strict=True))
    defaults = MonitorParams().to_dict()
    return _render(
        "monitoring/reports/monitor_run.html",
        {
            "team": stream.team, "stream": stream, "run": run, "value_rows": value_rows, "sections": sections,
            "params": [(name, value, defaults.get(name, ...) != value) for name, value in sorted(run.params.items())],
            "spectrum_figure": stream_charts.spectrum_figure(run) if spectrum else None,
            "spectrum_rows": spectrum_rows, "series_points": SERIES_POINTS,
            "title": f"Monitor run #{run.pk} of {stream.name}: {run.snapshot.label or 'snapshot'} "
            f"({timezone.localtime(run.observed_at):%Y-%m-%d %H:%M})",
        },
    )  # fmt: skip
