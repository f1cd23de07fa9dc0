"""Pools built from runs, for a judging project's leads: create one (its build queued on the worker),
list them, read one, and follow its progress and yield. Annotators get a 403 and non-members a 404
(`annotations.selectors.get_lead_project`); creating also takes a member of the project's linked team,
whose runs are pooled."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from evalcore.pooling import STRATEGIES
from evalplatform.errors import InputError
from monitoring.common.pagination import PAGE_PARAMETERS, page_of, paginate
from monitoring.common.serializers import FIELD_ERRORS, EvaluationErrorOut, JobStateOut, ObjectRefOut, link
from monitoring.editing.services import archived_refusal
from monitoring.evaluations.api.evaluations import queued_status
from monitoring.files.models import Run
from monitoring.pooling import selectors
from monitoring.pooling import services as pooling
from monitoring.pooling.models import DEFAULTS, JudgingPool
from monitoring.pooling.planner import (
    MEASURE,
    pool_planner_context,
    pool_simulation_measure_set,
    simulation_measure_check,
)
from monitoring.reuse.api import PlannerOut

TAGS = ["judging: pools from runs"]
NOT_FOUND = OpenApiResponse(
    EvaluationErrorOut, description="No such project for you (not a member), or no such pool."
)
FORBIDDEN = OpenApiResponse(
    EvaluationErrorOut,
    description="Pools are for the project's leads; creating one also takes a member of its linked team.",
)


class TeamRunField(serializers.PrimaryKeyRelatedField):
    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("error_messages", {"does_not_exist": "The project's team has no run {pk_value}."})
        super().__init__(queryset=Run.objects.all(), **kwargs)

    def get_queryset(self) -> Any:
        return super().get_queryset().filter(team=self.context["team"])

    def to_internal_value(self, data: Any) -> Any:
        found = super().to_internal_value(data)
        if found.archived:
            raise serializers.ValidationError(archived_refusal(found, "run"))
        return found


class SimulationMeasureField(serializers.CharField):
    """A measure that ranks the runs in a pool's simulation, as `simulation_measure_check` accepts and
    spells it (one numeric measure of the registry; blank: map)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_length=64, **kwargs)

    def to_internal_value(self, data: Any) -> str:
        try:
            return simulation_measure_check(super().to_internal_value(data))
        except InputError as error:
            raise serializers.ValidationError(str(error)) from None


class PoolIn(serializers.Serializer):
    runs = serializers.ListField(
        child=TeamRunField(), min_length=1, help_text="Ids of the linked team's runs."
    )
    strategy = serializers.ChoiceField(choices=list(STRATEGIES))
    budget = serializers.IntegerField(
        min_value=1,
        allow_null=True,
        default=None,
        help_text="Pairs to judge over all topics; null: every one.",
    )
    depth = serializers.IntegerField(min_value=1, max_value=10_000, default=DEFAULTS.depth)
    seed = serializers.IntegerField(min_value=0, max_value=2**62, default=DEFAULTS.seed)
    rrf_k = serializers.IntegerField(min_value=0, max_value=100_000, default=DEFAULTS.rrf_k)
    rbp_p = serializers.FloatField(default=DEFAULTS.rbp_p, help_text="RBP persistence, in (0, 1).")
    rel_level = serializers.IntegerField(
        min_value=0, max_value=9, default=1, help_text="Relevant: a mean counted grade at least this."
    )
    simulation_measure = SimulationMeasureField(
        default=MEASURE,
        help_text="The measure that ranks the runs in the planner's simulation (a registry name, one "
        "numeric measure).",
    )


class SimulationMeasureIn(serializers.Serializer):
    measure = SimulationMeasureField(
        allow_blank=True,
        default=MEASURE,
        help_text="The measure that ranks the runs (a registry name, one numeric measure; blank: map).",
    )


class PoolFiguresOut(serializers.Serializer):
    stage = serializers.ChoiceField(choices=JudgingPool.Stage.choices)
    candidates = serializers.IntegerField(help_text="Pairs the runs pooled over the project's topics.")
    skipped_missing = serializers.IntegerField(
        help_text="Pooled pairs left out: the project lacks the document."
    )
    tasks_created = serializers.IntegerField()
    tasks_reused = serializers.IntegerField()
    judged = serializers.IntegerField(help_text="Pool pairs with a counted answer.")
    relevant = serializers.IntegerField()
    pending = serializers.IntegerField(help_text="Pool tasks still waiting for an answer.")
    budget = serializers.IntegerField(allow_null=True)
    judged_percent = serializers.IntegerField(allow_null=True)


