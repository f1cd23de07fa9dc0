"""`ppi_evaluate`: a run's mean measure on a machine judge's labels, corrected by a human sample (PPI)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcore.errors import EvalCoreError
from evalcore.jsonable import json_number
from monitoring.common import cli
from monitoring.management.commands.calibrate_judge import read_machine

if TYPE_CHECKING:
    from evalcore.machine_judges import MeanEstimate, PPIComparison


class Program(cli.FileCommand):
    help = (
        "Estimate a run's mean measure over every query a machine judge labelled, with prediction-powered "
        "inference: the mean on the machine's labels, corrected by the mean difference between the humans' "
        "and the machine's labels on the queries in the human file, which must be a random sample of the "
        "machine's queries, each judged completely by people. Prints PPI, PPI++ (power-tuned), human-only "
        "and machine-only estimates with their confidence intervals."
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--run", required=True, metavar="FILE", help="run: qid Q0 docno rank score tag")
        parser.add_argument(
            "--machine",
            required=True,
            metavar="FILE",
            help="the machine's labels of every query: TREC qrels, or JSON Lines with qid, doc_id, label",
        )
        parser.add_argument(
            "--human",
            required=True,
            metavar="FILE",
            help="human qrels of a random sample of the machine's queries, each judged completely",
        )
        parser.add_argument(
            "-m", "--measure", required=True, metavar="MEASURE", help="a measure averaged over queries: map, ndcg_cut_10, P_10"
        )  # fmt: skip
        parser.add_argument(
            "--alpha",
            type=float,
            default=0.05,
            metavar="A",
            help="1 - the intervals' confidence level (default 0.05: 95%% intervals)",
        )
        parser.add_argument(
            "--estimand",
            choices=("population", "queries"),
            default="population",
            help="what the intervals are for: the mean over the population of queries the machine's are "
            "drawn from (default, as in the papers), or over the machine's queries themselves (narrower: "
            "only the choice of the human sample is random)",
        )
        parser.add_argument(
            "-l",
            "--level",
            type=int,
            default=1,
            metavar="LEVEL",
            help="relevance level: binary measures count grade >= LEVEL as relevant (trec_eval -l; default 1)",
        )
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")

    def handle(self, **options: Any) -> None:
        from evalcore.machine_judges import ppi_evaluate
        from evalcore.retrieval import UnknownMeasureError

        if not 0.0 < options["alpha"] < 1.0:
            raise cli.CommandError("--alpha must be strictly between 0 and 1")
        run = cli.read_run(options["run"], fmt=None, on_duplicate="error")
        machine = read_machine(options["machine"])
        human = cli.read_qrels(options["human"], fmt=None, on_duplicate="error")
        try:
            result = ppi_evaluate(
                run,
                machine.qrels,
                human,
                options["measure"],
                alpha=options["alpha"],
                rel_level=options["level"],
                estimand=options["estimand"],
            )
        except (UnknownMeasureError, EvalCoreError, ValueError) as exc:
            raise cli.CommandError(f"{exc}") from exc
        name = run.run_id or Path(options["run"]).name
        if options["json"]:
            self.stdout.write(cli.dump_json(as_json(result, options["measure"], name)))
        else:
            self.stdout.write(as_text(result, options["measure"], name), ending="")


def __getattr__(name: str) -> Any:
    """`Command`, Django's management command running `Program`, made on first use: the shell runs
    `Program` without importing Django (`evalcore.filecommands.run_standalone`)."""
    return cli.django_command(Program, __name__, name)


def _estimate(estimate: MeanEstimate) -> dict[str, float | None]:
    return {
        "estimate": json_number(estimate.estimate),
        "ci_low": json_number(estimate.ci_low),
        "ci_high": json_number(estimate.ci_high),
        "std_error": json_number(estimate.std_error),
    }


def as_json(result: PPIComparison, measure: str, run: str) -> dict[str, object]:
    """`{"measure", "run", "queries", "human_queries", "alpha", "estimand", "ppi", "ppi_plus_plus", "human_only",
    "machine_only"}`, each estimate `{"estimate", "ci_low", "ci_high", "std_error"}` (null where undefined)."""
    return {
        "measure": measure,
        "run": run,
        "queries": result.queries,
        "human_queries": result.human_queries,
        "alpha": result.alpha,
        "estimand": result.estimand,
        "ppi": _estimate(result.ppi),
        "ppi_plus_plus": {**_estimate(result.ppi_plus_plus), "lambda": json_number(result.tuning)},
        "human_only": _estimate(result.human_only),
        "machine_only": _estimate(result.machine_only),
    }


def as_text(result: PPIComparison, measure: str, run: str) -> str:
    level = f"{100 * (1 - result.alpha):g}%"
    rows = [
        ("PPI", result.ppi),
        (f"PPI++ (lambda {result.tuning:.2f})", result.ppi_plus_plus),
        ("human only", result.human_only),
        ("machine only", result.machine_only),
    ]
    lines = [
        f"{measure} of {run} over the {result.queries} queries the machine judged, "
        f"{result.human_queries} of them judged by people; {level} intervals"
        + ("" if result.estimand == "population" else " for the mean over these queries"),
        f"{'':<22}{'estimate':>10}{'ci_low':>10}{'ci_high':>10}",
    ]
    for label, estimate in rows:
        cells = (estimate.estimate, estimate.ci_low, estimate.ci_high)
        lines.append(
            f"{label:<22}" + "".join(f"{'-' if json_number(v) is None else f'{v:.4f}':>10}" for v in cells)
        )
    return "\n".join(lines) + "\n"
