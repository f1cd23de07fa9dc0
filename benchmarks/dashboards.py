"""Benchmark: the dashboards' server time on the demo data, against a floor and the old way measured here.

Loads the demo (`manage.py load_demo`) into a SQLite database of its own in a temporary directory (or in
`--var-dir`, reused when it already holds the demo), signs in as the demo lead with Django's test Client
and times each dashboard page: the stream (embedding monitor), the leaderboard, a run's evaluation, the
comparison, the recommendation and fraud evaluations and their sets' history, the series page with the
most metrics and the quality dashboard. Each page gets `--warmup` requests, then `--requests` timed ones,
the pages taken in turn (round-robin, so a burst of load on the shared machine hits them all alike);
the median of the wall time (`time.perf_counter`) and of this process's CPU time (`time.process_time`)
are reported, with the queries and the response's bytes of one more request.

Anchors, measured in the same run and in the same rotation:

- the floor: a minimal signed-in page (the team list), what any page costs (session, user, template);
- the old way (stream only): the same stream page with its figures built as before, with
  `plotly.graph_objects` (a figure per metric, `update_layout` with the "plotly_white" template, then
  `to_json`), by a copy of the old builders kept here and nowhere else.

    .venv/bin/python -m benchmarks.dashboards [--requests 15] [--warmup 2] [--var-dir DIR] [--json]

The exit status is 1 when any dashboard's median wall time is over `--limit-ms` (200), 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import secrets
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LIMIT_MS = 200.0
FLOOR = "floor (team list)"
OLD_STREAM = "stream, old way (plotly.graph_objects)"


def configure(var_dir: Path) -> None:
    """Settings for a database of the benchmark's own: SQLite and the filesystem broker in `var_dir`,
    DEBUG off as in production (whatever this shell's environment says)."""
    for name in ("DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL", "CELERY_RESULT_BACKEND"):
        os.environ.pop(name, None)
    os.environ.update({
        "EVALPLATFORM_VAR_DIR": str(var_dir), "DEBUG": "false", "STATIC_MANIFEST": "false",
        "SECRET_KEY": secrets.token_urlsafe(40), "ALLOWED_HOSTS": "testserver",
        "DJANGO_SETTINGS_MODULE": "evalplatform.settings",
    })  # fmt: skip
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def load_demo() -> float:
    """Migrate and load the demo unless the database holds it already; the seconds it took."""
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db.utils import OperationalError

    started = time.perf_counter()
    try:
        if get_user_model().objects.filter(username="lead").exists():
            return 0.0
    except OperationalError:  # no tables yet
        pass
    with open(os.devnull, "w") as quiet:
        call_command("migrate", "--noinput", verbosity=0, stdout=quiet)
        call_command("load_demo", stdout=quiet)
    return time.perf_counter() - started


def dashboard_urls() -> dict[str, str]:
    """Each dashboard of the demo, by name, and the floor."""
    from django.db.models import Count

    from monitoring.models import (
        Comparison,
        EmbeddingStream,
        Evaluation,
        FraudScoreEvaluation,
        RecommendationEvaluation,
    )
    from series.models import Series

    stream = EmbeddingStream.objects.select_related("team").get()
    evaluation = Evaluation.objects.select_related("run", "qrels").order_by("pk").first()
    recsys = RecommendationEvaluation.objects.get()
    fraud = FraudScoreEvaluation.objects.get()
    series = Series.objects.annotate(n_values=Count("values")).order_by("-n_values", "pk").first()
    assert evaluation is not None and series is not None, "the demo has no evaluation or series"
    return {
        FLOOR: "/teams/",
        "stream": stream.get_absolute_url(),
        "leaderboard": evaluation.qrels.get_absolute_url(),
        "evaluation (a run's page)": evaluation.run.get_absolute_url(),
        "comparison": Comparison.objects.get().get_absolute_url(),
        "recommendation evaluation": recsys.get_absolute_url(),
        "recommendation set (history)": recsys.recommendation_set.get_absolute_url(),
        "fraud evaluation": fraud.get_absolute_url(),
        "fraud set (history)": fraud.score_set.get_absolute_url(),
        f"series ({series.label})": f"/teams/{stream.team.slug}/series/{series.pk}/",
        "quality": "/projects/python-help/quality/",
    }


# --- the old way: the stream's figures with plotly.graph_objects (kept here only, as the anchor) ----------


def old_metric_series_figure(series: Any, *, column: Any) -> dict[str, Any]:
    """The stream's metric chart as it was built before: a plotly figure, its template, `to_json`."""
    import plotly.graph_objects as go

    from monitoring.embeddings import charts

    points = series.points
    times = [point.observed_at for point in points]
    figure = go.Figure(
        go.Scatter(
            x=times, y=[point.value for point in points], mode="lines+markers", name=series.metric,
            line={"color": charts.LINE_COLOUR},
            marker={"color": [charts.REFERENCE_COLOUR if p.is_reference else charts.LINE_COLOUR for p in points],
                    "symbol": ["diamond" if p.is_reference else "circle" for p in points], "size": 7},
            customdata=[[p.label, "reference" if p.is_reference else "snapshot"] for p in points],
            hovertemplate="%{x|%Y-%m-%d %H:%M}: %{y:.4g}<br>%{customdata[1]} %{customdata[0]}<extra></extra>",
        )
    )  # fmt: skip
    for rule in series.rules if times else []:
        figure.add_trace(
            go.Scatter(
                x=[min(times), max(times)], y=[rule.threshold, rule.threshold], mode="lines",
                name=f"{rule.name}: {rule.comparator} {rule.threshold:g}", hoverinfo="name",
                line={"color": charts.THRESHOLD_COLOURS.get(rule.severity, charts.ALERT_COLOUR), "dash": "dash",
                      "width": 1.5},
            )
        )  # fmt: skip
    if series.events:
        figure.add_trace(
            go.Scatter(
                x=[event.observed_at for event in series.events], y=[event.value for event in series.events],
                mode="markers", name="alert opened",
                marker={"symbol": "triangle-up", "size": 13, "color": charts.ALERT_COLOUR,
                        "line": {"color": "#fff", "width": 1}},
                customdata=[[event.rule.name, event.status] for event in series.events],
                hovertemplate="%{customdata[0]} opened at %{y:.4g} (%{customdata[1]})<extra></extra>",
            )
        )  # fmt: skip
    non_negative = column.range is not None and column.range[0] is not None and column.range[0] >= 0
    figure.update_layout(
        _old_layout(column.title, xaxis={"type": "date"}, showlegend=bool(series.rules or series.events),
                    yaxis={"title": {"text": column.key}, "rangemode": "tozero" if non_negative else "normal"})
    )  # fmt: skip
    return json.loads(figure.to_json())  # type: ignore[no-any-return]


def old_spectrum_figure(run: Any) -> dict[str, Any]:
    import plotly.graph_objects as go

    from monitoring.embeddings import charts

    spectrum = run.spectrum
    figure = go.Figure()
    if "reference" in spectrum:
        figure.add_trace(
            go.Scatter(
                x=spectrum["rank"], y=[v if v > 0 else None for v in spectrum["reference"]], mode="lines+markers",
                name=f"reference ({run.reference.label if run.reference else ''})", marker={"size": 4},
                line={"color": charts.REFERENCE_COLOUR, "dash": "dot"},
                hovertemplate="rank %{x}: %{y:.4g}<extra>reference</extra>",
            )
        )  # fmt: skip
    figure.add_trace(
        go.Scatter(
            x=spectrum["rank"], y=[v if v > 0 else None for v in spectrum["current"]], mode="lines+markers",
            name=f"snapshot {run.snapshot.label} ({run.observed_at:%Y-%m-%d %H:%M})", marker={"size": 4},
            line={"color": charts.LINE_COLOUR}, hovertemplate="rank %{x}: %{y:.4g}<extra>snapshot</extra>",
        )
    )  # fmt: skip
    figure.update_layout(
        _old_layout(
            "Covariance eigenvalues by rank (scree)", height=380,
            xaxis={"type": "log", "title": {"text": "rank"}, "tickvals": charts._ranks(spectrum["rank"])},
            yaxis={"type": "log", "title": {"text": "eigenvalue (variance along the direction)"},
                   "exponentformat": "power"},
        )
    )  # fmt: skip
    return json.loads(figure.to_json())  # type: ignore[no-any-return]


def _old_layout(title: str, **extra: Any) -> dict[str, Any]:
    return {
        "template": "plotly_white", "title": {"text": title, "font": {"size": 14}}, "height": 300,
        "margin": {"l": 60, "r": 20, "t": 40, "b": 40}, "font": {"family": "system-ui, sans-serif", "size": 12},
        "legend": {"orientation": "h", "y": -0.2}, **extra,
    }  # fmt: skip


@contextmanager
def old_stream_figures() -> Iterator[None]:
    """The stream page with the old builders in place of the new ones."""
    from monitoring.embeddings import charts

    new = charts.metric_series_figure, charts.spectrum_figure
    charts.metric_series_figure, charts.spectrum_figure = old_metric_series_figure, old_spectrum_figure  # type: ignore[assignment]
    try:
        yield
    finally:
        charts.metric_series_figure, charts.spectrum_figure = new


# --- timing ------------------------------------------------------------------------------------------------


def timed(request: Callable[[], Any]) -> tuple[float, float]:
    """One request's wall and CPU seconds; the response must be a page."""
    wall, cpu = time.perf_counter(), time.process_time()
    response = request()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert response.status_code == 200, f"{response.status_code} from {response.request['PATH_INFO']}"
    return wall, cpu


def measure(*, requests: int, warmup: int) -> dict[str, dict[str, Any]]:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client()
    client.force_login(get_user_model().objects.get(username="lead"))
    urls = dashboard_urls()

    def get(name: str) -> Callable[[], Any]:
        url = urls["stream" if name == OLD_STREAM else name]
        if name != OLD_STREAM:
            return lambda: client.get(url)

        def old() -> Any:
            with old_stream_figures():
                return client.get(url)

        return old

    names = [FLOOR, OLD_STREAM, *(name for name in urls if name != FLOOR)]
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    for round_ in range(warmup + requests):
        for name in names:
            sample = timed(get(name))
            if round_ >= warmup:
                samples[name].append(sample)
    results = {}
    for name in names:
        with CaptureQueriesContext(connection) as queries:
            response = get(name)()
        results[name] = {
            "url": urls["stream" if name == OLD_STREAM else name],
            "wall_ms": statistics.median(wall for wall, _ in samples[name]) * 1e3,
            "cpu_ms": statistics.median(cpu for _, cpu in samples[name]) * 1e3,
            "queries": len(queries),
            "bytes": len(response.content),
        }
    floor = results[FLOOR]
    for row in results.values():
        row["wall_ratio_to_floor"] = row["wall_ms"] / floor["wall_ms"]
        row["cpu_ratio_to_floor"] = row["cpu_ms"] / floor["cpu_ms"]
    return results


def run(*, requests: int, warmup: int, var_dir: Path, limit_ms: float) -> dict[str, Any]:
    load_before = os.getloadavg()
    configure(var_dir)
    load_seconds = load_demo()
    pages = measure(requests=requests, warmup=warmup)
    dashboards = {name: row for name, row in pages.items() if name not in (FLOOR, OLD_STREAM)}
    over = [name for name, row in dashboards.items() if row["wall_ms"] > limit_ms]
    return {
        "pages": pages,
        "stream_old_over_new_cpu": pages[OLD_STREAM]["cpu_ms"] / pages["stream"]["cpu_ms"],
        "stream_old_over_new_wall": pages[OLD_STREAM]["wall_ms"] / pages["stream"]["wall_ms"],
        "limit_ms": limit_ms,
        "over_limit": over,
        "requests": requests,
        "warmup": warmup,
        "demo_load_seconds": load_seconds,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
    }


def report(result: dict[str, Any]) -> None:
    print(
        f"Dashboards on the demo data, signed in as the demo lead: median of {result['requests']} requests "
        f"each after {result['warmup']} warm-up (pages in turn), server time in this process"
    )
    print(f"  {'page':<40} {'wall ms':>8} {'CPU ms':>8} {'x floor':>8} {'queries':>8} {'bytes':>9}")
    for name, row in result["pages"].items():
        print(
            f"  {name:<40} {row['wall_ms']:8.1f} {row['cpu_ms']:8.1f} {row['cpu_ratio_to_floor']:8.1f}"
            f" {row['queries']:8d} {row['bytes']:9,d}"
        )
    print(
        f"  stream page, old way over new: {result['stream_old_over_new_cpu']:.1f}x CPU, "
        f"{result['stream_old_over_new_wall']:.1f}x wall ('x floor' is the CPU ratio)"
    )
    verdict = (
        f"over {result['limit_ms']:g} ms: {', '.join(result['over_limit'])}"
        if result["over_limit"]
        else f"every dashboard under {result['limit_ms']:g} ms (median wall)"
    )
    print(f"  {verdict}; peak RSS {result['peak_rss_mib']:.0f} MiB")
    before, after = result["loadavg_before"], result["loadavg_after"]
    print(
        f"Load average before {before[0]:.2f} {before[1]:.2f} {before[2]:.2f}, after {after[0]:.2f} "
        f"{after[1]:.2f} {after[2]:.2f} (others' work on this machine slows wall time, not CPU time)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=15, help="timed requests per page (15)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed requests per page first (2)")
    parser.add_argument("--limit-ms", type=float, default=LIMIT_MS, help="the target median wall time (200)")
    parser.add_argument("--var-dir", type=Path, help="keep the demo database here (reused when loaded)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    var_dir = args.var_dir or Path(tempfile.mkdtemp(prefix="bench-dashboards-"))
    try:
        result = run(requests=args.requests, warmup=args.warmup, var_dir=var_dir, limit_ms=args.limit_ms)
    finally:
        if args.var_dir is None:
            shutil.rmtree(var_dir, ignore_errors=True)
    if args.json:
        print(json.dumps(result))
    else:
        report(result)
    return 1 if result["over_limit"] else 0


if __name__ == "__main__":
    sys.exit(main())
