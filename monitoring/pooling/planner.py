"""The judging budget planner of a pool (issue 23, point 6), from the linked team's newest qrels version
built from the pool's project (`oracle_source`):

- the topic set size design (Sakai 2016) from the per-topic scores of the pool's runs on that version,
  read from their stored evaluations (`Evaluation.per_query`) and laid out by `monitoring.reuse.services
  .planner` (the reuse page's planner, the same template);
- how relevant-document yield and ranking agreement grow with the judging budget per strategy: every
  strategy replayed on the pool's runs with that version as the oracle (`evalcore.pooling.
  simulate_pooling`). The build job computes it (`simulation_compute`) and stores it on the pool
  (`JudgingPool.simulation`); `pool_simulate` computes it again (after a new version, say). Pages read it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from evalcore.jsonable import json_finite
from evalcore.pooling import PoolParams, simulate_pooling
from evalplatform.jobs import JobStatus, ProgressFn
from monitoring.evaluations.services import read_qrels, read_run
from monitoring.models import Evaluation, QrelsSource
from monitoring.pooling.models import JudgingPool
from monitoring.reuse.services import planner

#: The measure that ranks the runs in the simulation and whose per-topic scores feed the topic set size.
MEASURE = "map"
#: The strategies the planner replays (the fixed, the adaptive the papers compare, and the baseline).
SIMULATED = ("depth", "take-rrf", "take-rbp", "mtf", "bandit-mm-ns", "random")
#: About this many points per strategy's curve.
STEPS = 20


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


def topic_scores(pool: JudgingPool, source: QrelsSource) -> tuple[list[str], list[str], np.ndarray]:
    """(qids, run names, topics x runs matrix of `MEASURE`) over the topics every evaluated run scored,
    from each pool run's newest done evaluation on `source` that has the measure per topic."""
    rows = (
        Evaluation.objects.filter(qrels=source, run__in=pool.runs.all(), status=JobStatus.DONE)
        .select_related("run")
        .order_by("run_id", "-finished_at", "-pk")
    )
    per_run: dict[str, dict[str, float]] = {}
    seen: set[int] = set()
    for evaluation in rows:
        values = (evaluation.per_query or {}).get(MEASURE)
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


def simulation_compute(pool: JudgingPool, progress: ProgressFn | None = None) -> dict[str, Any]:
    """Every strategy replayed on the pool's runs with `oracle_source` as the oracle (see the module
    docstring), as stored on `JudgingPool.simulation`."""
    source = oracle_source(pool)
    if source is None:
        return {"reason": "The team has no qrels version built from this project to simulate with."}
    runs = list(pool.runs.order_by("pk"))
    if len(runs) < 2:
        return {"reason": "The simulation ranks runs: pool at least two."}
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
            data, qrels, params, step=step, measure=MEASURE, rel_level=max(1, pool.rel_level), names=names
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
            "measure": MEASURE,
            "step": step,
            "budget": budget,
            "strategies": curves,
        }
    )


def pool_simulate(*, pool_id: int) -> JudgingPool:
    """Compute the pool's simulation again (on the newest version) and store it."""
    pool = JudgingPool.objects.get(pk=pool_id)
    pool.simulation = simulation_compute(pool)
    pool.save(update_fields=["simulation"])
    return pool


# --- the read side ------------------------------------------------------------------------------------


def simulation_rows(simulation: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per (strategy, step): the table beside the chart and the CSV."""
    return [
        {"strategy": curve["strategy"], **step}
        for curve in simulation.get("strategies") or []
        for step in curve["steps"]
    ]


def pool_planner_context(pool: JudgingPool) -> dict[str, Any]:
    """The pool page's planner: `planner`/`planner_reason` (for `monitoring/reuse/_planner.html`), the
    source it reads (`planner_source`) and the stored simulation with its rows."""
    source = oracle_source(pool)
    if source is None:
        context: dict[str, Any] = {
            "planner": None,
            "planner_reason": (
                "No qrels version of this project is a qrels source of the team yet: build one and "
                "evaluate the pool's runs on it to plan from their per-topic scores."
            ),
        }
    else:
        qids, names, matrix = topic_scores(pool, source)
        if len(names) < 2:
            context = {
                "planner": None,
                "planner_reason": (
                    f"Evaluate at least two of the pool's runs on {source.name} (with {MEASURE}) to plan "
                    "from their per-topic scores."
                ),
            }
        else:
            context = planner(matrix, n_systems=len(names))
    simulation = pool.simulation or {}
    return {
        **context,
        "planner_source": source,
        "planner_measure": MEASURE,
        "simulation": simulation,
        "simulation_rows": simulation_rows(simulation),
    }
