"""Reports to share and cite: an evaluation, a comparison and a monitor run as one self-contained HTML file,
and a comparison as LaTeX and Markdown tables with ranx-style significance markers.

The comparison holds three runs of the synthetic collection: `strong` ranks by relevance, `noise` and
`static` at random, so strong beats both on every measure and the two random runs tie. The tables are
checked cell by cell, and against ranx's own `Report.to_latex` given the same means and test results.
"""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from evalcore.report_tables import best, markers
from evalplatform import csp
from evalplatform.models import Team
from monitoring.embeddings import services as monitors
from monitoring.evaluations import selectors
from monitoring.evaluations import services as evaluations
from monitoring.files import uploads
from monitoring.models import Comparison, Evaluation, MonitorRun
from monitoring.reports import services as reports
from tests.monitoring.conftest import synthetic_collection, upload
from tests.monitoring.test_streams import embeddings, make_stream, npy_upload

QRELS, RUN = synthetic_collection(queries=30, docs=20)
#: The runs in id order, so lettered a, b, c.
RUNS = (("strong", 1, 3.0), ("noise", 2, 0.0), ("static", 3, 0.0))


@pytest.fixture
def comparison(team: Team, theo: User) -> Comparison:
    qrels = uploads.qrels_upload(team=team, upload=upload("judged.qrels", QRELS), uploaded_by=theo)
    runs = [
        uploads.run_upload(
            team=team,
            upload=upload(f"{name}.run", RUN(seed, quality, name)),  # type: ignore[call-arg]
            uploaded_by=theo,
        )
        for name, seed, quality in RUNS
    ]
    created = evaluations.comparison_create(qrels=qrels, runs=runs, enqueue=False)
    evaluations.comparison_run(comparison_id=created.pk)
    return selectors.get_comparison(team=team, pk=created.pk, per_query=True)


@pytest.fixture
def evaluation(comparison: Comparison) -> Evaluation:
    run = comparison.runs.get(name="strong")
    created = evaluations.evaluation_create(run=run, qrels=comparison.qrels, enqueue=False)
    evaluations.evaluation_run(evaluation_id=created.pk)
    return selectors.get_evaluation(team=comparison.team, pk=created.pk, per_query=True)


@pytest.fixture
def monitor_run(team: Team) -> MonitorRun:
    stream = make_stream(team)
    reference = monitors.snapshot_upload(
        stream=stream, upload=npy_upload(embeddings(300, seed=1), "ref.npy"),
        observed_at=timezone.now() - timedelta(hours=2),
    )  # fmt: skip
    monitors.stream_reference_set(stream=stream, snapshot=reference, enqueue=False)
    monitors.snapshot_upload(stream=stream, upload=npy_upload(embeddings(300, seed=2, shift=0.5), "now.npy"))
    for pending in monitors.stream_monitor_now(stream=stream, enqueue=False):
        monitors.monitor_run(run_id=pending.pk, split=False)
    return MonitorRun.objects.filter(stream=stream).exclude(snapshot=reference).get()


def logged_in(client: Client, user: User) -> Client:
    client.force_login(user)
    return client


# --- the tables to cite ---------------------------------------------------------------------------------


def cells(latex: str) -> list[list[tuple[bool, str, str]]]:
    """Each data row's cells as (bold, score, superscript letters), from ranx's LaTeX or ours."""
    body = latex.split("\\midrule", 1)[1].split("\\bottomrule", 1)[0]
    rows = [row for row in re.split(r"\\\\", body) if "&" in row]
    found = []
    for row in rows:
        parts = [part.strip() for part in row.split("&")][2:]
        found.append([
            (part.startswith("\\textbf"), re.search(r"[0-9]+\.[0-9]+", part)[0],  # type: ignore[index]
             (re.match(r"(?:\\textbf\{[0-9.]+\}|[0-9.]+)\$\^\{(\w*)\}\$", part) or [None, ""])[1] or "")
            for part in parts
        ])  # fmt: skip
    return found