class SimulationStepOut(serializers.Serializer):
    judged = serializers.IntegerField()
    relevant_found = serializers.IntegerField()
    kendall_tau = serializers.FloatField(
        allow_null=True,
        help_text="Kendall's tau of the runs' ranking on the judgments so far vs on the oracle.",
    )


class SimulationCurveOut(serializers.Serializer):
    strategy = serializers.CharField()
    steps = SimulationStepOut(many=True)


class SimulationOut(serializers.Serializer):
    qrels = serializers.IntegerField(required=False, help_text="The qrels source used as the oracle.")
    qrels_name = serializers.CharField(required=False)
    measure = serializers.CharField(
        required=False, help_text="The measure that ranked the runs for Kendall's tau in this simulation."
    )
    step = serializers.IntegerField(required=False)
    budget = serializers.IntegerField(required=False, allow_null=True)
    strategies = SimulationCurveOut(many=True, required=False, help_text="Each strategy's steps.")
    reason = serializers.CharField(required=False, help_text="Why there is no simulation.")


class PoolOut(JobStateOut):
    id = serializers.IntegerField()
    url = serializers.SerializerMethodField()
    project = serializers.CharField(source="project.slug")
    team = serializers.CharField(source="team.slug")
    runs = ObjectRefOut(many=True, source="runs.all")
    strategy = serializers.CharField()
    budget = serializers.IntegerField(allow_null=True)
    depth = serializers.IntegerField()
    seed = serializers.IntegerField()
    rrf_k = serializers.IntegerField()
    rbp_p = serializers.FloatField()
    rel_level = serializers.IntegerField()
    adaptive = serializers.BooleanField(source="is_adaptive")
    figures = PoolFiguresOut(source="summary")
    simulation_measure = serializers.CharField(
        help_text="The measure chosen to rank the runs in the simulation (`simulation.measure` is the one "
        "the stored simulation ranked by: they differ while a new simulation is queued)."
    )
    simulation = SimulationOut(
        help_text="Every strategy replayed on the pool's runs with the team's newest qrels of the project as "
        "the oracle (computed by the build): relevant found and Kendall's tau against judgments."
    )

    def get_url(self, pool: JudgingPool) -> str:
        return link(self, "pool", pool.project.slug, pool.pk)


class YieldPointOut(serializers.Serializer):
    judged = serializers.IntegerField()
    relevant = serializers.IntegerField(help_text="Relevant found after this many judgments.")


class PoolProgressOut(PoolFiguresOut):
    refreshed_at = serializers.DateTimeField(allow_null=True)
    yield_curve = YieldPointOut(many=True, help_text="After each judgment, in the order judged.")
    simulation = SimulationOut()
    simulation_measure = serializers.CharField(help_text="The measure chosen to rank the runs.")
    simulation_pending = serializers.BooleanField(
        help_text="The stored simulation ranks by another measure than the one chosen (not computed yet)."
    )
    planner = PlannerOut(
        allow_null=True,
        help_text="Topic set size (Sakai 2016) from the pool's runs' per-topic scores on the newest qrels.",
    )
    planner_reason = serializers.CharField(help_text="Why there is no planner (empty when there is one).")
    planner_measure = serializers.CharField(help_text="The measure the planner read per topic.")
    planner_measures = serializers.ListField(
        child=serializers.CharField(), help_text="The measures stored per topic for every evaluated run."
    )


@extend_schema(
    methods=["GET"],
    parameters=PAGE_PARAMETERS,
    responses={200: page_of(PoolOut), 403: FORBIDDEN, 404: NOT_FOUND},
    operation_id="projects_pools_list",
    summary="The project's pools built from runs, newest first (leads)",
    tags=TAGS,
)
@extend_schema(
    methods=["POST"],
    request=PoolIn,
    responses={202: PoolOut, 400: FIELD_ERRORS, 403: FORBIDDEN, 404: NOT_FOUND, 503: PoolOut},
    summary="Pool the linked team's runs into the project's tasks by a strategy (leads; queued)",
    description="Answers 202 with the pool and its build's job state; poll `url`. The build pools each run's "
    "top `depth` documents over the project's topics, leaves out documents the project lacks, and adds the "
    "first `budget` pairs of the strategy's order as tasks (existing tasks are reused) served first, in that "
    "order. Adaptive strategies re-order the pending tasks as answers arrive. 503 when the task queue is "
    "unreachable (the pool is then `failed`, saying so).",
    tags=TAGS,
)
@api_view(["GET", "POST"])
def pool_list(request: Request, slug: str) -> Response:
    project = selectors.get_pool_project(request.user, slug)
    if request.method == "GET":
        return paginate(request, selectors.project_pools(project=project).prefetch_related("runs"), PoolOut)
    team = selectors.pool_team_for(request.user, project)
    data = PoolIn(data=request.data, context={"team": team})
    data.is_valid(raise_exception=True)
    try:
        created = pooling.pool_create(project=project, created_by=request.user, **data.validated_data)
    except InputError as error:
        raise serializers.ValidationError({"non_field_errors": [str(error)]}) from None
    pool = selectors.get_pool(project=project, pk=created.pk)
    return Response(PoolOut(pool, context={"request": request}).data, status=queued_status(pool))


