"""The judging budget planner of a pool (issue 23, point 6), from the linked team's newest qrels version
built from the pool's project (`oracle_source`):

- the topic set size design (Sakai 2016) from the per-topic scores of the pool's runs on that version,
  read from their stored evaluations (`Evaluation.per_query`) and laid out by `monitoring.reuse.services
  .planner` (the reuse page's planner, the same template);
- how relevant-document yield and ranking agreement grow with the judging budget per strategy: every
  strategy replayed on the pool's runs with that version as the oracle (`evalcore.pooling.
  simulate_pooling`). The build job computes it (`simulation_compute`) and stores it on the pool
  (`JudgingPool.simulation`). A new version of the project computes it again: `qrels_build_announced`,
  a receiver of `annotations.signals.qrels_build_done` beside the team's re-scoring, queues
  `pool_simulations_refresh` on commit, which recomputes the simulation of every built pool of the
  project whose stored one is not on that newest version (so a re-delivered task changes nothing).
  Pages read it.

The topic set size reads the measure the user picks (`planner_measure`: any one numeric measure name of
the registry, `map` by default) from the stored per-topic scores. The simulation ranks the runs by the
pool's `simulation_measure` (any one numeric measure of the registry, evaluated on the judgments so far as
on the oracle; `map` by default): a lead picks it on the page or by the API (`pool_simulation_measure_set`),
which stores it on the pool and queues `pool_simulate` (the task `monitoring.tasks.pool_simulate`), and a
new version recomputes with it. The stored simulation says which measure it ranked by (`measure`).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
from django.db import transaction

from evalcore.jsonable import json_finite
from evalcore.pooling import PoolParams, simulate_pooling
from evalcore.retrieval import UnknownMeasureError, parse_measure
from evalplatform.errors import InputError
from evalplatform.jobs import JobStatus, ProgressFn, task_send, task_send_on_commit
from monitoring.evaluations.services import read_qrels, read_run
from monitoring.files.uploads import qrels_source_for_build
from monitoring.models import Evaluation, QrelsSource
from monitoring.pooling.models import JudgingPool
from monitoring.reuse.services import planner

#: The measure whose per-topic scores feed the topic set size, and the pool's simulation's by default.
MEASURE = "map"
#: The strategies the planner replays (the fixed, the adaptive the papers compare, and the baseline).
SIMULATED = ("depth", "take-rrf", "take-rbp", "mtf", "bandit-mm-ns", "random")
#: About this many points per strategy's curve.
STEPS = 20

logger = logging.getLogger(__name__)


def oracle_source(pool: JudgingPool) -> QrelsSource | None:
    """The pool's team's qrels source of the newest done build of the pool's project."""
    return (
        QrelsSource.objects.filter(
            team_id=pool.team_id, build__project_id=pool.project_id, build__status=JobStatus.DONE
        )
        .select_related("build")
        .order_by("-build__version", "-pk")
        .first()
    )


# --- the topic set size, from stored per-topic scores -------------------------------------------------


def planner_measure_key(name: str) -> tuple[object, ...]:
    """What a measure name asks for, whatever its spelling (`P.5`, `P_5` and `P@5` ask for the same):
    the measure, its parameter and its relevance level. InputError unless the name is one numeric measure
    of the registry."""
    try:
        specs = parse_measure(name)
    except UnknownMeasureError as error:
        raise InputError(str(error)) from None
    if len(specs) != 1 or specs[0].measure.text:
        raise InputError(f"{name}: give one numeric measure, such as map or ndcg_cut_10")
    spec = specs[0]
    return (spec.measure.name, spec.param, spec.rel_level, spec.judged_only)


def _stored_key(per_query: dict[str, Any], wanted: tuple[object, ...]) -> str | None:
    """The column of `per_query` (an evaluation's, keyed as it was asked for) that holds `wanted`."""
    for key in per_query:
        try:
            if planner_measure_key(key) == wanted:
                return key
        except InputError:  # a text column (relstring)
            continue
    return None


def _done_evaluations(pool: JudgingPool, source: QrelsSource) -> Any:
    return (
        Evaluation.objects.filter(qrels=source, run__in=pool.runs.all(), status=JobStatus.DONE)
        .select_related("run")
        .order_by("run_id", "-finished_at", "-pk")
    )


def stored_measures(pool: JudgingPool, source: QrelsSource) -> list[str]:
    """The measures stored per topic for every evaluated pool run (in any of its done evaluations on
    `source`): the choices the page offers, sorted."""
    per_run: dict[int, set[str]] = {}
    for evaluation in _done_evaluations(pool, source).only("run_id", "per_query"):
        per_run.setdefault(evaluation.run_id, set()).update(evaluation.per_query or {})
    return sorted(set.intersection(*per_run.values())) if per_run else []


