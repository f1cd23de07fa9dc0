"""Click models on simulated search logs of 1M and 10M impressions: the whole `derive_click_judgments`
process per model (wall time, CPU time and peak memory), and how well its grades follow the truth.

    python -m benchmarks.clicks [--rows 1000000 10000000] [--depth 10] [--docs-per-query 20]
                                [--impressions-per-doc 50] [--models coec pbm dbn] [--seed 0] [--json]

Each log is drawn from a DBN (`evalcore.clicks.simulate_log`, continuation 0.7): `rows / depth` sessions,
each showing `--depth` of its query's `--docs-per-query` documents in a random order, with as many queries
as make each document shown about `--impressions-per-doc` times. It is written as the command's CSV
(integer ids), then `manage.py derive_click_judgments --log LOG --model M --json --out QRELS` runs in a
fresh process for each model, and the figures are that process's: wall seconds, CPU seconds (user +
system, from `wait4`) and peak resident memory. The quality column is Spearman's correlation between the
grades written and the true relevance (attractiveness x satisfaction) over the judged pairs. On a shared
machine the wall time depends on the neighbours; the load average is printed before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from evalcore.clicks import simulate_log

ROOT = Path(__file__).resolve().parents[1]


def write_log(path: Path, sim: Any) -> None:
    log = sim.log
    table = pa.table(
        {
            "session": pa.array(log.session),
            "query": pa.array(log.query),
            "doc": pa.array(log.doc),
            "position": pa.array(log.position),
            "clicked": pa.array(log.clicked.astype(np.int8)),
        }
    )
    pacsv.write_csv(table, path, pacsv.WriteOptions(quoting_style="none"))


def run_measured(log: Path, model: str, out: Path) -> dict[str, Any]:
    command = [sys.executable, str(ROOT / "manage.py"), "derive_click_judgments", "--log", str(log),
               "--model", model, "--json", "--out", str(out)]  # fmt: skip
    with tempfile.TemporaryFile() as captured, tempfile.TemporaryFile() as errors:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=captured, stderr=errors, cwd=ROOT)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode:
            errors.seek(0)
            raise RuntimeError(errors.read().decode())
        captured.seek(0)
        summary = json.loads(captured.read())
    return {
        "summary": summary,
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_mib": usage.ru_maxrss / 1024,
    }


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    def ranks(v: np.ndarray) -> np.ndarray:
        order = np.argsort(v, kind="stable")
        sorted_v = v[order]
        starts = np.r_[True, sorted_v[1:] != sorted_v[:-1]]
        group = np.cumsum(starts) - 1
        first = np.flatnonzero(starts)
        counts = np.diff(np.r_[first, v.size])
        average = first + (counts - 1) / 2.0
        out = np.empty(v.size)
        out[order] = average[group]
        return out

    return float(np.corrcoef(ranks(x), ranks(y))[0, 1])


def grade_quality(out: Path, sim: Any) -> float:
    table = pacsv.read_csv(
        out,
        pacsv.ReadOptions(column_names=["q", "it", "doc", "grade"]),
        pacsv.ParseOptions(delimiter=" "),
    )
    docs = np.asarray(table.column("doc").to_numpy(), dtype=np.int64)
    grades = np.asarray(table.column("grade").to_numpy(), dtype=np.float64)
    truth = sim.attractiveness[docs] * sim.satisfaction[docs]
    return spearman(grades, truth)


def run(args: argparse.Namespace) -> dict[str, Any]:
    result: dict[str, Any] = {"load_average": {"before": os.getloadavg()}, "logs": []}
    with tempfile.TemporaryDirectory(prefix="bench-clicks-") as directory:
        for rows in args.rows:
            sessions = rows // args.depth
            queries = max(1, round(sessions * args.depth / (args.impressions_per_doc * args.docs_per_query)))
            sim = simulate_log(
                model="dbn", sessions=sessions, queries=queries, docs_per_query=args.docs_per_query,
                depth=args.depth, seed=args.seed,
            )  # fmt: skip
            log = Path(directory) / f"log-{rows}.csv"
            write_log(log, sim)
            entry: dict[str, Any] = {
                "rows": sim.log.num_rows, "sessions": sessions, "queries": queries,
                "documents": queries * args.docs_per_query, "csv_mib": log.stat().st_size / 2**20, "models": {},
            }  # fmt: skip
            for model in args.models:
                out = Path(directory) / f"{model}-{rows}.qrels"
                measured = run_measured(log, model, out)
                measured["spearman_grade_truth"] = grade_quality(out, sim)
                summary = measured.pop("summary")
                measured.update(
                    judged_pairs=summary["judged_pairs"], grades=summary["grades"],
                    iterations=summary["iterations"], converged=summary["converged"],
                    positions=summary["positions"],
                )  # fmt: skip
                entry["models"][model] = measured
                print(f"  {rows:>10,} rows  {model:<5} {_row(measured)}", file=sys.stderr, flush=True)
            result["logs"].append(entry)
    result["load_average"]["after"] = os.getloadavg()
    return result


def _row(m: dict[str, Any]) -> str:
    return (
        f"{m['wall_s']:>8.2f} {m['cpu_s']:>8.2f} {m['peak_rss_mib']:>9.0f} {m['iterations']:>5} "
        f"{m['judged_pairs']:>8} {m['spearman_grade_truth']:>8.3f}"
    )


def print_tables(result: dict[str, Any]) -> None:
    for entry in result["logs"]:
        print(
            f"\n{entry['rows']:,} impressions ({entry['sessions']:,} sessions, {entry['queries']:,} queries, "
            f"{entry['documents']:,} documents; CSV {entry['csv_mib']:.0f} MiB)"
        )
        print(
            f"{'model':<6}{'wall s':>8} {'CPU s':>8} {'peak MiB':>9} {'iter':>5} {'judged':>8} {'spearman':>8}"
        )
        for model, m in entry["models"].items():
            print(f"{model:<6}{_row(m)}")
    before, after = result["load_average"]["before"], result["load_average"]["after"]
    print(f"\nload average before {before[0]:.2f}, after {after[0]:.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--depth", type=int, default=10)
    parser.add_argument("--docs-per-query", type=int, default=20)
    parser.add_argument("--impressions-per-doc", type=int, default=50)
    parser.add_argument("--models", nargs="+", default=["coec", "pbm", "dbn"], choices=["coec", "pbm", "dbn"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    args = parser.parse_args(argv)
    result = run(args)
    if args.json:
        print(json.dumps(result))
    else:
        print_tables(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
