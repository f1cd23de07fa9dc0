"""Pooling strategies on a synthetic TREC-style collection: the yield curve, Kendall's tau and the time taken.

    python -m benchmarks.pooling [--topics 50] [--runs 40] [--documents 3000] [--depth 100]
                                 [--budget-per-topic 100] [--steps 10] [--seed 0] [--json]

The collection (`evalcore.pooling.synthetic`): `--topics` topics of `--documents` documents, about 2% of
them relevant (grades 1 and 2, the share varying by topic), `--runs` runs of qualities spread from weak
to strong that share a popularity signal (so that they overlap), each returning its top `--depth`.

For every strategy, `simulate_pooling` replays it with the complete qrels as the oracle, up to a budget
of `--budget-per-topic` judgments a topic, and the tables give, at each of `--steps` steps, the relevant
documents found (the yield curve) and Kendall's tau between the ranking of the runs by MAP on the
judgments so far and on the full qrels. The timings, each the median of three (wall time and this
process's CPU time): `candidates_from_runs`; `pool_order` with no judgment and with half the budget judged
(what a re-prioritising job does: replay, then order what is pending); the whole simulation. On a shared
machine the wall time depends on the neighbours, so CPU time is the main figure; the load average is
printed before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from evalcore.pooling import (
    STRATEGIES,
    PoolParams,
    candidates_from_runs,
    judging_sequence,
    pool_order,
    simulate_pooling,
)
from evalcore.pooling.simulation import candidate_grades
from evalcore.pooling.synthetic import synthetic_collection


def timed(work: Callable[[], Any], repeats: int = 3) -> tuple[Any, float, float]:
    """(the result, median wall seconds, median CPU seconds)."""
    walls, cpus, result = [], [], None
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        result = work()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return result, statistics.median(walls), statistics.median(cpus)


def run(args: argparse.Namespace) -> dict[str, Any]:
    load_before = os.getloadavg()
    runs, qrels = synthetic_collection(
        topics=args.topics, runs=args.runs, documents=args.documents, depth=args.depth, seed=args.seed
    )
    pool, wall, cpu = timed(lambda: candidates_from_runs(runs, depth=args.depth))
    grades = candidate_grades(pool, qrels)
    truth = grades > 0
    budget = args.budget_per_topic * args.topics
    step = max(1, budget // args.steps)
    out: dict[str, Any] = {
        "collection": {
            "topics": args.topics,
            "runs": args.runs,
            "depth": args.depth,
            "candidates": len(pool),
            "hits": len(pool.hit_run),
            "relevant_in_pool": int(truth.sum()),
            "relevant_in_qrels": int((qrels.rels > 0).sum()),
        },
        "budget": budget,
        "step": step,
        "timing": {"candidates_from_runs": {"wall_s": wall, "cpu_s": cpu}},
        "strategies": {},
    }
    for strategy in STRATEGIES:
        params = PoolParams(strategy, budget=budget, depth=args.depth, seed=args.seed)
        steps, sim_wall, sim_cpu = timed(partial(simulate_pooling, runs, qrels, params, step=step), repeats=1)
        _, cold_wall, cold_cpu = timed(partial(pool_order, pool, params))
        half = judging_sequence(pool, params, truth)[: budget // 2]
        judged = [(int(i), bool(truth[i])) for i in half]
        _, warm_wall, warm_cpu = timed(partial(pool_order, pool, params, judged))
        out["strategies"][strategy] = {
            "steps": [
                {"judged": s.judged, "relevant_found": s.relevant_found, "kendall_tau": s.kendall_tau}
                for s in steps
            ],
            "timing": {
                "pool_order": {"wall_s": cold_wall, "cpu_s": cold_cpu},
                "pool_order_half_judged": {"wall_s": warm_wall, "cpu_s": warm_cpu, "judged": len(judged)},
                "simulate_pooling": {"wall_s": sim_wall, "cpu_s": sim_cpu},
            },
        }
    out["load_average"] = {"before": load_before, "after": os.getloadavg()}
    return out


def print_tables(result: dict[str, Any]) -> None:
    c = result["collection"]
    print(
        f"collection: {c['topics']} topics, {c['runs']} runs to depth {c['depth']}: {c['candidates']} candidates "
        f"({c['hits']} run hits), {c['relevant_in_pool']} relevant in the pool of {c['relevant_in_qrels']}"
    )
    print(f"budget {result['budget']} judgments, a step every {result['step']}")
    strategies = list(result["strategies"])
    marks = [s["judged"] for s in result["strategies"][strategies[0]]["steps"]]
    width = max(len(s) for s in strategies) + 1
    for title, key, fmt in (
        ("relevant found", "relevant_found", "{:>7d}"),
        ("Kendall's tau (MAP)", "kendall_tau", "{:>7.3f}"),
    ):
        print(f"\n{title}")
        print(" " * width + "".join(f"{m:>7d}" for m in marks))
        for name in strategies:
            values = [s[key] for s in result["strategies"][name]["steps"]]
            cells = "".join("      -" if v is None else fmt.format(v) for v in values)
            print(f"{name:<{width}}{cells}")
    t = result["timing"]["candidates_from_runs"]
    print(
        f"\ntiming (median of 3; wall / CPU seconds): candidates_from_runs {t['wall_s']:.3f} / {t['cpu_s']:.3f}"
    )
    print(f"{'':<{width}}{'pool_order':>18}{'half judged':>18}{'simulate (1x)':>18}")
    for name in strategies:
        t = result["strategies"][name]["timing"]
        cells = "".join(
            f"{t[k]['wall_s']:>8.3f} /{t[k]['cpu_s']:>7.3f}  "
            for k in ("pool_order", "pool_order_half_judged", "simulate_pooling")
        )
        print(f"{name:<{width}}{cells}")
    before, after = result["load_average"]["before"], result["load_average"]["after"]
    print(f"\nload average before {before[0]:.2f}, after {after[0]:.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--topics", type=int, default=50)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--documents", type=int, default=3000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--budget-per-topic", type=int, default=100)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    args = parser.parse_args(argv)
    result = run(args)
    if args.json:
        print(json.dumps(result, allow_nan=False))
    else:
        print_tables(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