class TestComparisonTables:
    def test_it_marks_the_runs_each_run_significantly_beats(self, comparison: Comparison) -> None:
        view = selectors.comparison_view(comparison=comparison)
        significant = {(p.run_a.name, p.run_b.name, p.measure): p.significant for p in view.pairs}
        # The known outcome: strong beats both random runs on both measures, which tie with each other.
        assert sum(significant.values()) == 4
        assert not any(v for (a, b, _), v in significant.items() if {a, b} == {"noise", "static"})
        table = reports.comparison_table(view)
        assert table.systems == ["strong", "noise", "static"] and table.measures == ["map", "ndcg_cut_10"]
        assert markers(table) == [[["b", "c"], ["b", "c"]], [[], []], [[], []]]
        assert best(table).tolist() == [[True, True], [False, False], [False, False]]

    def test_it_writes_latex_cell_by_cell(self, comparison: Comparison) -> None:
        latex = reports.comparison_latex(comparison)
        view = selectors.comparison_view(comparison=comparison)
        means = {(run, m): view.summaries[(pk, m)].mean for pk, run in ((r.pk, r.name) for r in view.runs.values())
                 for m in view.measures}  # fmt: skip
        assert cells(latex) == [
            [(True, f"{means['strong', 'map']:.3f}", "bc"), (True, f"{means['strong', 'ndcg_cut_10']:.3f}", "bc")],
            [(False, f"{means['noise', 'map']:.3f}", ""), (False, f"{means['noise', 'ndcg_cut_10']:.3f}", "")],
            [(False, f"{means['static', 'map']:.3f}", ""), (False, f"{means['static', 'ndcg_cut_10']:.3f}", "")],
        ]  # fmt: skip
        assert "\\toprule" in latex and "\\midrule" in latex and "\\bottomrule" in latex
        assert "\\textbf{ndcg\\_cut\\_10}" in latex
        # The test and its threshold are stated under the table (the caption follows the tabular).
        caption = latex.split("\\end{tabular}", 1)[1]
        assert "Paired t-test, Holm correction, $p \\le 0.05$" in caption
        assert f"Comparison {comparison.pk} on judged, 30 queries." in caption

    def test_it_agrees_with_ranx_report_on_the_same_results(self, comparison: Comparison) -> None:
        from ranx.data_structures.frozenset_dict import FrozensetDict
        from ranx.data_structures.report import Report

        view = selectors.comparison_view(comparison=comparison)
        names = [run.name for run in sorted(view.runs.values(), key=lambda r: r.pk)]
        ids = {run.name: run.pk for run in view.runs.values()}
        ranx_metric = {"map": "map", "ndcg_cut_10": "ndcg@10"}
        results = {
            n: {ranx_metric[m]: view.summaries[(ids[n], m)].mean for m in view.measures} for n in names
        }
        tests = FrozensetDict()
        for a in names:
            for b in names:
                if a < b:
                    tests[frozenset((a, b))] = {
                        ranx_metric[p.measure]: {"p_value": p.p_adjusted, "significant": p.significant}
                        for p in view.pairs if {p.run_a.name, p.run_b.name} == {a, b}
                    }  # fmt: skip
        ranx_latex = Report(
            names, results, tests, list(ranx_metric.values()), comparison.alpha, {}
        ).to_latex()
        assert cells(reports.comparison_latex(comparison)) == cells(ranx_latex)

    def test_it_writes_markdown_cell_by_cell(self, comparison: Comparison) -> None:
        markdown = reports.comparison_markdown(comparison)
        lines = markdown.splitlines()
        assert lines[0] == f"Comparison {comparison.pk} on judged, 30 queries."
        assert lines[2] == "| # | System | map | ndcg_cut_10 |" and lines[3] == "|---|---|---|---|"
        rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[4:7]]
        assert [row[:2] for row in rows] == [["a", "strong"], ["b", "noise"], ["c", "static"]]
        assert all(re.fullmatch(r"\*\*0\.\d{3}\*\*ᵇᶜ", cell) for cell in rows[0][2:]), rows[0]
        assert all(re.fullmatch(r"0\.\d{3}", cell) for row in rows[1:] for cell in row[2:]), rows[1:]
        assert "(Paired t-test, Holm correction, p ≤ 0.05)" in lines[8]


# --- the HTML reports -----------------------------------------------------------------------------------

PLOTLY_SCRIPT = re.compile(r"<script>.*?</script>", re.S)


