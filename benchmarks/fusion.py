"""Fusion of ten runs: evalcore.fusion against ranx's `fuse` on the same runs, wall and CPU seconds.

    python -m benchmarks.fusion [--runs 10] [--rows 1000000] [--depth 1000] [--methods sum mnz rrf ...]
                                [--norm min-max] [--no-ranx] [--seed 0] [--json]
    python -m benchmarks.fusion --whole-process [--rows 7000000] [--methods sum rrf mnz] [--dir DIR]

Each run has `rows / depth` queries and `depth` documents per query, drawn from a per-query pool of
2·depth documents (so runs overlap, as runs over one collection do), with scores rounded to 3 decimals
(ties). The figures are for fusing runs already in memory (reading the files is `eval_retrieval`'s
benchmark): evalcore's `fuse` (stacking, grouping, normalising, combining, the fused `Run`) and
ranx's `fuse` on ranx `Run`s built beforehand (building them is not timed). CPU seconds are the
process's user + system time, so they include ranx's numba threads; on a shared machine wall time
depends on the neighbours (the load average is printed).

`--whole-process` times what a user runs: `manage.py fuse_runs` over the runs written once as TREC run
files (in rank order, as systems write them), one process per method, reading the files, fusing and
writing the fused run. It reports each process's wall and CPU seconds and peak resident memory (GNU
time's `-v` where /usr/bin/time is GNU time, else the children's `getrusage`, whose peak is the
largest child's so far), and wall and CPU seconds per input run. The files (about 36 bytes a
line: 2.3 GiB for ten 7M-line runs) go to a temporary directory removed afterwards, or to `--dir`,
where they are kept and reused; the free space is checked first. ranx is not run in this mode: the
in-memory mode with ranx peaked at 8 GiB at 10 x 1M lines, so 10 x 7M would not fit the 24 GiB
development machine (docs/fusion.md).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from evalcore.fusion import FusionParams, fuse, write_trec_run
from evalcore.retrieval import Run

BYTES_PER_LINE = 45  # "q6999 Q0 doc13999999 1000 -12.345 run9\n", with room to spare


def synthetic_runs(n_runs: int, rows: int, depth: int, seed: int) -> list[Run]:
    rng = np.random.default_rng(seed)
    return [synthetic_run(rng, rows, depth) for _ in range(n_runs)]


def synthetic_run(rng: np.random.Generator, rows: int, depth: int) -> Run:
    queries = max(1, rows // depth)
    pool = 2 * depth
    # depth distinct documents of each query's pool: the first `depth` of a random key per slot.
    keys = rng.random((queries, pool))
    picked = np.argsort(keys, axis=1)[:, :depth]
    del keys
    docs = (np.arange(queries)[:, None] * pool + picked).reshape(-1)
    codes = np.repeat(np.arange(queries, dtype=np.int32), depth)
    scores = np.round(rng.normal(size=len(docs)) * 10, 3)
    docnos = pc.binary_join_element_wise("doc", pa.array(docs).cast(pa.string()), "")
    return Run.from_codes([f"q{i}" for i in range(queries)], codes, docnos, scores)


def write_run_files(directory: Path, n_runs: int, rows: int, depth: int, seed: int) -> list[Path]:
    """The runs as TREC files in `directory`, generated one at a time (kept where already written)."""
    paths = [directory / f"run{i}-{rows}.trec" for i in range(n_runs)]
    if all(p.exists() for p in paths):
        return paths
    rng = np.random.default_rng(seed)
    for i, path in enumerate(paths):
        run = synthetic_run(rng, rows, depth)  # drawn even when the file exists, so run i stays the same
        if not path.exists():
            write_trec_run(run, path.with_suffix(".part"), tag=f"run{i}", depth=depth)
            path.with_suffix(".part").rename(path)
    return paths


_GNU_TIME = {
    "user": r"User time \(seconds\): ([\d.]+)",
    "system": r"System time \(seconds\): ([\d.]+)",
    "rss_kb": r"Maximum resident set size \(kbytes\): (\d+)",
}


def gnu_time() -> str | None:
    path = shutil.which("time") or ("/usr/bin/time" if os.path.exists("/usr/bin/time") else None)
    if path is None:
        return None
    probe = subprocess.run([path, "-v", "true"], capture_output=True, text=True, check=False)
    return path if "Maximum resident set size" in probe.stderr else None


def timed_process(command: list[str]) -> dict[str, Any]:
    """Run `command`; its wall and CPU seconds and peak resident memory in MiB."""
    time_bin = gnu_time()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    done = subprocess.run(
        ([time_bin, "-v"] if time_bin else []) + command, capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - wall
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[:3])} ... failed ({done.returncode}):\n{done.stderr[-2000:]}")
    if time_bin:
        found = {k: float(re.search(p, done.stderr).group(1)) for k, p in _GNU_TIME.items()}  # type: ignore[union-attr]
        cpu, rss_mib = found["user"] + found["system"], found["rss_kb"] / 1024
    else:
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        rss_mib = after.ru_maxrss / 1024  # Linux reports KiB; the largest child so far
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "peak_rss_mib": round(rss_mib),
        "stdout": done.stdout,
    }


def whole_process(args: argparse.Namespace) -> list[dict[str, Any]]:
    """`manage.py fuse_runs` over run files, one process per method."""
    keep = args.dir is not None
    directory = Path(args.dir) if keep else Path(tempfile.mkdtemp(prefix="fusion-bench-"))
    directory.mkdir(parents=True, exist_ok=True)
    need = args.runs * args.rows * BYTES_PER_LINE * 2  # the runs and a fused run of up to twice a run
    free = shutil.disk_usage(directory).free
    if free < need * 1.2:
        raise SystemExit(f"{directory}: {free / 2**30:.1f} GiB free, the files need {need / 2**30:.1f} GiB")
    results = []
    try:
        paths, wall, cpu = timed(
            lambda: write_run_files(directory, args.runs, args.rows, args.depth, args.seed)
        )
        size = sum(p.stat().st_size for p in paths)
        print(
            f"{args.runs} run files of {args.rows:,} lines ({size / 2**30:.2f} GiB) ready in {wall:.0f}s",
            flush=True,
        )
        manage = str(Path(__file__).resolve().parent.parent / "manage.py")
        for method in args.methods:
            weights = (
                ",".join(str(w) for w in np.linspace(1, 2, args.runs)) if method in ("wsum", "wmnz") else None
            )
            out = directory / "fused.trec"
            command = [sys.executable, manage, "fuse_runs", "--method", method, "--norm", args.norm,
                       "--out", str(out), "--json"] + [a for p in paths for a in ("--run", str(p))]  # fmt: skip
            if weights:
                command += ["--weights", weights]
            load = os.getloadavg()[0]
            measured = timed_process(command)
            summary = json.loads(measured.pop("stdout"))
            row = {"method": method, "norm": args.norm, "runs": args.runs, "lines_per_run": args.rows,
                   "fused_lines": summary["lines"], **measured,
                   "wall_s_per_run": round(measured["wall_s"] / args.runs, 2),
                   "cpu_s_per_run": round(measured["cpu_s"] / args.runs, 2),
                   "load_before": round(load, 2), "load_after": round(os.getloadavg()[0], 2)}  # fmt: skip
            out.unlink(missing_ok=True)
            results.append(row)
            print(" ".join(f"{k}={v}" for k, v in row.items()), flush=True)
    finally:
        if not keep:
            shutil.rmtree(directory, ignore_errors=True)
    return results


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
    parser.add_argument("--whole-process", action="store_true",
                        help="time `manage.py fuse_runs` over run files (default 10 x 7M lines, sum rrf mnz)")  # fmt: skip
    parser.add_argument(
        "--dir", help="--whole-process: write the run files here and keep them (default: a temp dir)"
    )
    args = parser.parse_args()

    print(f"load average before: {os.getloadavg()[0]:.2f}")
    if args.whole_process:
        if "--rows" not in sys.argv:
            args.rows = 7_000_000
        if "--methods" not in sys.argv:
            args.methods = ["sum", "rrf", "mnz"]
        results = whole_process(args)
        print(f"load average after: {os.getloadavg()[0]:.2f}")
        if args.json:
            print(json.dumps({"runs": args.runs, "rows_per_run": args.rows, "results": results}))
        return
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