def topic_scores(
    pool: JudgingPool, source: QrelsSource, *, measure: str = MEASURE
) -> tuple[list[str], list[str], np.ndarray]:
    """(qids, run names, topics x runs matrix of `measure`) over the topics every evaluated run scored,
    from each pool run's newest done evaluation on `source` that has the measure per topic."""
    key = planner_measure_key(measure)
    per_run: dict[str, dict[str, float]] = {}
    seen: set[int] = set()
    for evaluation in _done_evaluations(pool, source):
        column = _stored_key(evaluation.per_query or {}, key)
        values = None if column is None else evaluation.per_query[column]
        if evaluation.run_id in seen or values is None:
            continue
        seen.add(evaluation.run_id)
        per_run[evaluation.run.name] = {
            qid: value for qid, value in zip(evaluation.qids, values, strict=True) if value is not None
        }
    if not per_run:
        return [], [], np.zeros((0, 0))
    qids = sorted(set.intersection(*(set(scores) for scores in per_run.values())))
    matrix = np.array([[per_run[name][qid] for name in per_run] for qid in qids], dtype=np.float64)
    return qids, list(per_run), matrix.reshape(len(qids), len(per_run))


# --- the simulation, computed by the build job --------------------------------------------------------


def simulation_measure_check(name: str) -> str:
    """The measure name a simulation may rank the runs by (stripped; `map` when blank): one numeric
    measure of the registry, in any of its spellings. InputError otherwise."""
    name = (name or "").strip() or MEASURE
    max_length = JudgingPool._meta.get_field("simulation_measure").max_length or 64
    if len(name) > max_length:
        raise InputError(f"A measure name is at most {max_length} characters.")
    planner_measure_key(name)
    return name


