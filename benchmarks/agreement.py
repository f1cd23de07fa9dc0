"""Benchmark: Krippendorff's alpha on 1,000,000 labels, evalcore against the ``krippendorff`` package.

Synthetic relevance grades (0-4): 200,000 items, each rated by 5 of 50
annotators (1,000,000 labels). Both sides run in this one process:

- evalcore, from the long-format arrays (item index, annotator index, grade):
  ``LongLabels.from_codes`` (validation and encoding included) and
  ``krippendorff_alpha``;
- ``krippendorff.alpha`` on the dense 50 x 200,000 reliability matrix it
  needs; building that matrix is timed and reported, but not counted.

Each is timed as the best of ``--repeat`` runs, and the two alphas must be
equal to 1e-9 (the exit status is 1 otherwise). Peak traced memory is measured
in a separate run of each (``tracemalloc`` slows the timed runs). The full
Cohen's kappa matrices (unweighted, linear, quadratic) over the 1,225
annotator pairs are timed for evalcore alone.

Then, as whole processes (``--sizes``, 1M and 4M labels by default; ``--sizes ''`` skips
this), ``manage.py eval_agreement --annotations F --json`` against the pipeline a user would
otherwise write (``ANCHOR``): ``pandas.read_csv``, a pivot to the items x annotators reliability
matrix, ``krippendorff.alpha`` (ordinal), statsmodels' ``aggregate_raters`` and ``fleiss_kappa``,
and scikit-learn's ``cohen_kappa_score`` for every annotator pair and weighting, plus the exact and
pairwise agreement from the aggregated table: every value the command prints, nothing more. The
file has string ids (``q123-d45`` items, ``annotator-17``), grades 0-4, each item rated by 5 of
``--process-annotators`` annotators, rows shuffled. The two commands run alternately
(``--process-repeat`` times each), timed by GNU time (CPU time user + system and peak RSS of the
command alone), and their values must agree to 1e-9 (exit status 1 otherwise). CPU time is the
main figure: on a shared machine wall time depends on the neighbours.

    .venv/bin/python -m benchmarks.agreement [--json] [--level ordinal] [--sizes 1000000,4000000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np

from evalcore.agreement import LEVELS, Level, LongLabels, krippendorff_alpha, pair_confusion

TOLERANCE = 1e-9
ROOT = Path(__file__).resolve().parent.parent
#: GNU time, to read a command's own peak RSS and CPU time (the child's ru_maxrss would include
#: this process's memory at the fork).
GNU_TIME = shutil.which("time", path="/usr/bin:/bin") or ""
KAPPA_WEIGHTS = {"unweighted": None, "linear": "linear", "quadratic": "quadratic"}

#: What a user would write without evalplatform: the same figures as `eval_agreement --json`.
ANCHOR = """
import itertools, json, sys, time
import krippendorff, numpy as np, pandas as pd
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

stages = {"imports": time.process_time()}
path, level = sys.argv[1], sys.argv[2]
frame = pd.read_csv(path, dtype={"item": str, "annotator": str, "label": float})
frame["item"] = frame["item"].str.strip()
frame["annotator"] = frame["annotator"].str.strip()
matrix = frame.pivot(index="item", columns="annotator", values="label")  # items x annotators, NaN where missing
grades = np.unique(frame["label"].to_numpy())
# statsmodels wants each item's labels in a row: the k-th label of each item in column k.
per_item = frame.assign(k=frame.groupby("item").cumcount()).pivot(index="item", columns="k", values="label")
stages["read and pivot"] = time.process_time()
table, _ = aggregate_raters(per_item.to_numpy())
rated = table.sum(axis=1)
pairable = rated >= 2
agreeing_pairs = (table * (table - 1)).sum(axis=1)[pairable].sum()
all_pairs = (rated * (rated - 1))[pairable].sum()
fleiss = float(fleiss_kappa(table))
stages["fleiss"] = time.process_time()
cells = matrix.to_numpy()
alpha = float(krippendorff.alpha(reliability_data=cells.T, level_of_measurement=level))
stages["krippendorff"] = time.process_time()
kappas = {name: np.full((cells.shape[1], cells.shape[1]), np.nan) for name in ("unweighted", "linear", "quadratic")}
for i, j in itertools.combinations(range(cells.shape[1]), 2):
    shared = ~np.isnan(cells[:, i]) & ~np.isnan(cells[:, j])
    if shared.any():
        for name, kappa in kappas.items():
            weights = None if name == "unweighted" else name
            kappa[i, j] = kappa[j, i] = cohen_kappa_score(cells[shared, i], cells[shared, j], labels=grades, weights=weights)
