"""`eval_retrieval`: trec_eval-compatible evaluation of a run against qrels."""

from __future__ import annotations

import argparse
from typing import Any

from evalcore.errors import EvalCoreError
from evalcore.jsonable import json_number
from evalcore.retrieval import RetrievalResult, evaluate, format_trec
from monitoring.common import cli


class Program(cli.FileCommand):
    help = (
        "Evaluate a TREC run against qrels with trec_eval 9.0.8's semantics. Measures take trec_eval "
        "names (map, P_10, P.5,10, ndcg_cut_10, recip_rank) or ir-measures names (AP, P@10, nDCG@10, RR), "
        "and trec_eval's sets official and all_trec. Without -m, trec_eval's default output (official)."
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--qrels", required=True, metavar="FILE", help="qrels: qid iter docno rel")
        parser.add_argument("--run", required=True, metavar="FILE", help="run: qid Q0 docno rank score tag")
        parser.add_argument(
            "-m",
            "--measure",
            action="append",
            dest="measures",
            metavar="MEASURE",
            help="a measure to compute; repeat for several (default: trec_eval's official set)",
        )
        cli.add_input_options(parser)
        parser.add_argument(
            "-q", "--per-query", action="store_true", help="also print each query's values (trec_eval -q)"
        )
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")

    def handle(self, **options: Any) -> None:
        reading = {"on_duplicate": options["on_duplicate"], "strict": options["strict"]}
        with cli.progress([options["qrels"], options["run"]], stages=3) as bar:
            bar.set_description("reading qrels")
            qrels = cli.read_qrels(options["qrels"], fmt=options["qrels_format"], **reading)
            bar.update()
            bar.set_description("reading run")
            run = cli.read_run(options["run"], fmt=options["run_format"], **reading)
            bar.update()
            bar.set_description("evaluating")
            try:
                result = evaluate(
                    qrels,
                    run,
                    options["measures"] or ["official"],
                    rel_level=options["level"],
                    complete=options["complete"],
                )
            except EvalCoreError as exc:
                raise cli.CommandError(str(exc)) from exc
            bar.update()
        if options["json"]:
            self.stdout.write(cli.dump_json(as_json(result, per_query=options["per_query"])))
        else:
            self.stdout.write(format_trec(result, per_query=options["per_query"]), ending="")


def __getattr__(name: str) -> Any:
    """`Command`, Django's management command running `Program`, made on first use: the shell runs
    `Program` without importing Django (`monitoring.common.cli.run_standalone`)."""
    return cli.django_command(Program, __name__, name)


def as_json(result: RetrievalResult, *, per_query: bool) -> dict[str, object]:
    """`{"aggregate": {measure: value}, "per_query": {qid: {measure: value}}}`, keyed as asked.

    runid's aggregate is the run's name; relstring, which trec_eval prints per query only, appears
    only under per_query.
    """
    integer = {spec.key for spec in result.specs if spec.measure.integer}
    aggregate: dict[str, object] = {
        spec.key: result.run_id for spec in result.text_specs if spec.measure.summary
    }
    aggregate.update(
        {key: json_number(value, integer=key in integer) for key, value in result.aggregate.items()}
    )
    data: dict[str, object] = {"aggregate": aggregate}
    if per_query:
        data["per_query"] = {
            qid: {
                key: value if isinstance(value, str) else json_number(value, integer=key in integer)
                for key, value in values.items()
            }
            for qid, values in result.per_query.items()
        }
    return data
