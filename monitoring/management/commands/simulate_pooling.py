"""`simulate_pooling`: replay a pooling strategy with complete qrels as the oracle, before paying for judgments."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from evalcore.errors import EvalCoreError
from evalcore.jsonable import json_number
from evalcore.pooling import STRATEGIES, PoolParams, SimulationStep, simulate_pooling
from evalcore.retrieval import UnknownMeasureError, parse_measure
from monitoring.common import cli


class Program(cli.FileCommand):
    help = (
        "Replay a pooling strategy on a team's runs with complete qrels as the oracle (a document the "
        "qrels lack is judged non-relevant). At every --step judgments it prints the judgments made, the "
        "relevant documents found and Kendall's tau between the ranking of the runs by the measure on "
        "the judgments so far and on the full qrels. Strategies: " + ", ".join(STRATEGIES) + "."
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--qrels", required=True, metavar="FILE", help="complete qrels: qid iter docno rel"
        )
        parser.add_argument(
            "--run",
            required=True,
            action="append",
            dest="runs",
            metavar="FILE",
            help="a run; repeat for each",
        )
        parser.add_argument("--strategy", required=True, choices=STRATEGIES, help="the pooling strategy")
        parser.add_argument(
            "--budget", required=True, type=int, metavar="B", help="judgments in all, spread over the topics"
        )
        parser.add_argument(
            "--step", type=int, metavar="K", help="report every K judgments (default: a tenth of the budget)"
        )
        parser.add_argument(
            "--seed", type=int, default=0, metavar="N", help="seed of random, bandit-bla and bandit-bla-ns"
        )
        parser.add_argument(
            "--depth", type=int, default=100, metavar="D", help="how deep each run is pooled (default 100)"
        )
        parser.add_argument(
            "--rrf-k",
            type=int,
            default=PoolParams.rrf_k,
            metavar="K",
            help=f"take-rrf's reciprocal rank fusion constant (default {PoolParams.rrf_k})",
        )
        parser.add_argument(
            "--rbp-p",
            type=float,
            default=PoolParams.rbp_p,
            metavar="P",
            help=f"take-rbp's persistence, in (0, 1) (default {PoolParams.rbp_p})",
        )
        parser.add_argument(
            "-m",
            "--measure",
            default="map",
            metavar="MEASURE",
            help="the measure that ranks the runs (default map)",
        )
        cli.add_input_options(parser)
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")

    def handle(self, **options: Any) -> None:
        budget, step = options["budget"], options["step"]
        if budget < 0:
            raise cli.CommandError("--budget must be at least 0")
        step = step if step is not None else max(1, -(-budget // 10))
        if step < 1:
            raise cli.CommandError("--step must be at least 1")
        measure = options["measure"]
        try:
            params = PoolParams(
                options["strategy"], budget=budget, depth=options["depth"], seed=options["seed"],
                rrf_k=options["rrf_k"], rbp_p=options["rbp_p"],
            )  # fmt: skip
            specs = parse_measure(measure)
        except (UnknownMeasureError, ValueError) as exc:
            raise cli.CommandError(str(exc)) from exc
        if len(specs) != 1 or specs[0].measure.text:
            raise cli.CommandError(f"-m {measure}: give one numeric measure, such as map or ndcg_cut_10")
        reading = {"on_duplicate": options["on_duplicate"], "strict": options["strict"]}
        qrels = cli.read_qrels(options["qrels"], fmt=options["qrels_format"], **reading)
        runs = [cli.read_run(path, fmt=options["run_format"], **reading) for path in options["runs"]]
        names = [run.run_id or Path(path).name for run, path in zip(runs, options["runs"], strict=True)]
        if len(set(names)) < len(names):
            names = list(options["runs"])
        try:
            steps = simulate_pooling(
                runs, qrels, params, step=step, measure=measure, rel_level=options["level"],
                names=names, complete=options["complete"],
            )  # fmt: skip
        except (EvalCoreError, ValueError) as exc:
            raise cli.CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(cli.dump_json(as_json(params, measure, names, steps)))
            return
        self.stdout.write(
            f"strategy {params.strategy}, budget {budget}, {len(runs)} runs ranked by {measure}"
        )
        self.stdout.write(f"{'judged':>8}  {'relevant':>8}  {'kendall_tau':>11}")
        for s in steps:
            tau = "-" if s.kendall_tau is None else f"{s.kendall_tau:.4f}"
            self.stdout.write(f"{s.judged:>8}  {s.relevant_found:>8}  {tau:>11}")


def __getattr__(name: str) -> Any:
    """`Command`, Django's management command running `Program`, made on first use: the shell runs
    `Program` without importing Django (`evalcore.filecommands.run_standalone`)."""
    return cli.django_command(Program, __name__, name)


def as_json(
    params: PoolParams, measure: str, names: list[str], steps: list[SimulationStep]
) -> dict[str, object]:
    """`{"strategy", "budget", "steps": [{"judged", "relevant_found", "kendall_tau"}]}` and the settings."""
    return {
        "strategy": params.strategy,
        "budget": params.budget,
        "depth": params.depth,
        "seed": params.seed,
        "rrf_k": params.rrf_k,
        "rbp_p": params.rbp_p,
        "measure": measure,
        "runs": names,
        "steps": [
            {
                "judged": s.judged,
                "relevant_found": s.relevant_found,
                "kendall_tau": None if s.kendall_tau is None else json_number(s.kendall_tau),
            }
            for s in steps
        ],
    }
