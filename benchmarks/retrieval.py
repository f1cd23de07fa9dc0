"""Retrieval evaluation from TREC files: evalplatform against pytrec_eval-terrier and ranx.

    python -m benchmarks.retrieval [--queries 7000 --depth 1000 --judged 28] [--repeat 3] [--json]

Writes a synthetic run (queries x depth lines, scores with ties) and qrels (about `judged` graded
documents a query, 0-3, most of them retrieved) as TREC files into a temporary directory. Then each
tool runs in a fresh subprocess, so that peak RSS (ru_maxrss of the child) is its own, and times what
a user would do: read both files and compute trec_eval's standard measures. Peak RSS is the child's
VmHWM (its own high-water mark; ru_maxrss would include the parent's memory at fork).

- evalplatform: `read_qrels`, `read_run`, `evaluate(qrels, run)`.
- pytrec_eval: `parse_qrel`, `parse_run` (Python parsing into dicts), then
  `RelevanceEvaluator(qrels, {"official"}).evaluate(run)` and the per-measure aggregates.
- ranx (if importable): `Qrels.from_file`, `Run.from_file`, `evaluate` on its closest measures. Its
  numba compilation is timed separately, on a tiny input, before the timed run.

Times are the median over `--repeat` runs (runs alternate between tools); peak RSS is the largest.
The script also checks that our aggregates equal pytrec_eval's.

Then whole processes, as a user types them, on the run as written (sorted by score) and on the same
run in random row order: the command

    python manage.py eval_retrieval --qrels Q --run R -m map -m ndcg_cut_10 -m P_10 -m recall_100 \
        -m recip_rank -m Rprec --json

(run without SECRET_KEY or DEBUG) against a Python script doing `pytrec_eval.parse_qrel`, `parse_run`
and `RelevanceEvaluator(...).evaluate` on the same files. Each is timed from start to exit,
interpreter start and imports included, its peak RSS and CPU time are its own (GNU `time`). The
target is the wall-time ratio on the run in random row order.

Before those, the run reader alone against the floor of parsing the file once with Arrow: each in a
fresh subprocess (alternated), on both run orders. The floor is `pyarrow.csv.read_csv` with the
reader's own options and column types (`evalcore.trec`); the reader is `read_run`. Each child times
its own work, imports excluded, in CPU time of all its threads (`getrusage(RUSAGE_SELF)`) and wall
time; the whole child's CPU time, interpreter start included, comes from its rusage (`os.wait4`).
The load average of the machine is printed with the results.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

# numpy and pyarrow are imported where the data are generated, never in a measured child process
# that does not need them, so that each tool's peak RSS is its own.

RANX_METRICS = ["map", "mrr", "r-precision", "bpref"] + [
    f"precision@{k}" for k in (5, 10, 15, 20, 30, 100, 200, 500, 1000)
]


# --- synthetic data --------------------------------------------------------------------------------


def _write_lines(path: Path, columns: list[pa.Array | str]) -> None:
    import pyarrow.compute as pc

    lines = pc.binary_join_element_wise(*columns, " ")
    with open(path, "wb") as handle:
        for start in range(0, len(lines), 1 << 20):
            block = lines.slice(start, 1 << 20)
            handle.write(("\n".join(block.to_pylist()) + "\n").encode())


def _text(values: np.ndarray) -> pa.Array:
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.cast(pa.array(values), pa.string())


def generate(directory: Path, queries: int, depth: int, judged: int, seed: int) -> tuple[Path, Path, Path]:
    """A run like a BM25 system's: docs drawn from a 2M-document corpus, scores rounded to 0.1 so that
    ties are common, rows sorted by score but ties in arbitrary (ascending id) order. The same run is
    also written in random row order (`run_unsorted.txt`), as a script that collects results in a
    dictionary or from parallel workers may write it. Returns (qrels, run, unsorted run)."""
    import numpy as np
    import pyarrow.compute as pc

    rng = np.random.default_rng(seed)
    corpus = 2_000_000
    gaps = rng.integers(1, 4, size=(queries, depth))
    start = rng.integers(0, corpus - 4 * depth, size=queries)[:, None]
    docs = start + np.cumsum(gaps, axis=1)
    scores = -np.sort(-np.round(rng.random((queries, depth)) * 50, 1), axis=1)
    qids = np.arange(1, queries + 1)

    run_path, unsorted_path = directory / "run.txt", directory / "run_unsorted.txt"
    columns = [
        np.repeat(qids, depth),
        docs.ravel(),
        np.tile(np.arange(1, depth + 1), queries),
        scores.ravel(),
    ]
    for path, order in ((run_path, None), (unsorted_path, rng.permutation(queries * depth))):
        qid, doc, rank, score = (c if order is None else c[order] for c in columns)
        _write_lines(
            path,
            [
                _text(qid),
                "Q0",
                pc.binary_join_element_wise("D", _text(doc), ""),
                _text(rank),
                _text(score),
                "bench",
            ],
        )

    # Judged: about 70% from the retrieved list (mostly near the top), the rest never retrieved.
    retrieved = min(depth, max(1, round(judged * 0.7)))
    top = min(depth, max(retrieved, 100))
    picks = np.argsort(rng.random((queries, top)), axis=1)[:, :retrieved]
    judged_docs = np.take_along_axis(docs, picks, axis=1)
    unretrieved = docs[:, -1:] + 100_000 + 7 * np.arange(1, judged - retrieved + 1)[None, :]
    all_docs = np.concatenate([judged_docs, unretrieved], axis=1)
    grades = rng.choice(4, size=all_docs.shape, p=[0.5, 0.25, 0.15, 0.1])
    qrels_path = directory / "qrels.txt"
    _write_lines(
        qrels_path,
        [
            _text(np.repeat(qids, all_docs.shape[1])),
            "0",
            pc.binary_join_element_wise("D", _text(all_docs.ravel()), ""),
            _text(grades.ravel()),
        ],
    )
    return qrels_path, run_path, unsorted_path


# --- the measured work, one tool per child process -------------------------------------------------


def _ours(qrels_path: str, run_path: str) -> dict[str, float]:
    from evalcore.retrieval import evaluate
    from evalcore.trec import read_qrels, read_run

    return evaluate(read_qrels(qrels_path), read_run(run_path)).aggregate


def _pytrec_eval(qrels_path: str, run_path: str) -> dict[str, float]:
    import pytrec_eval

    with open(qrels_path) as handle:
        qrels = pytrec_eval.parse_qrel(handle)
    with open(run_path) as handle:
        run = pytrec_eval.parse_run(handle)
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"official"}).evaluate(run)
    keys = next(iter(per_query.values())).keys()
    return {k: pytrec_eval.compute_aggregated_measure(k, [v[k] for v in per_query.values()]) for k in keys}


def _ranx_warm_up(directory: str) -> None:
    """Compile ranx's numba kernels on a tiny input read the same way, so the timed run reuses them."""
    from ranx import Qrels, Run, evaluate

    qrels_path, run_path = Path(directory) / "warm.qrels", Path(directory) / "warm.run"
    qrels_path.write_text("q 0 a 1\nq 0 b 0\n")
    run_path.write_text("q Q0 a 1 1.0 t\nq Q0 b 2 0.5 t\nq Q0 c 3 0.1 t\n")
    evaluate(
        Qrels.from_file(str(qrels_path), kind="trec"), Run.from_file(str(run_path), kind="trec"), RANX_METRICS
    )