def outside_scripts(html: str) -> str:
    """The report less its inline scripts (plotly.js holds URL strings of map tiles it never loads here)."""
    return PLOTLY_SCRIPT.sub("", html)


def assert_self_contained(html: str) -> None:
    markup = outside_scripts(html)
    assert not re.search(r"""(?:src|href|action)\s*=\s*["']?(?:https?:)?//""", markup, re.I)
    assert not re.search(r"https?://", markup), "a URL outside the inline scripts"
    assert not re.search(r"<(?:link|iframe|img|object|embed)\b", html, re.I)
    assert "<script src" not in html
    assert html.count("<script>") == 2  # plotly.js and the chart loader, inline
    assert "Plotly.newPlot" in html and '<script id="plotly-templates" type="application/json">' in html


def figures(html: str) -> dict[str, Any]:
    import json

    return {
        name: json.loads(body)
        for name, body in re.findall(
            r'<script id="(figure-[\w-]+)" type="application/json">(.*?)</script>', html, re.S
        )
    }


class TestHtmlReports:
    def test_it_makes_an_evaluation_report_with_its_figures_and_numbers(self, evaluation: Evaluation) -> None:
        html = reports.evaluation_report(evaluation)
        assert_self_contained(html)
        assert f"Evaluation #{evaluation.pk}: strong on judged" in html and "Search" in html
        shown = figures(html)
        assert set(shown) == {f"figure-{i}" for i in range(len(evaluation.results))}  # coverage measures too
        counts = shown["figure-0"]["data"][0]["y"]
        assert sum(counts) == evaluation.num_queries == 30
        for result in evaluation.results:
            assert f"{result.value:.4f}" in html
        assert "-l 1" in html and "map, ndcg_cut_10" in html

    def test_it_makes_a_comparison_report_with_the_cited_table(self, comparison: Comparison) -> None:
        html = reports.comparison_report(comparison)
        assert_self_contained(html)
        shown = figures(html)
        assert set(shown) == {"figure-means-0", "figure-pairs-0", "figure-means-1", "figure-pairs-1"}
        view = selectors.comparison_view(comparison=comparison)
        strong = next(run for run in view.runs.values() if run.name == "strong")
        mean = view.summaries[(strong.pk, "map")].mean
        assert shown["figure-means-0"]["data"][0]["y"][0] == pytest.approx(mean)
        assert f"<strong>{mean:.3f}</strong><sup>bc</sup>" in html
        assert "Paired t-test, Holm correction over every pair and measure (6 tests), α = 0.05" in html

    def test_it_makes_a_monitor_run_report(self, monitor_run: MonitorRun) -> None:
        html = reports.monitor_run_report(monitor_run)
        assert_self_contained(html)
        shown = figures(html)
        assert "figure-spectrum" in shown and len(shown) > 5
        values = monitors.run_values(monitor_run)
        drift = next(
            name for name, row in values.items() if row["section"] == "drift" and row["value"] is not None
        )
        assert f"{values[drift]['value']:.4f}" in html
        assert "n_permutations=100" in html and "Query encoder" in html

    def test_it_refuses_an_unfinished_job(self, comparison: Comparison) -> None:
        from django.http import Http404

        Comparison.objects.filter(pk=comparison.pk).update(status="running")
        comparison.refresh_from_db()
        with pytest.raises(Http404, match="running"):
            reports.comparison_report(comparison)


@pytest.fixture
def report_file(comparison: Comparison, tmp_path: Path) -> Path:
    """The report, written before Chromium starts (the database is not used while the browser runs)."""
    path = tmp_path / "report.html"
    path.write_text(reports.comparison_report(comparison), encoding="utf-8")
    return path


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_it_draws_every_chart_offline_in_chromium(report_file: Path, page: Any) -> None:
    blocked: list[str] = []

    def only_files(route: Any) -> None:
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    page.route("**/*", only_files)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(report_file.as_uri())
    page.wait_for_selector(".chart .main-svg", timeout=15_000)
    assert page.locator(".chart").count() == 4
    page.wait_for_function("document.querySelectorAll('.chart .main-svg').length >= 4", timeout=15_000)
    assert page.locator("#figure-means-0-chart .bars .point").count() == 3  # a bar per run
    assert blocked == [] and errors == []


