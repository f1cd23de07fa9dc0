"""`run_overlap`: how different two runs' ranked lists are (Jaccard@k, RBO, tau on shared documents)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from evalcore.jsonable import json_number
from evalcore.overlap import MEASURES, OverlapParams, RunOverlap, run_overlap
from monitoring.common import cli


class Program(cli.FileCommand):
    help = (
        "Compare two runs' top-k lists per query: Jaccard@k, rank-biased overlap (RBO_min, its residual "
        "RBO_res and the extrapolated RBO_ext; Webber, Moffat and Zobel 2010) and Kendall's tau, tau_ap "
        "(the first run as reference) and symmetric tau_ap over the documents both lists hold. Runs are "
        "ranked as trec_eval ranks them (score descending, then docno descending); queries only one run "
        "answers are listed, not scored. Means are over the queries where a figure is defined."
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--run", required=True, action="append", dest="runs", metavar="FILE", help="a run; give two"
        )
        parser.add_argument("-k", type=int, default=10, metavar="K", help="depth of each list (default 10)")
        parser.add_argument(
            "--rbo-p", type=float, default=0.9, metavar="P", help="RBO's persistence, 0 < P < 1 (default 0.9)"
        )
        parser.add_argument("-q", action="store_true", help="print every query's figures, then the means")
        parser.add_argument("--run-format", choices=cli.FORMATS, help="run format (default: from the file)")
        parser.add_argument(
            "--on-duplicate",
            choices=("error", "first"),
            default="error",
            help="a docno listed twice for a query: stop with an error (default) or keep the first",
        )
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")

    def handle(self, **options: Any) -> None:
        paths = options["runs"]
        if len(paths) != 2:
            raise cli.CommandError(f"give exactly two runs with --run, not {len(paths)}")
        try:
            params = OverlapParams(k=options["k"], p=options["rbo_p"])
        except ValueError as exc:
            raise cli.CommandError(str(exc)) from exc
        a, b = (
            cli.read_run(path, fmt=options["run_format"], on_duplicate=options["on_duplicate"])
            for path in paths
        )
        names = [run.run_id or Path(path).name for run, path in ((a, paths[0]), (b, paths[1]))]
        if names[0] == names[1]:  # two runs tagged alike: tell them apart by file
            names = list(paths)
        result = run_overlap(a, b, params)
        if options["json"]:
            self.stdout.write(cli.dump_json(as_json(result, names, per_query=options["q"])))
            return
        for line in as_text(result, names, per_query=options["q"]):
            self.stdout.write(line)


def __getattr__(name: str) -> Any:
    """`Command`, Django's management command running `Program`, made on first use: the shell runs
    `Program` without importing Django (`evalcore.filecommands.run_standalone`)."""
    return cli.django_command(Program, __name__, name)


def _figure(value: float) -> str:
    return "-" if value != value else f"{value:.4f}"  # NaN: undefined


def as_text(result: RunOverlap, names: list[str], *, per_query: bool) -> list[str]:
    """trec_eval's layout: `measure <tab> qid <tab> value`, the means under qid `all`."""
    lines = [
        f"runs\tall\t{names[0]} vs {names[1]}",
        f"k\tall\t{result.params.k}",
        f"rbo_p\tall\t{result.params.p}",
    ]
    lines.append(f"num_q\tall\t{len(result.qids)}")
    for label, only in (("only_a", result.only_a), ("only_b", result.only_b)):
        if only:
            lines.append(f"{label}\tall\t{' '.join(only)}")
    if per_query:
        for i, qid in enumerate(result.qids.tolist()):
            lines.append(f"shared\t{qid}\t{int(result.shared[i])}")
            lines.extend(f"{m}\t{qid}\t{_figure(float(result.values[m][i]))}" for m in MEASURES)
    lines.extend(f"{m}\tall\t{_figure(result.mean(m))}" for m in MEASURES)
    return lines


def as_json(result: RunOverlap, names: list[str], *, per_query: bool) -> dict[str, object]:
    """`{"runs", "k", "p", "num_q", "only_a", "only_b", "mean": {m}, "defined": {m}, "per_query"?}`."""
    data: dict[str, object] = {
        "runs": names,
        "k": result.params.k,
        "p": result.params.p,
        "num_q": len(result.qids),
        "only_a": list(result.only_a),
        "only_b": list(result.only_b),
        "mean": {m: json_number(result.mean(m)) for m in MEASURES},
        "defined": {m: result.defined(m) for m in MEASURES},
    }
    if per_query:
        data["per_query"] = [
            {"qid": qid, "shared": int(result.shared[i])}
            | {m: json_number(result.values[m][i]) for m in MEASURES}
            for i, qid in enumerate(result.qids.tolist())
        ]
    return data