@extend_schema(
    methods=["GET"],
    responses={200: PoolOut, 403: FORBIDDEN, 404: NOT_FOUND},
    summary="A pool: its parameters, its build's job state and its figures (leads)",
    tags=TAGS,
)
@extend_schema(
    methods=["DELETE"],
    responses={204: None, 403: FORBIDDEN, 404: NOT_FOUND},
    summary="Delete a pool (leads): the tasks it created that nobody started go, the answers stay",
    description="Its other unanswered tasks lose their priority; without another pool in the project the "
    "gaps asked for from a leaderboard lose theirs too, and claims take their plain path again. The project "
    "may then pool again (one pool builds or judges at a time).",
    tags=TAGS,
)
@api_view(["GET", "DELETE"])
def pool_detail(request: Request, slug: str, pk: int) -> Response:
    project = selectors.get_pool_project(request.user, slug)
    pool = selectors.get_pool(project=project, pk=pk)
    if request.method == "DELETE":
        pooling.pool_delete(pool=pool)
        return Response(status=204)
    return Response(PoolOut(pool, context={"request": request}).data)


@extend_schema(
    parameters=[
        OpenApiParameter(
            "measure", str, description="The planner's measure (a registry name, one numeric measure; map)."
        )
    ],
    responses={200: PoolProgressOut, 400: FIELD_ERRORS, 403: FORBIDDEN, 404: NOT_FOUND},
    summary="A pool's progress: judged against the budget, relevant found, and the yield after each judgment",
    tags=TAGS,
)
@api_view(["GET"])
def pool_progress(request: Request, slug: str, pk: int) -> Response:
    project = selectors.get_pool_project(request.user, slug)
    pool = selectors.get_pool(project=project, pk=pk)
    try:
        plan = pool_planner_context(pool, measure=request.query_params.get("measure", "").strip() or MEASURE)
    except InputError as error:
        raise serializers.ValidationError({"measure": [str(error)]}) from None
    body = {
        **pool.summary(),
        "refreshed_at": pool.refreshed_at,
        "yield_curve": [{"judged": p.judged, "relevant": p.relevant} for p in selectors.yield_points(pool)],
        "simulation": pool.simulation,
        "simulation_measure": plan["simulation_measure"],
        "simulation_pending": plan["simulation_pending"],
        **{key: plan[key] for key in ("planner", "planner_reason", "planner_measure", "planner_measures")},
    }
    return Response(PoolProgressOut(body).data)


@extend_schema(
    request=SimulationMeasureIn,
    responses={202: PoolOut, 400: FIELD_ERRORS, 403: FORBIDDEN, 404: NOT_FOUND, 503: PoolOut},
    summary="Simulate the strategies again, the runs ranked by a measure (leads; queued)",
    description="Stores `measure` as the pool's `simulation_measure` and queues the simulation: every "
    "strategy replayed on the pool's runs with the team's newest qrels of the project as the oracle, "
    "Kendall's tau between the runs' ranking by `measure` on the judgments so far and on the oracle. Each "
    "new qrels version of the project computes it again by that measure. Read it from `progress/` (its "
    "`simulation.measure` is the measure once computed). 400 for an unknown or non-numeric measure, or a "
    "pool not built yet; 503 when the task queue is unreachable (the choice is kept).",
    tags=TAGS,
)
@api_view(["POST"])
def pool_simulation(request: Request, slug: str, pk: int) -> Response:
    project = selectors.get_pool_project(request.user, slug)
    pool = selectors.get_pool(project=project, pk=pk)
    data = SimulationMeasureIn(data=request.data)
    data.is_valid(raise_exception=True)
    try:
        queued = pool_simulation_measure_set(pool=pool, measure=data.validated_data["measure"])
    except InputError as error:
        raise serializers.ValidationError({"non_field_errors": [str(error)]}) from None
    pool = selectors.get_pool(project=project, pk=pk)
    return Response(PoolOut(pool, context={"request": request}).data, status=202 if queued else 503)