def _ranx(qrels_path: str, run_path: str) -> dict[str, float]:
    from ranx import Qrels, Run, evaluate

    qrels = Qrels.from_file(qrels_path, kind="trec")
    run = Run.from_file(run_path, kind="trec")
    return {k: float(v) for k, v in evaluate(qrels, run, RANX_METRICS).items()}


TOOLS = {"evalplatform": _ours, "pytrec_eval": _pytrec_eval, "ranx": _ranx}


def _peak_rss_mb() -> float:
    """This process's peak resident set. VmHWM is reset by exec; ru_maxrss is not (on Linux it starts
    from the parent's resident set at fork), so it is the fallback only."""
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(tool: str, qrels_path: str, run_path: str) -> dict[str, object]:
    started = time.perf_counter()
    if tool == "evalplatform":
        import evalcore.retrieval  # noqa: F401
        import evalcore.trec  # noqa: F401
    elif tool == "pytrec_eval":
        import pytrec_eval  # noqa: F401
    else:
        import ranx  # noqa: F401
    imported = time.perf_counter()
    warm_up = None
    if tool == "ranx":
        _ranx_warm_up(str(Path(run_path).parent))
        warm_up = time.perf_counter() - imported
        imported = time.perf_counter()
    aggregate = TOOLS[tool](qrels_path, run_path)
    done = time.perf_counter()
    return {
        "tool": tool,
        "import_s": imported - started if warm_up is None else None,
        "compile_s": warm_up,
        "wall_s": done - imported,
        "peak_rss_mb": _peak_rss_mb(),
        "aggregate": aggregate,
    }