# --- downloads: pages, API, command ---------------------------------------------------------------------


class TestDownloads:
    def test_it_offers_the_reports_on_the_pages(
        self, client: Client, vera: User, evaluation: Evaluation, comparison: Comparison
    ) -> None:
        viewer = logged_in(client, vera)
        page = viewer.get(evaluation.get_absolute_url()).content.decode()
        assert reverse("monitoring:evaluation-report", args=["search", evaluation.pk]) in page
        page = viewer.get(comparison.get_absolute_url()).content.decode()
        for name in ("comparison-report", "comparison-latex", "comparison-markdown"):
            assert reverse(f"monitoring:{name}", args=["search", comparison.pk]) in page

    def test_it_serves_each_report_as_an_attachment(
        self, client: Client, vera: User, comparison: Comparison
    ) -> None:
        viewer = logged_in(client, vera)
        response = viewer.get(reverse("monitoring:comparison-report", args=["search", comparison.pk]))
        assert response.status_code == 200 and response["Content-Type"] == "text/html; charset=utf-8"
        filename = f"search-comparison{comparison.pk}-report.html"
        assert response["Content-Disposition"] == f'attachment; filename="{filename}"'
        assert response[csp.HEADER] == csp.DOWNLOAD_POLICY
        latex = viewer.get(reverse("monitoring:comparison-latex", args=["search", comparison.pk]))
        assert latex.content.decode() == reports.comparison_latex(comparison)
        assert latex["Content-Disposition"].endswith('-table.tex"')
        markdown = viewer.get(reverse("monitoring:comparison-markdown", args=["search", comparison.pk]))
        assert markdown.content.decode() == reports.comparison_markdown(comparison)

    def test_it_serves_a_stream_runs_report_from_the_dashboard(
        self, client: Client, vera: User, monitor_run: MonitorRun
    ) -> None:
        viewer = logged_in(client, vera)
        url = reverse("monitoring:stream-run-report", args=["search", "query-encoder"])
        page = viewer.get(
            reverse("monitoring:stream-detail", args=["search", "query-encoder"])
        ).content.decode()
        assert f'action="{url}"' in page and f'<option value="{monitor_run.pk}">' in page
        newest = viewer.get(url)
        assert newest["Content-Disposition"].endswith(f'-run{monitor_run.pk}-report.html"')
        assert viewer.get(url, {"run": monitor_run.pk}).status_code == 200
        assert viewer.get(url, {"run": "x"}).status_code == 404

    def test_it_answers_the_api_with_the_same_files(
        self, client: Client, vera: User, comparison: Comparison, monitor_run: MonitorRun
    ) -> None:
        viewer = logged_in(client, vera)
        url = reverse("monitoring-api:comparison-report", args=["search", comparison.pk])
        assert viewer.get(url, {"output": "markdown"}).content.decode() == reports.comparison_markdown(
            comparison
        )
        assert viewer.get(url, {"output": "latex"})["Content-Type"] == "application/x-tex; charset=utf-8"
        refused = viewer.get(url, {"output": "pdf"})
        assert refused.status_code == 400 and "output" in refused.json()
        run_url = reverse(
            "monitoring-api:stream-run-report", args=["search", "query-encoder", monitor_run.pk]
        )
        assert b"Plotly.newPlot" in viewer.get(run_url).content

    def test_it_hides_the_reports_from_other_teams(
        self, client: Client, otto: User, comparison: Comparison
    ) -> None:
        outsider = logged_in(client, otto)
        assert (
            outsider.get(reverse("monitoring:comparison-latex", args=["search", comparison.pk])).status_code
            == 404
        )
        api = reverse("monitoring-api:comparison-report", args=["search", comparison.pk])
        assert outsider.get(api).status_code == 404

    def test_it_writes_a_report_from_the_command(self, comparison: Comparison, tmp_path: Path) -> None:
        out = tmp_path / "table.tex"
        call_command("export_report", "--team", "search", "--comparison", str(comparison.pk), "--format",
                     "latex", "--out", str(out))  # fmt: skip
        assert out.read_text() == reports.comparison_latex(comparison)
