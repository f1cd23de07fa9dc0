"""Fusion of ten runs: evalcore.fusion against ranx's `fuse` on the same runs, wall and CPU seconds.

    python -m benchmarks.fusion [--runs 10] [--rows 1000000] [--depth 1000] [--methods sum mnz rrf ...]
                                [--norm min-max] [--no-ranx] [--seed 0] [--json]

Each run has `rows / depth` queries and `depth` documents per query, drawn from a per-query pool of
2·depth documents (so runs overlap, as runs over one collection do), with scores rounded to 3 decimals
(ties). The figures are for fusing runs already in memory (reading the files is `eval_retrieval`'s
benchmark): evalcore's `fuse` (stacking, grouping, normalising, combining, the fused `Run`) and
ranx's `fuse` on ranx `Run`s built beforehand (building them is not timed). CPU seconds are the
process's user + system time, so they include ranx's numba threads; on a shared machine wall time
depends on the neighbours (the load average is printed).
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from typing import Any

import numpy as np

from evalcore.fusion import FusionParams, fuse
from evalcore.retrieval import Run


def synthetic_runs(n_runs: int, rows: int, depth: int, seed: int) -> list[Run]:
    rng = np.random.default_rng(seed)
    queries = max(1, rows // depth)
    pool = 2 * depth
    qids = [f"q{i}" for i in range(queries)]
    runs = []
    for _ in range(n_runs):
        # depth distinct documents of each query's pool: the first `depth` of a random key per slot.
        keys = rng.random((queries, pool))
        picked = np.argsort(keys, axis=1)[:, :depth]
        docs = (np.arange(queries)[:, None] * pool + picked).reshape(-1)
        codes = np.repeat(np.arange(queries, dtype=np.int32), depth)
        scores = np.round(rng.normal(size=len(docs)) * 10, 3)
        docnos = np.char.add("doc", docs.astype(str)).astype(object)
        runs.append(Run.from_codes(qids, codes, docnos, scores))
    return runs


def timed(fn: Any) -> tuple[Any, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def ranx_runs(runs: list[Run]) -> list[Any]:
    import pandas as pd
    from ranx import Run as RanxRun

    out = []
    for run in runs:
        frame = pd.DataFrame(
            {
                "q_id": pd.Series(run.qids[run.qid_codes], dtype=object),
                "doc_id": pd.Series(run.docno_strings(), dtype=object),
                "score": run.scores,
            }
        )
        out.append(RanxRun.from_df(frame))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--rows", type=int, default=1_000_000, help="lines per run")
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--methods", nargs="+", default=["sum", "mnz", "med", "rrf", "bordafuse", "wsum"])
    parser.add_argument("--norm", default="min-max")
    parser.add_argument("--no-ranx", action="store_true", help="time evalcore only")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    print(f"load average before: {os.getloadavg()[0]:.2f}")
    runs, wall, _ = timed(lambda: synthetic_runs(args.runs, args.rows, args.depth, args.seed))
    print(f"{args.runs} runs x {len(runs[0]):,} lines built in {wall:.1f}s")
    theirs = None if args.no_ranx else ranx_runs(runs)
    results = []
    for method in args.methods:
        weights = tuple(np.linspace(1, 2, args.runs)) if method in ("wsum", "wmnz") else None
        params = FusionParams(method, norm=args.norm, weights=weights)
        fused, wall, cpu = timed(lambda params=params: fuse(runs, params))
        row: dict[str, Any] = {"method": method, "norm": params.norm, "lines": len(fused),
                               "evalcore_wall_s": round(wall, 2), "evalcore_cpu_s": round(cpu, 2)}  # fmt: skip
        if theirs is not None:
            from ranx import fuse as ranx_fuse

            extra = {"weights": list(weights)} if weights else {}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                _, rwall, rcpu = timed(
                    lambda p=params, e=extra: ranx_fuse(theirs, norm=p.norm, method=p.method, params=e)
                )
            row.update(ranx_wall_s=round(rwall, 2), ranx_cpu_s=round(rcpu, 2))
        results.append(row)
        print(" ".join(f"{k}={v}" for k, v in row.items()), flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    if args.json:
        print(json.dumps({"runs": args.runs, "rows_per_run": len(runs[0]), "results": results}))


if __name__ == "__main__":
    main()