def _run_child(tool: str, qrels_path: Path, run_path: Path) -> dict[str, object]:
    command = [sys.executable, "-m", "benchmarks.retrieval", "--child", tool, str(qrels_path), str(run_path)]
    root = Path(__file__).resolve().parent.parent
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))
    )
    out = subprocess.run(command, capture_output=True, text=True, check=True, cwd=root, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


# --- the run reader against the Arrow parse floor ------------------------------------------------


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)  # every thread of this process
    return usage.ru_utime + usage.ru_stime


def read_child(kind: str, run_path: str) -> dict[str, object]:
    """Parse the run once with Arrow (`floor`: into Arrow's default memory pool; `floor_reader_pool`:
    into the pool the reader parses into) or read it with `read_run` (`reader`), timed alone."""
    if kind.startswith("floor"):
        import pyarrow as pa
        import pyarrow.csv as pacsv

        from evalcore.arrow import reader_pool
        from evalcore.textfiles import arrow_input
        from evalcore.trec import _TREC, _csv_options

        options = _csv_options(_TREC["run"], " ", 0, False)
        pool = reader_pool() if kind == "floor_reader_pool" else pa.default_memory_pool()

        def work() -> int:
            with arrow_input(run_path) as source:
                return int(pacsv.read_csv(source, *options, memory_pool=pool).num_rows)
    else:
        from evalcore.trec import read_run

        def work() -> int:
            return len(read_run(run_path))

    started, cpu = time.perf_counter(), _cpu_s()
    rows = work()
    return {"kind": kind, "rows": rows, "wall_s": time.perf_counter() - started, "cpu_s": _cpu_s() - cpu}


def _run_read_child(kind: str, run_path: Path) -> dict[str, object]:
    """The child's own timings, and its whole CPU time from its rusage (interpreter start included)."""
    command = [sys.executable, "-m", "benchmarks.retrieval", "--read-child", kind, str(run_path)]
    root = Path(__file__).resolve().parent.parent
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))
    )
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.PIPE, cwd=root, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        errors = process.stderr.read().decode() if process.stderr else ""
        if process.returncode:
            raise RuntimeError(f"--read-child {kind} failed: {errors}")
        output.seek(0)
        result: dict[str, object] = json.loads(output.read().decode().strip().splitlines()[-1])
    result["process_cpu_s"] = usage.ru_utime + usage.ru_stime
    return result


def reader_against_floor(runs: dict[str, Path], repeat: int) -> dict[str, object]:
    """Per run order: the median CPU and wall time of the Arrow floor and of the reader, and their ratio."""
    out: dict[str, object] = {}
    for case, run_path in runs.items():
        timings: dict[str, list[dict[str, object]]] = {"floor": [], "floor_reader_pool": [], "reader": []}
        for _ in range(repeat):
            for kind in timings:  # alternate, so that a busy spell hits both
                timings[kind].append(_run_read_child(kind, run_path))
        rows = {
            kind: {
                field: statistics.median(float(r[field]) for r in results)  # type: ignore[arg-type]
                for field in ("cpu_s", "wall_s", "process_cpu_s")
            }
            for kind, results in timings.items()
        }
        out[case] = {
            "kinds": rows,
            "cpu_ratio": rows["reader"]["cpu_s"] / rows["floor"]["cpu_s"],
            "wall_ratio": rows["reader"]["wall_s"] / rows["floor"]["wall_s"],
            "cpu_ratio_same_pool": rows["reader"]["cpu_s"] / rows["floor_reader_pool"]["cpu_s"],
            "wall_ratio_same_pool": rows["reader"]["wall_s"] / rows["floor_reader_pool"]["wall_s"],
        }
    return out


# --- whole processes: the command a user types against a pytrec_eval script -------------------------

#: The measures of the whole-process comparison.
COMMAND_MEASURES = ["map", "ndcg_cut_10", "P_10", "recall_100", "recip_rank", "Rprec"]