stages["cohen"] = time.process_time()
print(json.dumps({
    "n_items": int(cells.shape[0]),
    "n_annotators": int(cells.shape[1]),
    "n_labels": int(len(frame)),
    "exact_agreement": float((table.max(axis=1) == rated)[pairable].mean()),
    "pairwise_agreement": float(agreeing_pairs / all_pairs),
    "fleiss_kappa": fleiss,
    "krippendorff_alpha": alpha,
    "cohen_kappa": {"annotators": [str(a) for a in matrix.columns],
                    **{name: [[None if np.isnan(x) else float(x) for x in row] for row in kappa]
                       for name, kappa in kappas.items()}},
    "stage_cpu_s": dict(zip(stages, np.diff([0.0, *stages.values()]).round(3).tolist())),
}))
"""


def synthetic_grades(
    *, n_items: int, n_annotators: int, per_item: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Long-format labels: each item gets ``per_item`` distinct annotators, grade = truth + noise, clipped to 0-4."""
    rng = np.random.default_rng(seed)
    annotators = np.argpartition(rng.random((n_items, n_annotators)), per_item, axis=1)[:, :per_item]
    truth = rng.integers(0, 5, n_items)
    noise = rng.choice([-2, -1, 0, 0, 0, 1, 2], size=(n_items, per_item))
    grades = np.clip(truth[:, None] + noise, 0, 4).astype(np.float64)
    return np.repeat(np.arange(n_items), per_item), annotators.ravel(), grades.ravel()


def best_of(repeat: int, function: Callable[[], Any]) -> tuple[float, Any]:
    best, result = np.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def peak_mib(function: Callable[[], Any]) -> float:
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def run(
    *, n_items: int, n_annotators: int, per_item: int, level: Level, repeat: int, seed: int
) -> dict[str, Any]:
    items, annotators, grades = synthetic_grades(
        n_items=n_items, n_annotators=n_annotators, per_item=per_item, seed=seed
    )

    def ours() -> float:
        labels = LongLabels.from_codes(items, annotators, grades, n_items=n_items, n_annotators=n_annotators)
        return krippendorff_alpha(labels, level=level)

    def reliability_matrix() -> np.ndarray:
        matrix = np.full((n_annotators, n_items), np.nan)
        matrix[annotators, items] = grades
        return matrix

    build_seconds, matrix = best_of(repeat, reliability_matrix)

    def package() -> float:
        return float(krippendorff.alpha(reliability_data=matrix, level_of_measurement=level))

    ours_seconds, ours_alpha = best_of(repeat, ours)
    package_seconds, package_alpha = best_of(repeat, package)

    labels = LongLabels.from_codes(items, annotators, grades, n_items=n_items, n_annotators=n_annotators)

    def kappa_matrices() -> list[np.ndarray]:
        confusion = pair_confusion(labels)
        return [confusion.kappa_matrix(weights=weights) for weights in (None, "linear", "quadratic")]

    kappa_seconds, kappas = best_of(repeat, kappa_matrices)
    return {
        "n_labels": int(grades.size),
        "n_items": n_items,
        "n_annotators": n_annotators,
        "level": level,
        "evalcore_seconds": ours_seconds,
        "krippendorff_seconds": package_seconds,
        "krippendorff_matrix_build_seconds": build_seconds,
        "speedup": package_seconds / ours_seconds,
        "evalcore_alpha": ours_alpha,
        "krippendorff_alpha": package_alpha,
        "abs_difference": abs(ours_alpha - package_alpha),
        "equal": abs(ours_alpha - package_alpha) <= TOLERANCE,
        "evalcore_peak_mib": peak_mib(ours),
        "krippendorff_peak_mib": peak_mib(package),
        "krippendorff_matrix_mib": matrix.nbytes / 2**20,
        "cohen_pairs": n_annotators * (n_annotators - 1) // 2,
        "cohen_kappa_seconds": kappa_seconds,
        "cohen_kappa_mean_linear": float(np.nanmean(kappas[1])),
        "repeat": repeat,
    }


# --- whole processes: the command against the anchor ---------------------------------------------


