"""The leaderboard of one qrels source: runs x chosen measures, with bootstrap CIs, sortable, as CSV; and
every run's coverage (Judged@10, Judged@100, the unjudged share of its top 10 and 100, a warning under
Judged@10 0.9) whatever the measures chosen, with "judge the gaps" for leads of the linked project; and,
for a machine judge of the linked project chosen with `?judge=`, each run's human-only, machine-only and
prediction-powered estimates with their intervals (`monitoring.machine_judges`, read from its job)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from evalcore.coverage import DEFAULT_GAP_DEPTH, JUDGED_WARNING
from evalplatform.auth import SignedInRequest
from evalplatform.csvexport import csv_response
from evalplatform.errors import InputError
from evalplatform.jobs import JobStatus
from evalplatform.models import TeamMembership
from evalplatform.teams import get_team_for_member
from monitoring.evaluations import charts, loop, selectors
from monitoring.evaluations.selectors import LeaderboardRow, MeasureColumn, MeasureResult
from monitoring.machine_judges.forms import MachineJudgeEvaluationForm
from monitoring.machine_judges.selectors import ESTIMATES, JudgeBoard, judge_board
from monitoring.models import Evaluation, GapsRequest, QrelsSource

#: `?sort=run` sorts by the run's name; any other value is a measure.
SORT_BY_NAME = "run"


@dataclass
class LeaderboardPage:
    qrels: QrelsSource
    available: list[str]  # every measure some run has on these qrels
    columns: list[MeasureColumn]  # the chosen ones, in order
    sort: str
    rows: list[LeaderboardRow]
    machines: JudgeBoard
    archived: bool = False  # archived runs and evaluations shown

    def cells(self, row: LeaderboardRow) -> list[MeasureResult | None]:
        return [row.results.get(column.key) for column in self.columns]

    def sources(self, row: LeaderboardRow) -> list[Evaluation | None]:
        """The evaluation each of the row's cells comes from (not always the row's newest one)."""
        return [row.source(column.key) for column in self.columns]

    def query(self, **changes: str) -> str:
        """This page's query string with some parameters changed."""
        params = {
            "sort": self.sort, "measures": ",".join(c.key for c in self.columns), "judge": self.machines.param,
            "archived": "1" if self.archived else "", **changes,
        }  # fmt: skip
        return urlencode({key: value for key, value in params.items() if value})

    def query_with_archived(self) -> str:
        return self.query(archived="1")

    def query_without_archived(self) -> str:
        return self.query(archived="")


def _chosen(request: HttpRequest, available: list[str]) -> list[str]:
    asked = [name.strip() for value in request.GET.getlist("measures") for name in value.split(",")]
    chosen = [name for name in dict.fromkeys(map(selectors.measure_key, asked)) if name in available]
    return chosen or available


def _page(request: HttpRequest, team: str, pk: int) -> tuple[TeamMembership, LeaderboardPage]:
    membership = get_team_for_member(request.user, team)
    qrels = selectors.get_qrels_source(team=membership.team, pk=pk)
    archived = request.GET.get("archived") == "1"
    board = selectors.leaderboard(qrels=qrels, archived=archived)
    measures = _chosen(request, board.measures)
    sort = request.GET.get("sort", "")
    sort = sort if sort == SORT_BY_NAME else selectors.measure_key(sort)
    if sort != SORT_BY_NAME and sort not in board.measures:
        sort = measures[0] if measures else SORT_BY_NAME
    if sort == SORT_BY_NAME:
        rows = sorted(board.rows, key=lambda row: (row.run.name.lower(), row.run.pk))
    else:
        rows = board.sorted_by(sort)
    columns = [selectors.measure_column(key) for key in measures]
    machines = judge_board(qrels=qrels, asked=request.GET.get("judge"), rows=board.rows)
    return membership, LeaderboardPage(qrels, board.measures, columns, sort, rows, machines, archived)


