"""`fuse_runs`: fuse TREC runs with ranx's methods (CombSUM, CombMNZ, RRF, ...) into one TREC run."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from evalcore.errors import EvalCoreError
from evalcore.fusion.params import METHOD_OPTION, METHODS, NORMS, FusionParams
from evalcore.retrieval import UnknownMeasureError
from monitoring.common import cli

_NUMERIC_PARAMS = tuple(METHOD_OPTION.values())


class Program(cli.FileCommand):
    help = (
        "Fuse runs into one TREC run with ranx's methods and names: " + ", ".join(METHODS) + " (also "
        "CombSUM, CombMNZ, ... spellings); each run is first normalised per query with --norm (" + ", ".join(NORMS) + ", or none; "
        "default min-max, as ranx). With --optimize, wsum/wmnz weights (or rrf's k) are chosen by grid search on "
        "--qrels, with k-fold cross-validation over queries reporting the held-out score."
    )  # fmt: skip

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--run", required=True, action="append", dest="runs", metavar="FILE",
                            help="a run; repeat for each")  # fmt: skip
        parser.add_argument("--method", required=True, metavar="M", help="the fusion method (ranx's name)")
        parser.add_argument(
            "--norm", default="min-max", metavar="N", help="the normalisation (default min-max)"
        )
        parser.add_argument(
            "--weights", metavar="W1,W2", help="wsum/wmnz: one weight per run (default 1 each)"
        )
        parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                            help="a method option: k (rrf, default 60), gamma (gmnz), sigma (logn_isr), phi (rbc)")  # fmt: skip
        parser.add_argument(
            "--optimize", action="store_true", help="choose the weights (or rrf's k) on --qrels"
        )
        parser.add_argument("--qrels", metavar="FILE", help="qrels for --optimize")
        parser.add_argument("-m", "--measure", default="map", metavar="MEASURE",
                            help="the measure --optimize maximises (default map)")  # fmt: skip
        parser.add_argument(
            "--folds", type=int, default=5, metavar="K", help="cross-validation folds (default 5)"
        )
        parser.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the folds (default 0)")
        parser.add_argument(
            "--step", type=float, default=0.1, metavar="S", help="weight grid step (default 0.1)"
        )
        parser.add_argument("--out", required=True, metavar="FILE", help="where to write the fused TREC run")
        parser.add_argument("--depth", type=int, default=1000, metavar="D",
                            help="documents written per query (default 1000, trec_eval's)")  # fmt: skip
        parser.add_argument("--tag", metavar="TAG", help="the run tag (default fused-<method>)")
        cli.add_input_options(parser)
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")

    def handle(self, **options: Any) -> None:
        params = parse_params(options)
        if options["depth"] < 1:
            raise cli.CommandError("--depth must be at least 1")
        if options["optimize"] and not options["qrels"]:
            raise cli.CommandError("--optimize needs --qrels")
        reading = {"on_duplicate": options["on_duplicate"], "strict": options["strict"]}
        runs = [cli.read_run(path, fmt=options["run_format"], **reading) for path in options["runs"]]
        if params.weights is not None and len(params.weights) != len(runs):
            raise cli.CommandError(f"--weights: {len(params.weights)} weights for {len(runs)} runs")
        from evalcore.fusion import fuse, optimize_fusion, write_trec_run

        optimization = None
        try:
            if options["optimize"]:
                qrels = cli.read_qrels(options["qrels"], fmt=options["qrels_format"], **reading)
                optimization = optimize_fusion(
                    runs, qrels, params, measure=options["measure"], folds=options["folds"],
                    seed=options["seed"], step=options["step"], rel_level=options["level"],
                )  # fmt: skip
                params = optimization.params
            tag = options["tag"] or f"fused-{params.method}"
            fused = fuse(runs, params, run_id=tag)
            lines = write_trec_run(fused, options["out"], tag=tag, depth=options["depth"])
        except (EvalCoreError, UnknownMeasureError, ValueError) as exc:
            raise cli.CommandError(str(exc)) from exc
        except OSError as exc:
            raise cli.CommandError(f"{options['out']}: {exc.strerror or exc}") from exc
        summary = as_json(params, options, fused.num_queries, lines, optimization)
        if options["json"]:
            self.stdout.write(cli.dump_json(summary))
            return
        norm = params.norm or "none"
        self.stdout.write(
            f"{params.method} of {len(runs)} runs (norm {norm}): {lines} lines, {fused.num_queries} queries "
            f"written to {options['out']}"
        )
        if optimization is not None:
            self.stdout.write(f"{'fold':>4}  {'queries':>7}  {'train':>8}  {'held-out':>8}  chosen")
            for fold in summary["optimization"]["folds"]:
                self.stdout.write(
                    f"{fold['fold']:>4}  {fold['test_queries']:>7}  {fold['train_score']:>8.4f}  "
                    f"{fold['test_score']:>8.4f}  {fold['chosen']}"
                )
            opt = summary["optimization"]
            self.stdout.write(f"mean held-out {opt['measure']}: {opt['mean_test_score']:.4f}")
            self.stdout.write(f"chosen on all queries: {opt['chosen']} ({opt['measure']} {opt['score']:.4f})")


def __getattr__(name: str) -> Any:
    """`Command`, Django's management command running `Program`, made on first use: the shell runs
    `Program` without importing Django (`evalcore.filecommands.run_standalone`)."""
    return cli.django_command(Program, __name__, name)


def parse_params(options: dict[str, Any]) -> FusionParams:
    values: dict[str, float] = {}
    for item in options["param"]:
        name, sep, text = item.partition("=")
        if not sep or name.strip() not in _NUMERIC_PARAMS:
            raise cli.CommandError(
                f"--param {item}: give NAME=VALUE with NAME one of {', '.join(_NUMERIC_PARAMS)}"
            )
        try:
            values[name.strip()] = float(text)
        except ValueError as exc:
            raise cli.CommandError(f"--param {item}: {text!r} is not a number") from exc
    weights = None
    if options["weights"]:
        try:
            weights = tuple(float(w) for w in options["weights"].split(","))
        except ValueError as exc:
            raise cli.CommandError(
                f"--weights {options['weights']}: give numbers separated by commas"
            ) from exc
    try:
        return FusionParams(options["method"], norm=options["norm"], weights=weights, **values)
    except ValueError as exc:
        raise cli.CommandError(str(exc)) from exc


def as_json(
    params: FusionParams, options: dict[str, Any], queries: int, lines: int, optimization: Any
) -> dict[str, Any]:
    """`{"method", "norm", "weights", "k", "runs", "queries", "lines", "out", "optimization"}`."""
    from evalcore.fusion import optimization_json

    return {
        "method": params.method,
        "norm": params.norm,
        "weights": list(params.weights) if params.weights is not None else None,
        "k": params.k if params.method == "rrf" else None,
        "runs": [str(Path(p)) for p in options["runs"]],
        "queries": queries,
        "lines": lines,
        "out": options["out"],
        "optimization": optimization_json(optimization) if optimization is not None else None,
    }