def write_annotations(path: Path, *, n_labels: int, n_annotators: int, seed: int) -> None:
    """``item,annotator,label`` rows in random order: items ``q<query>-d<doc>``, each rated by 5 annotators."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv

    per_item = 5
    items, annotators, grades = synthetic_grades(
        n_items=n_labels // per_item, n_annotators=n_annotators, per_item=per_item, seed=seed
    )
    order = np.random.default_rng(seed + 1).permutation(items.size)
    items, annotators, grades = items[order], annotators[order], grades[order]

    def text(values: np.ndarray) -> pa.Array:
        return pc.cast(pa.array(values), pa.string())

    columns = {
        "item": pc.binary_join_element_wise("q", text(items // 100), "-d", text(items % 100), ""),
        "annotator": pc.binary_join_element_wise("annotator-", text(annotators), ""),
        "label": text(grades.astype(np.int64)),
    }
    with open(path, "wb") as handle:
        handle.write(b"item,annotator,label\n")
        pacsv.write_csv(
            pa.table(columns), handle, pacsv.WriteOptions(include_header=False, quoting_style="none")
        )


def time_process(command: list[str]) -> dict[str, Any]:
    """Wall time from start to exit, CPU time (user + system) and peak RSS of the command, and its JSON output."""
    # What the command needs, and nothing of the project's settings.
    env = {k: v for k, v in os.environ.items() if k not in ("SECRET_KEY", "DEBUG", "DJANGO_SETTINGS_MODULE")}
    with tempfile.NamedTemporaryFile("r") as measured, tempfile.TemporaryFile() as errors:
        timed = [GNU_TIME, "-f", "%M %U %S", "-o", measured.name, *command] if GNU_TIME else command
        started = time.perf_counter()
        process = subprocess.Popen(timed, stdout=subprocess.PIPE, stderr=errors, cwd=ROOT, env=env)
        output, _ = process.communicate()
        wall = time.perf_counter() - started
        if process.returncode:
            errors.seek(0)
            raise RuntimeError(f"{command[:4]} failed: {errors.read().decode()}")
        fields = measured.read().split()[-3:] if GNU_TIME else []
    return {
        "wall_s": wall,
        "cpu_s": float(fields[1]) + float(fields[2]) if fields else float("nan"),
        "peak_rss_mb": int(fields[0]) / 1024 if fields else float("nan"),
        "values": json.loads(output),
    }


def max_difference(ours: dict[str, Any], anchor: dict[str, Any]) -> tuple[float, str]:
    """The largest |difference| between the two outputs' values, and where (inf where they differ otherwise)."""
    worst, where = 0.0, ""
    for key in ("n_items", "n_annotators", "n_labels", "exact_agreement", "pairwise_agreement", "fleiss_kappa",
                "krippendorff_alpha"):  # fmt: skip
        difference = abs(ours[key] - anchor[key])
        if not difference <= worst:
            worst, where = difference, key
    kappas_ours, kappas_anchor = ours["cohen_kappa"], anchor["cohen_kappa"]
    if kappas_ours["annotators"] != kappas_anchor["annotators"]:
        return float("inf"), "cohen_kappa annotators"
    for name in KAPPA_WEIGHTS:
        a, b = np.array(kappas_ours[name], dtype=float), np.array(kappas_anchor[name], dtype=float)
        off_diagonal = ~np.eye(len(a), dtype=bool)  # we print null there, the anchor leaves NaN
        if not np.array_equal(np.isnan(a[off_diagonal]), np.isnan(b[off_diagonal])):
            return float("inf"), f"cohen_kappa {name} (undefined in one only)"
        difference = float(np.nanmax(np.abs(a - b)[off_diagonal], initial=0.0))
        if difference > worst:
            worst, where = difference, f"cohen_kappa {name}"
    return worst, where


def whole_processes(
    *, sizes: list[int], n_annotators: int, level: Level, repeat: int, seed: int
) -> dict[str, Any]:
    """For each size: both commands' median wall and CPU time, peak RSS, the ratios and the values' agreement."""
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-agreement-") as directory:
        for size in sizes:
            path = Path(directory) / f"labels-{size}.csv"
            write_annotations(path, n_labels=size, n_annotators=n_annotators, seed=seed)
            commands = {
                "evalplatform": [sys.executable, "manage.py", "eval_agreement", "--annotations", str(path),
                                 "--level", level, "--json"],
                "anchor": [sys.executable, "-c", ANCHOR, str(path), level],
            }  # fmt: skip
            runs: dict[str, list[dict[str, Any]]] = {tool: [] for tool in commands}
            for _ in range(repeat):
                for tool, command in commands.items():  # alternate, so that a busy spell hits both
                    runs[tool].append(time_process(command))
            tools = {
                tool: {
                    "wall_s": statistics.median(r["wall_s"] for r in results),
                    "cpu_s": statistics.median(r["cpu_s"] for r in results),
                    "cpu_s_all": [round(r["cpu_s"], 2) for r in results],
                    "peak_rss_mb": max(r["peak_rss_mb"] for r in results),
                }
                for tool, results in runs.items()
            }
            difference, where = max_difference(runs["evalplatform"][0]["values"], runs["anchor"][0]["values"])
            ours, anchor = tools["evalplatform"], tools["anchor"]
            out[str(size)] = {
                "n_labels": size,
                "file_mb": path.stat().st_size / 1e6,
                "tools": tools,
                "cpu_ratio": anchor["cpu_s"] / ours["cpu_s"],
                "wall_ratio": anchor["wall_s"] / ours["wall_s"],
                "memory_ratio": anchor["peak_rss_mb"] / ours["peak_rss_mb"],
                "max_abs_difference": difference,
                "at": where,
                "anchor_stage_cpu_s": runs["anchor"][0]["values"]["stage_cpu_s"],
                "equal": difference <= TOLERANCE,
            }
            path.unlink()
    return out