PYTREC_SCRIPT = """
import json, sys
import pytrec_eval
with open(sys.argv[1]) as handle:
    qrels = pytrec_eval.parse_qrel(handle)
with open(sys.argv[2]) as handle:
    run = pytrec_eval.parse_run(handle)
per_query = pytrec_eval.RelevanceEvaluator(qrels, set(sys.argv[3:])).evaluate(run)
keys = next(iter(per_query.values())).keys()
values = {k: [v[k] for v in per_query.values()] for k in keys}
print(json.dumps({k: pytrec_eval.compute_aggregated_measure(k, v) for k, v in values.items()}))
"""


#: GNU time, to read a command's own peak RSS and CPU time.
GNU_TIME = shutil.which("time", path="/usr/bin:/bin") or ""


def _command(tool: str, qrels_path: Path, run_path: Path) -> list[str]:
    if tool == "evalplatform":
        measures = [arg for m in COMMAND_MEASURES for arg in ("-m", m)]
        return [sys.executable, "manage.py", "eval_retrieval", "--qrels", str(qrels_path), "--run",
                str(run_path), *measures, "--json"]  # fmt: skip
    return [sys.executable, "-c", PYTREC_SCRIPT, str(qrels_path), str(run_path), *COMMAND_MEASURES]


def _time_process(command: list[str]) -> dict[str, object]:
    """Wall time from start to exit, CPU time and peak RSS of the command; its stdout parsed as JSON.

    The child's own ru_maxrss would include this process's memory at fork, so GNU time (itself small)
    starts the command and reports its peak RSS and CPU time.
    """
    root = Path(__file__).resolve().parent.parent
    # What the command needs, and nothing of the project's settings.
    env = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DEBUG", "DJANGO_SETTINGS_MODULE")}
    with tempfile.NamedTemporaryFile("r") as measured, tempfile.TemporaryFile() as errors:
        timed = [GNU_TIME, "-f", "%M %U %S", "-o", measured.name, *command] if GNU_TIME else command
        started = time.perf_counter()
        process = subprocess.Popen(timed, stdout=subprocess.PIPE, stderr=errors, cwd=root, env=env)
        output, _ = process.communicate()
        wall = time.perf_counter() - started
        if process.returncode:
            errors.seek(0)
            raise RuntimeError(f"{command[:3]} failed: {errors.read().decode()}")
        fields = measured.read().split()[-3:] if GNU_TIME else []
    result = json.loads(output)
    return {
        "wall_s": wall,
        "cpu_s": float(fields[1]) + float(fields[2]) if fields else float("nan"),
        "peak_rss_mb": int(fields[0]) / 1024 if fields else float("nan"),
        "aggregate": result.get("aggregate", result),
    }


def whole_processes(qrels_path: Path, runs: dict[str, Path], repeat: int) -> dict[str, object]:
    """Per run order (sorted, unsorted): each tool's median wall time, range, peak RSS and the ratio."""
    out: dict[str, object] = {}
    for case, run_path in runs.items():
        timings: dict[str, list[dict[str, object]]] = {"evalplatform": [], "pytrec_eval": []}
        for _ in range(repeat):
            for tool in timings:  # alternate, so that a busy spell hits both
                timings[tool].append(_time_process(_command(tool, qrels_path, run_path)))
        rows = {
            tool: {
                "wall_s": statistics.median(float(r["wall_s"]) for r in results),  # type: ignore[arg-type]
                "wall_s_all": [round(float(r["wall_s"]), 3) for r in results],  # type: ignore[arg-type]
                "cpu_s": statistics.median(float(r["cpu_s"]) for r in results),  # type: ignore[arg-type]
                "peak_rss_mb": max(float(r["peak_rss_mb"]) for r in results),  # type: ignore[arg-type]
            }
            for tool, results in timings.items()
        }
        diff, key = _max_difference(
            timings["evalplatform"][0]["aggregate"],  # type: ignore[arg-type]
            timings["pytrec_eval"][0]["aggregate"],  # type: ignore[arg-type]
        )
        out[case] = {
            "tools": rows,
            "ratio": float(rows["pytrec_eval"]["wall_s"]) / float(rows["evalplatform"]["wall_s"]),  # type: ignore[arg-type]
            "cpu_ratio": float(rows["pytrec_eval"]["cpu_s"]) / float(rows["evalplatform"]["cpu_s"]),  # type: ignore[arg-type]
            "max_abs_difference_vs_pytrec_eval": diff,
            "at": key,
        }
    return out


