"""The project's pool pages (its leads only): the pools with the form that creates one, a pool's
strategy, budget, progress and yield, and the yield as CSV. Pages read what the jobs stored."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST, require_safe

from evalplatform.auth import SignedInRequest
from evalplatform.csvexport import csv_response
from evalplatform.errors import InputError
from monitoring.pooling import selectors
from monitoring.pooling import services as pooling
from monitoring.pooling.charts import simulation_figure, yield_figure
from monitoring.pooling.forms import PoolForm
from monitoring.pooling.planner import (
    MEASURE,
    pool_planner_context,
    pool_simulation_measure_set,
    simulation_rows,
)


@login_required
def pool_list(request: SignedInRequest, slug: str) -> HttpResponse:
    project = selectors.get_pool_project(request.user, slug)
    form = None
    if selectors.may_pool(request.user, project):
        team = selectors.pool_team_for(request.user, project)
        form = PoolForm(request.POST or None, team=team)
    elif request.method == "POST":
        selectors.pool_team_for(request.user, project)  # 403, saying why
    if request.method == "POST" and form is not None and form.is_valid():
        data = form.cleaned_data
        try:
            pool = pooling.pool_create(
                project=project, runs=list(data["runs"]), strategy=data["strategy"], budget=data["budget"],
                depth=data["depth"], seed=data["seed"], simulation_measure=data["simulation_measure"],
                created_by=request.user,
            )  # fmt: skip
        except InputError as error:
            form.add_error(None, str(error))
        else:
            messages.success(
                request, f"Pool of {len(data['runs'])} runs queued: its tasks appear once it is built."
            )
            return redirect(pool.get_absolute_url())
    context = {"project": project, "pools": list(selectors.project_pools(project=project)), "form": form}
    return render(
        request, "monitoring/pool_list.html", context, status=400 if form is not None and form.errors else 200
    )


@login_required
@require_safe
def pool_detail(request: SignedInRequest, slug: str, pk: int) -> HttpResponse:
    project = selectors.get_pool_project(request.user, slug)
    pool = selectors.get_pool(project=project, pk=pk)
    measure = request.GET.get("measure", "").strip() or MEASURE
    status = 200
    try:
        planner_context = pool_planner_context(pool, measure=measure)
    except InputError as error:  # an unknown measure: the planner says so, the rest of the page stands
        planner_context = {**pool_planner_context(pool), "planner": None, "planner_reason": str(error)}
        planner_context["planner_measure"], status = measure, 400
    context = {
        "project": project,
        "pool": pool,
        "runs": list(pool.runs.order_by("name", "pk")),
        "figure": yield_figure(pool),
        "points": selectors.yield_table(pool),
        # The judging budget planner (issue 23, point 6): `monitoring/_pool_planner.html` lays it out.
        **planner_context,
        "simulation_figure": simulation_figure(planner_context["simulation"]),
        "leaderboard_source": planner_context["planner_source"],
        "may_see_team": selectors.may_pool(request.user, project),
    }
    return render(request, "monitoring/pool_detail.html", context, status=status)


@login_required
@require_safe
def pool_yield_csv(request: SignedInRequest, slug: str, pk: int) -> HttpResponse:
    project = selectors.get_pool_project(request.user, slug)
    pool = selectors.get_pool(project=project, pk=pk)
    rows = ((point.judged, point.relevant, point.share) for point in selectors.yield_points(pool))
    return csv_response(
        f"{project.slug}-pool-{pool.pk}-yield.csv", ["judged", "relevant_found", "relevant_share"], rows
    )


@login_required
@require_POST
def pool_refresh(request: SignedInRequest, slug: str, pk: int) -> HttpResponse:
    """Re-order the pool and refresh its figures now, as new answers would."""
    project = selectors.get_pool_project(request.user, slug)
    pool = selectors.get_pool(project=project, pk=pk)
    if pool.stage not in pooling.LIVE:
        messages.info(request, "Only a built pool is re-ordered.")
    elif pooling.pool_reprioritise_request(pool_id=pool.pk, countdown=0):
        messages.success(request, "Re-ordering queued.")
    else:
        messages.info(request, "A re-ordering is already queued.")
    return redirect(pool.get_absolute_url())


@login_required
@require_POST
def pool_simulate(request: SignedInRequest, slug: str, pk: int) -> HttpResponse:
    """Rank the runs of the pool's simulation by the measure given (blank: `map`) and compute it again
    (queued, as a new qrels version's is)."""
    project = selectors.get_pool_project(request.user, slug)
    pool = selectors.get_pool(project=project, pk=pk)
    measure = request.POST.get("measure", "")
    try:
        queued = pool_simulation_measure_set(pool=pool, measure=measure)
    except InputError as error:
        messages.error(request, str(error))
    else:
        if queued:
            messages.success(
                request, f"Simulation by {pool.simulation_measure} queued: the page shows it once computed."
            )
        else:
            messages.error(
                request,
                f"The task queue is unreachable: the simulation by {pool.simulation_measure} was not queued. "
                "Try again later (the next qrels version of the project computes it too).",
            )
    return redirect(pool.get_absolute_url() + "#simulation-heading")


@login_required
@require_POST
def pool_delete(request: SignedInRequest, slug: str, pk: int) -> HttpResponse:
    """Delete the pool (its leads): what it created that nobody started goes, what was judged stays, and
    the project can pool again."""
    project = selectors.get_pool_project(request.user, slug)
    pool = selectors.get_pool(project=project, pk=pk)
    deleted = pooling.pool_delete(pool=pool)
    messages.success(
        request,
        f"Pool #{pk} deleted, with the {deleted} task{'s' if deleted != 1 else ''} it created that nobody had "
        "started; its answers stay.",
    )
    return redirect("monitoring:pool-list", project.slug)


@never_cache
@login_required
@require_safe
def pool_state(request: SignedInRequest, slug: str, pk: int) -> JsonResponse:
    """The build job's state and the pool's figures, for the page's polling script."""
    project = selectors.get_pool_project(request.user, slug)
    pool = selectors.get_pool(project=project, pk=pk)
    return JsonResponse({**pool.state(), "pool": pool.summary()})


@login_required
@require_safe
def pool_simulation_csv(request: SignedInRequest, slug: str, pk: int) -> HttpResponse:
    """The planner's simulation: one row per strategy and step, with the measure that ranked the runs for
    Kendall's tau (a header alone without one)."""
    project = selectors.get_pool_project(request.user, slug)
    pool = selectors.get_pool(project=project, pk=pk)
    simulation = pool.simulation or {}
    measure = simulation.get("measure", "")
    rows = (
        (row["strategy"], row["judged"], row["relevant_found"], row["kendall_tau"], measure)
        for row in simulation_rows(simulation)
    )
    return csv_response(
        f"{project.slug}-pool-{pool.pk}-simulation.csv",
        ["strategy", "judged", "relevant_found", "kendall_tau", "measure"],
        rows,
    )