def print_whole_processes(results: dict[str, Any], *, n_annotators: int, repeat: int) -> None:
    print(
        f"\nWhole process: manage.py eval_agreement --json against pandas + krippendorff + statsmodels + "
        f"scikit-learn ({n_annotators} annotators, 5 per item; median of {repeat}, alternated):"
    )
    print(f"  {'labels':>10} {'tool':<13}{'wall s':>8}{'CPU s':>8}{'peak RSS MB':>13}")
    for result in results.values():
        for tool, row in result["tools"].items():
            print(
                f"  {result['n_labels']:>10,} {tool:<13}{row['wall_s']:>8.2f}{row['cpu_s']:>8.2f}"
                f"{row['peak_rss_mb']:>13.0f}"
            )
        print(
            f"  {'':>10} anchor / ours: CPU {result['cpu_ratio']:.1f}x, wall {result['wall_ratio']:.1f}x, "
            f"memory {result['memory_ratio']:.1f}x; max |difference| {result['max_abs_difference']:.1e}"
            f"{' (' + result['at'] + ')' if result['at'] else ''}: {'equal' if result['equal'] else 'NOT equal'}"
        )
        stages = ", ".join(f"{name} {cpu:.2f}" for name, cpu in result["anchor_stage_cpu_s"].items())
        print(f"  {'':>10} the anchor's CPU seconds by stage: {stages}")
    print(f"  load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=200_000)
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument("--per-item", type=int, default=5)
    parser.add_argument("--level", choices=LEVELS, default="ordinal")
    parser.add_argument("--repeat", type=int, default=3, help="time the best of this many runs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--sizes",
        default="1000000,4000000",
        help="labels in each whole-process comparison, comma-separated ('' to skip them)",
    )
    parser.add_argument("--process-annotators", type=int, default=20)
    parser.add_argument("--process-repeat", type=int, default=3, help="runs of each command per size")
    parser.add_argument("--skip-in-process", action="store_true", help="only the whole-process comparison")
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",") if size.strip()]
    result: dict[str, Any] = {}
    if not args.skip_in_process:
        result = run(
            n_items=args.items,
            n_annotators=args.annotators,
            per_item=args.per_item,
            level=args.level,
            repeat=args.repeat,
            seed=args.seed,
        )
        if not args.json:
            print_in_process(result, per_item=args.per_item, repeat=args.repeat)
    if sizes:
        processes = whole_processes(
            sizes=sizes,
            n_annotators=args.process_annotators,
            level=args.level,
            repeat=args.process_repeat,
            seed=args.seed,
        )
        result["whole_process"] = {"runs": processes, "load_average": list(os.getloadavg())}
        if not args.json:
            print_whole_processes(processes, n_annotators=args.process_annotators, repeat=args.process_repeat)
    if args.json:
        print(json.dumps(result))
    equal = [result["equal"]] if "equal" in result else []
    equal += [run["equal"] for run in result.get("whole_process", {}).get("runs", {}).values()]
    return 0 if all(equal) else 1


def print_in_process(result: dict[str, Any], *, per_item: int, repeat: int) -> None:
    print(
        f"Krippendorff's alpha ({result['level']}) on {result['n_labels']:,} labels "
        f"({result['n_items']:,} items x {per_item} of {result['n_annotators']} annotators), "
        f"best of {repeat}:"
    )
    print(
        f"  evalcore (long format)          {result['evalcore_seconds'] * 1e3:9.1f} ms"
        f"   alpha {result['evalcore_alpha']:.15f}   peak {result['evalcore_peak_mib']:7.1f} MiB"
    )
    print(
        f"  krippendorff (dense matrix)     {result['krippendorff_seconds'] * 1e3:9.1f} ms"
        f"   alpha {result['krippendorff_alpha']:.15f}   peak {result['krippendorff_peak_mib']:7.1f} MiB"
    )
    print(
        f"    + building its {result['n_annotators']} x {result['n_items']:,} matrix "
        f"{result['krippendorff_matrix_build_seconds'] * 1e3:.1f} ms ({result['krippendorff_matrix_mib']:.0f} MiB), not counted"
    )
    print(
        f"  speedup {result['speedup']:.1f}x; |difference| {result['abs_difference']:.1e} "
        f"({'equal' if result['equal'] else 'NOT equal'} to {TOLERANCE:g})"
    )
    print(
        f"Cohen's kappa matrices (unweighted, linear, quadratic) over {result['cohen_pairs']:,} pairs: "
        f"{result['cohen_kappa_seconds'] * 1e3:.1f} ms"
    )


if __name__ == "__main__":
    sys.exit(main())