# --- the report ------------------------------------------------------------------------------------


def _available(tool: str) -> bool:
    try:
        __import__({"evalplatform": "evalcore", "pytrec_eval": "pytrec_eval", "ranx": "ranx"}[tool])
    except ImportError:
        return False
    return True


def _max_difference(ours: dict[str, float], reference: dict[str, float]) -> tuple[float, str]:
    worst, where = 0.0, ""
    for key, value in reference.items():
        if key == "runid":
            continue
        diff = abs(ours[key] - value)
        if diff > worst:
            worst, where = diff, key
    return worst, where


def benchmark(args: argparse.Namespace) -> dict[str, object]:
    tools = [t for t in TOOLS if _available(t)] if not args.whole_process_only else []
    with tempfile.TemporaryDirectory(prefix="bench-retrieval-") as tmp:
        started = time.perf_counter()
        qrels_path, run_path, unsorted_path = generate(
            Path(tmp), args.queries, args.depth, args.judged, args.seed
        )
        generated = time.perf_counter() - started
        load_before = os.getloadavg()
        orders = {"sorted": run_path, "unsorted": unsorted_path}
        reader = reader_against_floor(orders, args.repeat)
        runs: dict[str, list[dict[str, object]]] = {t: [] for t in tools}
        for _ in range(args.repeat if not args.reader_only else 0):
            for tool in tools:
                runs[tool].append(_run_child(tool, qrels_path, run_path))
        processes = whole_processes(qrels_path, orders, args.repeat) if not args.reader_only else {}
        load = {"before": load_before, "after": os.getloadavg()}
        with open(run_path, "rb") as handle:
            lines = sum(1 for _ in handle)
        with open(qrels_path, "rb") as handle:
            qrels_lines = sum(1 for _ in handle)
    data = {
        "queries": args.queries,
        "depth": args.depth,
        "judged": args.judged,
        "run_lines": lines,
        "qrels_lines": qrels_lines,
        "generate_s": round(generated, 2),
    }
    if not tools or args.reader_only:
        return {
            "data": data,
            "repeat": args.repeat,
            "load": load,
            "reader": reader,
            "whole_process": processes,
        }
    summary: dict[str, dict[str, object]] = {}
    for tool, results in runs.items():
        summary[tool] = {
            "wall_s": statistics.median(float(r["wall_s"]) for r in results),  # type: ignore[arg-type]
            "wall_s_all": [round(float(r["wall_s"]), 3) for r in results],  # type: ignore[arg-type]
            "peak_rss_mb": max(float(r["peak_rss_mb"]) for r in results),  # type: ignore[arg-type]
            "import_s": results[0]["import_s"],
            "compile_s": results[0]["compile_s"],
        }
    ours = summary["evalplatform"]
    for row in summary.values():
        row["time_ratio_vs_ours"] = float(row["wall_s"]) / float(ours["wall_s"])  # type: ignore[arg-type]
        row["rss_ratio_vs_ours"] = float(row["peak_rss_mb"]) / float(ours["peak_rss_mb"])  # type: ignore[arg-type]
    check: dict[str, object] = {}
    if "pytrec_eval" in runs:
        diff, key = _max_difference(
            runs["evalplatform"][0]["aggregate"],  # type: ignore[arg-type]
            runs["pytrec_eval"][0]["aggregate"],  # type: ignore[arg-type]
        )
        check = {"max_abs_difference_vs_pytrec_eval": diff, "at": key, "equal_to_1e-9": diff <= 1e-9}
    return {
        "data": data,
        "repeat": args.repeat,
        "tools": summary,
        "check": check,
        "aggregate": runs["evalplatform"][0]["aggregate"],
        "load": load,
        "reader": reader,
        "whole_process": processes,
    }


def _print_reader(report: dict[str, object]) -> None:
    print()
    print("the run reader alone (read_run) against parsing the file once with pyarrow.csv (its options and")
    print("column types; floor: Arrow's default memory pool, floor_reader_pool: the reader's)")
    print(
        f"{'run rows':<10}{'':<19}{'CPU s':>7}{'wall s':>8}{'process CPU s':>15}"
        "  reader / floor, reader / floor_reader_pool (CPU, wall)"
    )
    for case, result in report["reader"].items():  # type: ignore[attr-defined]
        for kind, row in result["kinds"].items():
            ratio = (
                f"{result['cpu_ratio']:.2f}x, {result['wall_ratio']:.2f}x; "
                f"{result['cpu_ratio_same_pool']:.2f}x, {result['wall_ratio_same_pool']:.2f}x"
                if kind == "reader"
                else ""
            )
            print(
                f"{case:<10}{kind:<19}{row['cpu_s']:>7.2f}{row['wall_s']:>8.2f}{row['process_cpu_s']:>15.2f}"
                f"  {ratio}"
            )
    print("target (CPU, reader / floor): <= 1.5x")