@login_required
@require_safe
def leaderboard(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    membership, page = _page(request, team, pk)
    charted = next((c for c in page.columns if c.key == page.sort), page.columns[0] if page.columns else None)
    context: dict[str, Any] = {
        "team": membership.team,
        "membership": membership,
        "page": page,
        "rows": [
            (
                rank,
                row,
                list(zip(page.cells(row), page.sources(row), strict=True)),
                page.machines.cells(row, charted.key) if charted else [],
            )
            for rank, row in enumerate(page.rows, start=1)
        ],
        "charted": charted,
        "figure": charts.leaderboard_figure(page.rows, column=charted) if charted and page.rows else None,
        "chart_rows": [(row.run, row.results.get(charted.key)) for row in page.rows] if charted else [],
        "csv_url": reverse("monitoring:leaderboard-csv", args=[membership.team.slug, page.qrels.pk])
        + "?"
        + page.query(),
        "headers": [(column, "?" + page.query(sort=column.key)) for column in page.columns],
        "name_sort_link": "?" + page.query(sort=SORT_BY_NAME),
        "judged_warning": JUDGED_WARNING,
        "gap_depth": DEFAULT_GAP_DEPTH,
        "may_judge_gaps": loop.may_judge_gaps(user=request.user, membership=membership, qrels=page.qrels),
        "previous": loop.previous_source(page.qrels),
        "coverage_missing": sum(1 for row in page.rows if not row.coverage.computed),
        "gap_requests": [(job, gaps_outcome(job)) for job in loop.gaps_requests_recent(qrels=page.qrels)],
        **machine_judge_context(page, charted, membership),
    }
    return render(request, "monitoring/leaderboard.html", context)


def machine_judge_context(
    page: LeaderboardPage, charted: MeasureColumn | None, membership: TeamMembership
) -> dict[str, Any]:
    """The machine judge's block: its estimates of the charted measure per row, and the compute form."""
    machines = page.machines
    done = machines.done
    measure = charted.key if charted and done and charted.key in done.measures else None
    initial = {"judge": machines.judge.pk if machines.judge else None}
    return {
        "machines": machines,
        "ppi_measure": measure,
        "ppi_rows": [(row, machines.cells(row, measure)) for row in page.rows] if measure else [],
        "measures_param": ",".join(column.key for column in page.columns),
        "ppi_form": MachineJudgeEvaluationForm(judges=machines.judges, initial=initial)
        if membership.can_edit and machines.judges
        else None,
    }


@login_required
@require_safe
def leaderboard_csv(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    membership, page = _page(request, team, pk)
    header = ["rank", "run_id", "run", "label", "evaluation_id"]
    for column in page.columns:
        header += [column.key, f"{column.key}_ci_low", f"{column.key}_ci_high"]
    header += COVERAGE_HEADER
    machines = page.machines
    estimated = [c.key for c in page.columns if machines.done and c.key in machines.done.measures]
    if machines.done:
        header += ["machine_judge", "machine_judge_job", "human_queries", "human_sample_random", "stale"]
        header += [f"{key}_{name}{part}" for key in estimated for name in ESTIMATES for part in ("", "_ci_low", "_ci_high")]  # fmt: skip
    rows = []
    for rank, row in enumerate(page.rows, start=1):
        cells: list[Any] = [rank, row.run.pk, row.run.name, row.run.label, row.evaluation.pk]
        for result in page.cells(row):
            cells += [result.value, result.ci_low, result.ci_high] if result else [None, None, None]
        cells += coverage_cells(row.coverage)
        if machines.done:
            sample = machines.done.human_sample
            cells += [str(machines.judge), machines.done.pk, len(sample.get("queries", [])), sample.get("random"), machines.stale]  # fmt: skip
            for key in estimated:
                for found in machines.cells(row, key):
                    cells += [found["estimate"], found["ci_low"], found["ci_high"]] if found else [None] * 3
        rows.append(cells)
    filename = f"{membership.team.slug}-leaderboard-qrels{page.qrels.pk}.csv"
    return csv_response(filename, header, rows)


#: The coverage columns of the CSV: empty where the evaluation predates them (`coverage_computed` false).
COVERAGE_HEADER = [
    "judged_10", "judged_10_ci_low", "judged_10_ci_high", "judged_100", "judged_100_ci_low",
    "judged_100_ci_high", "unjudged_10", "unjudged_100", "coverage_warning", "coverage_computed",
]  # fmt: skip


def coverage_cells(coverage: selectors.Coverage) -> list[Any]:
    cells: list[Any] = []
    for result in (coverage.judged_10, coverage.judged_100):
        cells += [result.value, result.ci_low, result.ci_high] if result else [None, None, None]
    return cells + [coverage.unjudged_10, coverage.unjudged_100, coverage.warning, coverage.computed]


@login_required
@require_POST
def judge_gaps(request: SignedInRequest, team: str, pk: int, run: int) -> HttpResponse:
    """Add the run's unjudged top-k pairs on these qrels to the linked judging project (`loop.run_gaps_judge`)."""
    membership = get_team_for_member(request.user, team, write=True)
    qrels = selectors.get_qrels_source(team=membership.team, pk=pk)
    found = selectors.get_run(team=membership.team, pk=run)
    if not loop.may_judge_gaps(user=request.user, membership=membership, qrels=qrels):
        raise PermissionDenied(
            "Only a lead of the judging project these qrels come from can add tasks to it."
        )
    try:
        depth = int(request.POST.get("depth") or DEFAULT_GAP_DEPTH)
        loop.gaps_request_create(run=found, qrels=qrels, depth=depth, created_by=request.user)
    except ValueError:
        messages.error(request, "The depth must be a whole number.")
    except InputError as error:
        messages.error(request, str(error))
    else:
        messages.success(
            request,
            f"Judging the gaps of {found.name} in its top {depth}: queued. The table of gap requests below "
            "shows what it added.",
        )
    return redirect("monitoring:leaderboard", membership.team.slug, qrels.pk)


@login_required
@require_POST
def compute_coverage(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    """Re-evaluate, with the coverage measures, the runs whose evaluation on these qrels predates them."""
    membership = get_team_for_member(request.user, team, write=True)
    qrels = selectors.get_qrels_source(team=membership.team, pk=pk)
    queued = loop.leaderboard_coverage_compute(qrels=qrels, created_by=request.user)
    if queued:
        messages.success(
            request, f"Computing coverage: {len(queued)} evaluations queued with the same options."
        )
    else:
        messages.info(request, "Every run on this leaderboard has its coverage already.")
    return redirect("monitoring:leaderboard", membership.team.slug, qrels.pk)


def gaps_outcome(job: GapsRequest) -> str:
    """A gap request's state in words: what it added once done, its error if it failed."""
    if job.status == JobStatus.DONE:
        return gaps_message(job.run.name, loop.GapsJudged(**job.result))
    if job.status == JobStatus.FAILED:
        return job.error or "Failed."
    return "Waiting for a worker." if job.status == JobStatus.PENDING else "Reading the run and the qrels…"


def gaps_message(run: str, done: loop.GapsJudged) -> str:
    """What a finished "judge the gaps" did, in a sentence."""
    skipped = done.missing_topic + done.missing_document
    return (
        f"{run}: {done.unjudged} unjudged pairs in its top {done.depth}; {done.created} added to "
        f"{done.project} as tasks, {done.existing} already tasks, {skipped} skipped "
        f"({done.missing_topic} of topics and {done.missing_document} of documents the project lacks)."
        + (f" {done.prioritised} served first, before the project's pools." if done.prioritised else "")
    )
