"""Recommendation and fraud metrics from CSV files: evalplatform against what a user would write.

    python -m benchmarks.recsys_fraud [--users 1000000 --k 20 --items 1000000 --scores 10000000] [--json]

Writes synthetic files into a temporary directory:

- recommendations `user,item,rank`: `--users` users x top-`--k` (20M rows by default) over a
  `--items` catalog (1M), item popularity skewed so that exposure is concentrated; held-out
  interactions `user,item` (5 per user); the item table `item,category` (50 categories);
- fraud scores `id,score,label`: `--scores` rows (10M), 1% fraud, scores rounded to 1e-4 (ties).

Each tool then runs in a fresh subprocess, timed as a whole process (interpreter start, imports,
reading the files, computing, exit), with its peak RSS (the child's VmHWM); "imports+work" is the
part after the interpreter has started:

- recommendation metrics: evalplatform (`read_recsys_files`, `evaluate_recommendations`: accuracy@k,
  coverage, both Gini coefficients, category coverage, ARP ratio, ARP, APLT, novelty, intra-list
  diversity by category, serendipity against the most popular items) against pandas (`read_csv`,
  `merge`, `groupby`, `value_counts`, `map`) computing the same metrics;
- fraud metrics: evalplatform (`read_scores`, `evaluate_scores`: the ROC curve, ROC-AUC, PR-AUC,
  the detection rate at 1% FPR both ways, costs at that point) against pandas `read_csv` with
  scikit-learn's `roc_curve`, `roc_auc_score` and `average_precision_score` (and the detection rate
  and costs read off that curve).

The two sides' values are compared (they must agree to 1e-9). Our side also runs at a quarter and a
half of the size, to show that time grows linearly with rows (in CPU time: on a shared machine the
wall time of one run depends on its neighbours; the catalog's 1M items are a fixed cost).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

K_DEFAULT = 20
TARGET_FPR = 0.01
HEAD_SHARE = 0.8
# numpy, pandas, pyarrow and the tools are imported inside the functions, so that each child's
# imports and peak memory are its own.


# --- synthetic data --------------------------------------------------------------------------------


def _write_csv(path: Path, header: str, columns: dict[str, Any]) -> None:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    with open(path, "wb") as handle:
        handle.write((header + "\n").encode())
        pacsv.write_csv(
            pa.table(columns), handle, pacsv.WriteOptions(include_header=False, quoting_style="none")
        )


def _ids(prefix: str, values: Any) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.binary_join_element_wise(prefix, pc.cast(pa.array(values), pa.string()), "")


def generate_recsys(directory: Path, users: int, k: int, items: int, seed: int) -> dict[str, Path]:
    """Lists sorted by user then rank (as a recommender writes them), distinct items per list."""
    import numpy as np

    rng = np.random.default_rng(seed)
    # Each list starts at a Pareto-distributed item, so that a few items get most of the exposure,
    # and walks forward by gaps of 1-39: its items are distinct.
    start = (rng.pareto(1.2, users) * 1000).astype(np.int64) % items
    lists = (start[:, None] + np.cumsum(rng.integers(1, 40, (users, k)), axis=1)) % items
    paths = {name: directory / f"{name}.csv" for name in ("recs", "interactions", "items")}
    user_col = np.repeat(np.arange(users), k)
    _write_csv(
        paths["recs"],
        "user,item,rank",
        {
            "user": _ids("u", user_col),
            "item": _ids("i", lists.ravel()),
            "rank": np.tile(np.arange(1, k + 1), users),
        },
    )
    near = lists[:, :5] + rng.integers(0, 3, (users, 5))
    popular = (rng.pareto(1.2, (users, 5)) * 1000).astype(np.int64)
    held_out = np.where(rng.random((users, 5)) < 0.3, near, popular) % items
    _write_csv(
        paths["interactions"],
        "user,item",
        {"user": _ids("u", np.repeat(np.arange(users), 5)), "item": _ids("i", held_out.ravel())},
    )
    _write_csv(
        paths["items"],
        "item,category",
        {"item": _ids("i", np.arange(items)), "category": _ids("c", rng.integers(0, 50, items))},
    )
    return paths


def generate_scores(directory: Path, n: int, seed: int) -> Path:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    rng = np.random.default_rng(seed)
    labels = (rng.random(n) < 0.01).astype(np.int8)
    scores = np.clip(rng.normal(0.3 + 0.25 * labels, 0.15), 0, 1)
    path = directory / "scores.csv"
    text = pc.utf8_slice_codeunits(pc.cast(pa.array(np.round(scores, 4)), pa.string()), 0, 6)
    _write_csv(path, "id,score,label", {"id": _ids("t", np.arange(n)), "score": text, "label": labels})
    return path


# --- the measured work: one tool per child process -------------------------------------------------


def ours_recsys(paths: dict[str, str], k: int) -> dict[str, float]:
    from evalcore.recsys import evaluate_recommendations, read_recsys_files

    files = read_recsys_files(paths["recs"], paths["interactions"], items=paths["items"], k=k)
    names = [n for n in RECSYS_METRICS]
    return evaluate_recommendations(files.data, metrics=names)


RECSYS_METRICS = (
    "hit_rate", "precision_at_k", "recall_at_k", "ndcg_at_k", "catalog_coverage", "gini", "gini_recommended",
    "category_coverage", "popularity_bias", "arp", "aplt", "novelty", "intra_list_diversity", "serendipity_baseline",
)  # fmt: skip


def pandas_recsys(paths: dict[str, str], k: int) -> dict[str, float]:
    """The same metrics as a pandas user would write them: merges, groupbys and value counts."""
    import numpy as np
    import pandas as pd

    def gini(values: Any) -> float:
        x = np.sort(np.asarray(values, dtype=float))
        n = x.size
        return float(((2 * np.arange(1, n + 1) - n - 1) * x).sum() / (n * x.sum()))

    recs = pd.read_csv(paths["recs"])
    interactions = pd.read_csv(paths["interactions"])
    items = pd.read_csv(paths["items"])
    recs = recs[recs["rank"] <= k]

    relevant = interactions.drop_duplicates()
    marked = recs.merge(relevant.assign(hit=1), on=["user", "item"], how="left")
    marked["hit"] = marked["hit"].fillna(0)
    marked["gain"] = marked["hit"] / np.log2(marked["rank"] + 1)
    per_user = marked.groupby("user").agg(hits=("hit", "sum"), dcg=("gain", "sum"))
    per_user = per_user.join(relevant.groupby("user").size().rename("n_relevant"), how="inner")
    ideal = np.concatenate([[0.0], np.cumsum(1 / np.log2(np.arange(2, k + 2)))])
    per_user["idcg"] = ideal[np.minimum(per_user["n_relevant"], k)]

    exposure = recs["item"].value_counts().reindex(items["item"], fill_value=0)
    popularity = interactions["item"].value_counts().reindex(items["item"], fill_value=0)
    category = items.set_index("item")["category"]
    recs = recs.assign(
        category=recs["item"].map(category),
        pop=recs["item"].map(popularity),
    )
    # The long tail: items outside the most popular ones that hold 80% of the interactions.
    counts = popularity.value_counts().sort_index(ascending=False)
    mass = counts.index.to_numpy() * counts.to_numpy()
    above = pd.Series(np.cumsum(mass) - mass, index=counts.index)
    head = (popularity.map(above) < HEAD_SHARE * popularity.sum()) & (popularity > 0)
    recs["tail"] = recs["item"].map(~head)
    information = np.log2(popularity.sum()) - np.log2(np.maximum(popularity, 1))
    recs["info"] = recs["item"].map(information)
    lists = recs.groupby("user").agg(
        pop=("pop", "mean"), tail=("tail", "mean"), info=("info", "mean"), n=("item", "size")
    )
    same = recs.groupby(["user", "category"]).size()
    alike = (same * (same - 1) / 2).groupby(level="user").sum()
    pairs = lists["n"] * (lists["n"] - 1) / 2
    diverse = (1 - alike / pairs)[lists["n"] >= 2]
    baseline = set(popularity.nlargest(k).index)
    marked["surprise"] = (marked["hit"] == 1) & ~marked["item"].isin(baseline)
    surprise = marked.groupby("user")["surprise"].sum().reindex(per_user.index)
    return {
        "hit_rate": float((per_user["hits"] > 0).mean()),
        "precision_at_k": float((per_user["hits"] / k).mean()),
        "recall_at_k": float((per_user["hits"] / per_user["n_relevant"]).mean()),
        "ndcg_at_k": float((per_user["dcg"] / per_user["idcg"]).mean()),
        "catalog_coverage": float((exposure > 0).mean()),
        "gini": gini(exposure.to_numpy()),
        "gini_recommended": gini(exposure[exposure > 0].to_numpy()),
        "category_coverage": recs["category"].nunique() / items["category"].nunique(),
        "popularity_bias": float(recs["pop"].mean() / popularity.mean()),
        "arp": float(lists["pop"].mean()),
        "aplt": float(lists["tail"].mean()),
        "novelty": float(lists["info"].mean()),
        "intra_list_diversity": float(diverse.mean()),
        "serendipity_baseline": float((surprise / k).mean()),
    }


def ours_fraud(path: str) -> dict[str, float]:
    from evalcore.fraud import FraudOptions, evaluate_scores, read_scores, roc_curve_from

    evaluation = evaluate_scores(
        read_scores(path), FraudOptions(target_fpr=TARGET_FPR, fp_cost=100, fn_cost=10000)
    )
    fpr, _, _ = roc_curve_from(evaluation.curve)  # the curve a dashboard draws
    values = evaluation.metrics(FRAUD_METRICS)
    return {**values, "roc_points": float(fpr.size)}


FRAUD_METRICS = (
    "roc_auc",
    "pr_auc",
    "detection_rate",
    "detection_rate_interpolated",
    "threshold",
    "total_cost",
)


def sklearn_fraud(path: str) -> dict[str, float]:
    import numpy as np
    import pandas as pd
    from sklearn.metrics import average_precision_score, roc_auc_score, roc_curve

    frame = pd.read_csv(path)
    labels = frame["label"].to_numpy()
    scores = frame["score"].to_numpy()
    fpr, tpr, thresholds = roc_curve(labels, scores, drop_intermediate=False)
    best = int(np.searchsorted(fpr, TARGET_FPR, side="right")) - 1
    flagged = scores >= thresholds[best]
    total = 100 * np.count_nonzero(flagged & (labels == 0)) + 10000 * np.count_nonzero(
        ~flagged & (labels == 1)
    )
    plotted, _, _ = roc_curve(labels, scores)
    return {
        "roc_auc": float(roc_auc_score(labels, scores)),
        "pr_auc": float(average_precision_score(labels, scores)),
        "detection_rate": float(tpr[best]),
        "detection_rate_interpolated": float(np.interp(TARGET_FPR, fpr, tpr)),
        "threshold": float(thresholds[best]),
        "total_cost": float(total),
        "roc_points": float(plotted.size),
    }


def _peak_rss_mb() -> float:
    """This process's own high-water mark (ru_maxrss would start from the parent's at fork)."""
    try:
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(task: str, arguments: dict[str, Any]) -> dict[str, Any]:
    started = time.perf_counter()
    if task == "ours_recsys":
        values = ours_recsys(arguments["paths"], arguments["k"])
    elif task == "pandas_recsys":
        values = pandas_recsys(arguments["paths"], arguments["k"])
    elif task == "ours_fraud":
        values = ours_fraud(arguments["path"])
    else:
        values = sklearn_fraud(arguments["path"])
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "compute_s": time.perf_counter() - started,
        "cpu_s": usage.ru_utime + usage.ru_stime,  # every thread's, interpreter start included
        "peak_rss_mb": _peak_rss_mb(),
        "values": values,
    }


def _run(task: str, arguments: dict[str, Any]) -> dict[str, Any]:
    root = Path(__file__).resolve().parent.parent
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))
    )
    command = [sys.executable, "-m", "benchmarks.recsys_fraud", "--child", task, json.dumps(arguments)]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, cwd=root, env=env)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{task} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["process_s"] = wall
    return result


def _max_difference(ours: dict[str, float], theirs: dict[str, float]) -> tuple[float, str]:
    worst, where = 0.0, ""
    for name, value in theirs.items():
        difference = abs(ours[name] - value)
        if difference > worst or difference != difference:
            worst, where = difference, name
    return worst, where


# --- the report ------------------------------------------------------------------------------------


def benchmark(args: argparse.Namespace) -> dict[str, Any]:
    report: dict[str, Any] = {"recsys": {}, "fraud": {}}
    with tempfile.TemporaryDirectory(prefix="bench-recsys-fraud-") as tmp:
        directory = Path(tmp)
        for fraction in (0.25, 0.5, 1.0):
            users = int(args.users * fraction)
            sub = directory / f"recsys-{fraction}"
            sub.mkdir()
            started = time.perf_counter()
            paths = {n: str(p) for n, p in generate_recsys(sub, users, args.k, args.items, args.seed).items()}
            generated = time.perf_counter() - started
            runs = {"evalplatform": _run("ours_recsys", {"paths": paths, "k": args.k})}
            if fraction == 1.0:
                runs["pandas"] = _run("pandas_recsys", {"paths": paths, "k": args.k})
            report["recsys"][str(fraction)] = {
                "users": users,
                "rows": users * args.k,
                "generate_s": generated,
                **runs,
            }
            for path in paths.values():
                os.unlink(path)
        for fraction in (0.25, 0.5, 1.0):
            n = int(args.scores * fraction)
            sub = directory / f"fraud-{fraction}"
            sub.mkdir()
            path = str(generate_scores(sub, n, args.seed))
            runs = {"evalplatform": _run("ours_fraud", {"path": path})}
            if fraction == 1.0:
                runs["scikit-learn"] = _run("sklearn_fraud", {"path": path})
            report["fraud"][str(fraction)] = {"rows": n, **runs}
            os.unlink(path)
    for family, other in (("recsys", "pandas"), ("fraud", "scikit-learn")):
        full = report[family]["1.0"]
        ours, theirs = full["evalplatform"], full[other]
        worst, where = _max_difference(ours["values"], theirs["values"])
        full["check"] = {"max_abs_difference": worst, "at": where, "equal_to_1e-9": worst <= 1e-9}
        full["ratio"] = {
            "process_time": theirs["process_s"] / ours["process_s"],
            "compute_time": theirs["compute_s"] / ours["compute_s"],
            "cpu_time": theirs["cpu_s"] / ours["cpu_s"],
            "peak_rss": theirs["peak_rss_mb"] / ours["peak_rss_mb"],
        }
    return report


def _print(report: dict[str, Any]) -> None:
    for family, other in (("recsys", "pandas"), ("fraud", "scikit-learn")):
        full = report[family]["1.0"]
        print(f"\n{family}: {full['rows']:,} rows")
        print(f"  {'tool':<14}{'process s':>11}{'imports+work s':>16}{'CPU s':>9}{'peak RSS MB':>13}")
        for tool in ("evalplatform", other):
            run = full[tool]
            print(
                f"  {tool:<14}{run['process_s']:>11.2f}{run['compute_s']:>16.2f}{run['cpu_s']:>9.2f}"
                f"{run['peak_rss_mb']:>13.0f}"
            )
        ratio = full["ratio"]
        print(
            f"  {other} / evalplatform: {ratio['process_time']:.1f}x the time (whole process), "
            f"{ratio['compute_time']:.1f}x (imports and work, without interpreter start), "
            f"{ratio['cpu_time']:.1f}x the CPU time, {ratio['peak_rss']:.1f}x the memory"
        )
        check = full["check"]
        print(f"  values: max |diff| = {check['max_abs_difference']:.2e} ({check['at'] or '-'})")
        # CPU time: on a shared machine the wall time of a small run says more about the neighbours.
        scaling = [(run["rows"], run["evalplatform"]["cpu_s"]) for run in report[family].values()]
        print(
            "  evalplatform CPU time by size: "
            + ", ".join(f"{rows:,} rows {s:.2f} s ({s / rows * 1e6:.3f} s/M rows)" for rows, s in scaling)
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--k", type=int, default=K_DEFAULT)
    parser.add_argument("--items", type=int, default=1_000_000)
    parser.add_argument("--scores", type=int, default=10_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--child", nargs=2, metavar=("TASK", "ARGUMENTS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child[0], json.loads(args.child[1]))))
        return 0
    report = benchmark(args)
    if args.json:
        print(json.dumps(report))
    else:
        _print(report)
    failed = [f for f in ("recsys", "fraud") if not report[f]["1.0"]["check"]["equal_to_1e-9"]]
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