def _print_load(report: dict[str, object]) -> None:
    load = report["load"]
    shown = [" ".join(f"{v:.2f}" for v in load[when]) for when in ("before", "after")]  # type: ignore[index]
    print(f"load average (1, 5, 15 min) on {os.cpu_count()} CPUs: {shown[0]} before, {shown[1]} after")


def _print_whole_processes(report: dict[str, object]) -> None:
    if not report["whole_process"]:
        return
    print()
    print("whole processes: manage.py eval_retrieval ... --json against a pytrec_eval script")
    print(
        f"{'run rows':<10}{'tool':<14}{'wall s':>9}{'range s':>13}{'CPU s':>9}{'peak RSS MB':>13}"
        "  pytrec_eval / ours (wall, CPU)"
    )
    for case, result in report["whole_process"].items():  # type: ignore[attr-defined]
        for tool, row in result["tools"].items():
            spread = f"{min(row['wall_s_all']):.2f}-{max(row['wall_s_all']):.2f}"
            ratio = f"{result['ratio']:.1f}x, {result['cpu_ratio']:.1f}x" if tool == "pytrec_eval" else ""
            print(
                f"{case:<10}{tool:<14}{row['wall_s']:>9.2f}{spread:>13}{row['cpu_s']:>9.2f}"
                f"{row['peak_rss_mb']:>13.0f}  {ratio}"
            )
        print(
            f"{'':<10}aggregates vs pytrec_eval: max |diff| = {result['max_abs_difference_vs_pytrec_eval']:.2e}"
        )
    unsorted = report["whole_process"].get("unsorted")  # type: ignore[attr-defined]
    if unsorted:
        print(f"target (random row order, wall): >= 8x; measured {unsorted['ratio']:.1f}x")


def _print(report: dict[str, object]) -> None:
    data = report["data"]
    print(
        f"run: {data['run_lines']:,} lines, qrels: {data['qrels_lines']:,} lines "  # type: ignore[index]
        f"(generated in {data['generate_s']} s); median of {report['repeat']} runs per tool"  # type: ignore[index]
    )
    _print_load(report)
    if "tools" not in report:
        _print_reader(report)
        _print_whole_processes(report)
        return
    print(f"{'tool':<14}{'wall s':>9}{'peak RSS MB':>13}{'time x ours':>13}{'RSS x ours':>12}  notes")
    for tool, row in report["tools"].items():  # type: ignore[attr-defined]
        notes = (
            f"numba compile {row['compile_s']:.2f} s (not counted)" if row["compile_s"] is not None else ""
        )
        print(
            f"{tool:<14}{row['wall_s']:>9.2f}{row['peak_rss_mb']:>13.0f}"
            f"{row['time_ratio_vs_ours']:>13.2f}{row['rss_ratio_vs_ours']:>12.2f}  {notes}"
        )
    check = report["check"]
    if check:
        print(
            f"aggregates vs pytrec_eval: max |diff| = {check['max_abs_difference_vs_pytrec_eval']:.2e}"  # type: ignore[index]
            f" ({check['at'] or '-'}), equal to 1e-9: {check['equal_to_1e-9']}"  # type: ignore[index]
        )
    _print_reader(report)
    _print_whole_processes(report)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--queries", type=int, default=7000)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--judged", type=int, default=28)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--whole-process-only", action="store_true", help="only the command against the pytrec_eval script"
    )
    parser.add_argument(
        "--reader-only", action="store_true", help="only the run reader against the Arrow parse floor"
    )
    parser.add_argument("--child", nargs=3, metavar=("TOOL", "QRELS", "RUN"), help=argparse.SUPPRESS)
    parser.add_argument("--read-child", nargs=2, metavar=("KIND", "RUN"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0
    if args.read_child:
        print(json.dumps(read_child(*args.read_child)))
        return 0
    report = benchmark(args)
    if args.json:
        print(json.dumps(report))
    else:
        _print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