def simulation_compute(pool: JudgingPool, progress: ProgressFn | None = None) -> dict[str, Any]:
    """Every strategy replayed on the pool's runs with `oracle_source` as the oracle, the runs ranked by the
    pool's `simulation_measure` (see the module docstring), as stored on `JudgingPool.simulation`."""
    measure = pool.simulation_measure or MEASURE
    source = oracle_source(pool)
    if source is None:
        return {
            "reason": "The team has no qrels version built from this project to simulate with.",
            "measure": measure,
        }
    runs = list(pool.runs.order_by("pk"))
    if len(runs) < 2:
        return {"reason": "The simulation ranks runs: pool at least two.", "measure": measure}
    qrels = read_qrels(source)
    data = [read_run(run) for run in runs]
    names = [
        run.name if [r.name for r in runs].count(run.name) == 1 else f"{run.name} #{run.pk}" for run in runs
    ]
    budget = pool.budget  # None: every pooled pair
    step = max(1, -(-(budget or pool.candidates_count or 1) // STEPS))
    curves: list[dict[str, Any]] = []
    for number, strategy in enumerate(SIMULATED):
        if progress is not None:
            progress(number / len(SIMULATED), f"Simulating {strategy} on {source.name}")
        params = PoolParams(
            strategy, budget=budget, depth=pool.depth, seed=pool.seed, rrf_k=pool.rrf_k, rbp_p=pool.rbp_p
        )
        steps = simulate_pooling(
            data, qrels, params, step=step, measure=measure, rel_level=max(1, pool.rel_level), names=names
        )
        steps_out = [
            {"judged": s.judged, "relevant_found": s.relevant_found, "kendall_tau": s.kendall_tau}
            for s in steps
        ]
        curves.append({"strategy": strategy, "steps": steps_out})
    return json_finite(  # type: ignore[no-any-return]
        {
            "qrels": source.pk,
            "qrels_name": source.name,
            "measure": measure,
            "step": step,
            "budget": budget,
            "strategies": curves,
        }
    )


def pool_simulate(*, pool_id: int) -> JudgingPool:
    """Compute the pool's simulation again (on the newest version, by its `simulation_measure`) and store
    it, unless the measure was changed meanwhile (the task the change queued stores that one)."""
    pool = JudgingPool.objects.defer("candidates").get(pk=pool_id)
    pool.simulation = simulation_compute(pool)
    JudgingPool.objects.filter(pk=pool.pk, simulation_measure=pool.simulation_measure).update(
        simulation=pool.simulation
    )  # the counters stay the jobs'
    return pool


def pool_simulate_task(*, pool_id: int) -> bool:
    """The task's one call (`monitoring.tasks.pool_simulate`): `pool_simulate` on a built pool; a failure
    is stored as the simulation's reason, as in the build. False when there is no built pool any more."""
    from monitoring.pooling.services import LIVE  # services imports this module

    pool = JudgingPool.objects.filter(pk=pool_id, stage__in=LIVE).only("pk", "simulation_measure").first()
    if pool is None:
        return False
    try:
        pool_simulate(pool_id=pool.pk)
    except Exception as error:  # an unreadable run or oracle: the page says why
        logger.warning("pool %s: simulation by %s failed: %s", pool.pk, pool.simulation_measure, error)
        JudgingPool.objects.filter(pk=pool.pk, simulation_measure=pool.simulation_measure).update(
            simulation={
                "reason": f"The simulation by {pool.simulation_measure} failed: {error}",
                "measure": pool.simulation_measure,
            }
        )
    return True


def pool_simulation_measure_set(*, pool: JudgingPool, measure: str) -> bool:
    """Rank the pool's simulation's runs by `measure` (`simulation_measure_check`): store it on the pool and
    queue `pool_simulate` (also when it is unchanged: the simulation is run again). InputError for an
    impossible measure or a pool that is not built (its build computes the simulation). False when the
    queue is unreachable: the choice stays, and the next qrels version of the project computes it."""
    from monitoring.pooling.services import LIVE  # services imports this module
    from monitoring.tasks import pool_simulate as task

    measure = simulation_measure_check(measure)
    if pool.stage not in LIVE:
        raise InputError("The pool's build computes its simulation: choose the measure once it is built.")
    JudgingPool.objects.filter(pk=pool.pk).update(simulation_measure=measure)
    pool.simulation_measure = measure
    what = f"the simulation of pool {pool.pk} by {measure}"
    if _in_atomic_block():  # sent once the choice is committed, for the worker to read it
        task_send_on_commit(task, (pool.pk,), what=what, retry=False)
        return True
    return task_send(task, (pool.pk,), what=what, retry=False)


def _in_atomic_block() -> bool:
    return bool(transaction.get_connection().in_atomic_block)


def simulation_pending(pool: JudgingPool) -> bool:
    """The pool's stored simulation ranks by another measure than the one chosen (its task has not stored
    it yet, or was not queued)."""
    stored = (pool.simulation or {}).get("measure")
    return bool(pool.simulation) and stored is not None and stored != pool.simulation_measure


# --- a new version: the simulation again --------------------------------------------------------------


def pool_simulations_refresh(*, build_id: int) -> list[int]:
    """The task's one call after a build of a project: the linked team's source of the build made sure of
    (as the re-scoring does), then the simulation of every built pool of the project recomputed unless it
    is already on the newest version. Returns the ids of the pools recomputed (none when re-delivered)."""
    from annotations.models import QrelsBuild

    build = QrelsBuild.objects.select_related("project__team").filter(pk=build_id).first()
    if build is None or build.status != JobStatus.DONE or build.project.team is None:
        return []
    qrels_source_for_build(team=build.project.team, build=build)
    from monitoring.pooling.services import LIVE  # services imports this module

    pools = JudgingPool.objects.filter(project_id=build.project_id, stage__in=LIVE).order_by("pk")
    refreshed = []
    for pool in pools:
        source = oracle_source(pool)
        stored = pool.simulation or {}
        if source is None or (
            stored.get("qrels") == source.pk and stored.get("measure", MEASURE) == pool.simulation_measure
        ):
            continue
        try:
            pool_simulate(pool_id=pool.pk)
        except (
            Exception
        ) as error:  # as in the build: the simulation is an extra, one pool never stops the rest
            logger.warning("pool %s: simulation after build %s failed: %s", pool.pk, build_id, error)
            JudgingPool.objects.filter(pk=pool.pk).update(
                simulation={
                    "reason": f"The simulation on {source.name} failed: {error}",
                    "measure": pool.simulation_measure,
                }
            )
        refreshed.append(pool.pk)
    return refreshed


def qrels_build_announced(*, build_id: int, **kwargs: Any) -> None:
    """A receiver of `annotations.signals.qrels_build_done` (beside the re-scoring's): queue
    `pool_simulations_refresh` once committed. A broker that is down loses this refresh only (logged)."""
    from monitoring.tasks import pool_simulations_refresh as task

    task_send_on_commit(task, (build_id,), what=f"the pool simulations after qrels build {build_id}")


# --- the read side ------------------------------------------------------------------------------------


def simulation_rows(simulation: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per (strategy, step): the table beside the chart and the CSV."""
    return [
        {"strategy": curve["strategy"], **step}
        for curve in simulation.get("strategies") or []
        for step in curve["steps"]
    ]


def pool_planner_context(pool: JudgingPool, *, measure: str = MEASURE) -> dict[str, Any]:
    """The pool page's planner: `planner`/`planner_reason` (for `monitoring/reuse/_planner.html`), the
    source it reads (`planner_source`), the measure (`planner_measure`) and the measures stored per topic
    (`planner_measures`), and the stored simulation with its rows. InputError for an unknown measure."""
    planner_measure_key(measure)
    source = oracle_source(pool)
    measures: list[str] = []
    if source is None:
        context: dict[str, Any] = {
            "planner": None,
            "planner_reason": (
                "No qrels version of this project is a qrels source of the team yet: build one and "
                "evaluate the pool's runs on it to plan from their per-topic scores."
            ),
        }
    else:
        measures = stored_measures(pool, source)
        qids, names, matrix = topic_scores(pool, source, measure=measure)
        if len(names) < 2:
            context = {
                "planner": None,
                "planner_reason": (
                    f"Evaluate at least two of the pool's runs on {source.name} (with {measure}) to plan "
                    "from their per-topic scores."
                ),
            }
        else:
            context = planner(matrix, n_systems=len(names))
    simulation = pool.simulation or {}
    return {
        **context,
        "planner_source": source,
        "planner_measure": measure,
        "planner_measures": measures,
        "simulation": simulation,
        "simulation_rows": simulation_rows(simulation),
        "simulation_measure": pool.simulation_measure,
        "simulation_pending": simulation_pending(pool),
    }
