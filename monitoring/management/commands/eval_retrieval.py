"""`eval_retrieval`: trec_eval-compatible evaluation of a run against qrels."""

from __future__ import annotations

import argparse
from typing import Any

from evalcore.errors import EvalCoreError
from evalcore.jsonable import json_number
from evalcore.retrieval import RetrievalResult, evaluate, format_trec
from monitoring.common import cli

REL_FORMATS = ("qrels", "prefs", "qrels_prefs", "qrels_jg")


class Program(cli.FileCommand):
    help = (
        "Evaluate a TREC run against qrels with trec_eval 9.0.8's semantics. Measures take trec_eval "
        "names (map, P_10, P.5,10, ndcg_cut_10, recip_rank) or ir-measures names (AP, P@10, nDCG@10, RR), "
        "and trec_eval's sets official, all_trec, all_prefs, prefs. Without -m, trec_eval's default output "
        "(official). trec_eval's own command line works unchanged: eval_retrieval -q -m all_trec -M100 "
        "qrels.test results.test."
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "files",
            nargs="*",
            metavar="FILE",
            help="trec_eval's form: the qrels (rel_info_file), then the run",
        )
        parser.add_argument("--qrels", metavar="FILE", help="qrels: qid iter docno rel")
        parser.add_argument("--run", metavar="FILE", help="run: qid Q0 docno rank score tag")
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
        # trec_eval's long names of -q, -c and -l, and its -n, -T and -D.
        parser.add_argument(
            "--query_eval_wanted", dest="per_query", action="store_true", help=argparse.SUPPRESS
        )
        parser.add_argument(
            "--complete_rel_info_wanted", dest="complete", action="store_true", help=argparse.SUPPRESS
        )
        parser.add_argument("--level_for_rel", dest="level", type=int, help=argparse.SUPPRESS)
        parser.add_argument(
            "-n",
            "--nosummary",
            action="store_true",
            help="leave out the summary (`all`) lines (trec_eval -n)",
        )
        parser.add_argument(
            "-T", "--Results_format", dest="results_format", choices=("trec_results",), default="trec_results",
            help="the run's format: trec_results, the only one trec_eval 9.0.8 has (trec_eval -T)",
        )  # fmt: skip
        parser.add_argument(
            "-D", "--Debug_level", dest="debug_level", metavar="LEVEL",
            help="trec_eval's debug level: read and ignored (no debug output here)",
        )  # fmt: skip
        parser.add_argument(
            "-M", "--Max_retrieved_per_topic", dest="max_docs", type=int, metavar="NUM",
            help="evaluate only each query's first NUM documents (trec_eval -M)",
        )  # fmt: skip
        parser.add_argument(
            "-J", "--Judged_docs_only", dest="judged_only", action="store_true",
            help="drop the documents the qrels do not judge before ranking (trec_eval -J)",
        )  # fmt: skip
        parser.add_argument(
            "-N", "--Number_docs_in_coll", dest="num_docs", type=int, metavar="NUM",
            help="number of documents in the collection (trec_eval -N), for utility's fourth coefficient",
        )  # fmt: skip
        parser.add_argument(
            "-R", "--Rel_info_format", dest="rel_format", choices=REL_FORMATS, default="qrels",
            help="the relevance file's format: qrels, prefs (qid jg jsg docno rel_level), qrels_prefs "
            "(a qrels file read as preferences) or qrels_jg (qid jg docno rel: qrels per user) (trec_eval -R)",
        )  # fmt: skip
        parser.add_argument(
            "-Z", "--Zscore", dest="zscores", metavar="FILE",
            help="print z-scores against FILE's lines `qid measure mean stddev` (trec_eval -Z)",
        )  # fmt: skip

    def handle(self, **options: Any) -> None:
        qrels_path, run_path = _paths(options)
        reading = {"on_duplicate": options["on_duplicate"], "strict": options["strict"]}
        with cli.progress([qrels_path, run_path], stages=3) as bar:
            bar.set_description("reading qrels")
            judgments = _read_judgments(qrels_path, options, reading)
            bar.update()
            bar.set_description("reading run")
            run = cli.read_run(run_path, fmt=options["run_format"], **reading)
            bar.update()
            bar.set_description("evaluating")
            try:
                result = _evaluate(judgments, run, options)
            except EvalCoreError as exc:
                raise cli.CommandError(str(exc)) from exc
            bar.update()
        if options["json"]:
            self.stdout.write(cli.dump_json(as_json(result, per_query=options["per_query"])))
        else:
            text = format_trec(result, per_query=options["per_query"], summary=not options.get("nosummary"))
            self.stdout.write(text, ending="")


def _paths(options: dict[str, Any]) -> tuple[str, str]:
    """The qrels and the run: trec_eval's two file arguments, or --qrels and --run."""
    files = options.get("files") or []
    if files and (options["qrels"] or options["run"]):
        raise cli.CommandError(
            "give the files either as trec_eval does (QRELS RUN) or with --qrels and --run"
        )
    if files:
        if len(files) != 2:
            raise cli.CommandError(f"expected two files, the qrels then the run, not {len(files)}")
        return files[0], files[1]
    if not options["qrels"] or not options["run"]:
        raise cli.CommandError("give the qrels and the run: QRELS RUN, or --qrels FILE --run FILE")
    return options["qrels"], options["run"]


def _read_judgments(path: str, options: dict[str, Any], reading: dict[str, Any]) -> Any:
    if options["rel_format"] == "qrels":
        return cli.read_qrels(path, fmt=options["qrels_format"], **reading)
    from evalcore import trec_prefs

    readers = {"prefs": trec_prefs.read_prefs, "qrels_prefs": trec_prefs.read_qrels_prefs,
               "qrels_jg": trec_prefs.read_qrels_jg}  # fmt: skip
    reader = readers[options["rel_format"]]
    try:
        return reader(cli.require_file(path))
    except (EvalCoreError, UnicodeDecodeError) as exc:
        raise cli.CommandError(str(exc)) from exc


def _evaluate(judgments: Any, run: Any, options: dict[str, Any]) -> RetrievalResult:
    if options["rel_format"] == "qrels":
        result = evaluate(
            judgments,
            run,
            options["measures"] or ["official"],
            rel_level=options["level"],
            complete=options["complete"],
            max_docs=options.get("max_docs"),
            judged_only=options.get("judged_only", False),
            num_docs=options.get("num_docs") or 0,
        )
    elif options["rel_format"] == "qrels_jg":
        if options["complete"]:
            raise cli.CommandError("-c applies to -R qrels only")
        from evalcore.retrieval.evaluation import evaluate_jg

        result = evaluate_jg(
            judgments,
            run,
            options["measures"] or ["qrels_jg"],
            rel_level=options["level"],
            max_docs=options.get("max_docs"),
            judged_only=options.get("judged_only", False),
        )
    else:
        if options["complete"] or options.get("judged_only"):
            raise cli.CommandError("-c and -J apply to qrels only, not to -R prefs or qrels_prefs")
        from evalcore.retrieval.evaluation import evaluate_prefs

        result = evaluate_prefs(
            judgments, run, options["measures"] or ["prefs"], max_docs=options.get("max_docs")
        )
    if options.get("zscores"):
        from evalcore import trec_prefs
        from evalcore.retrieval.evaluation import with_zscores

        try:
            table = trec_prefs.read_zscores(cli.require_file(options["zscores"]))
        except (EvalCoreError, UnicodeDecodeError) as exc:
            raise cli.CommandError(str(exc)) from exc
        result = with_zscores(result, table)
    return result


def __getattr__(name: str) -> Any:
    """`Command`, Django's management command running `Program`, made on first use: the shell runs
    `Program` without importing Django (`evalcore.filecommands.run_standalone`)."""
    return cli.django_command(Program, __name__, name)


def as_json(result: RetrievalResult, *, per_query: bool) -> dict[str, object]:
    """`{"aggregate": {measure: value}, "per_query": {qid: {measure: value}}}`, keyed as asked.

    runid's aggregate is the run's name; relstring, which trec_eval prints per query only, appears
    only under per_query.
    """
    # Counts are integers, except as z-scores (-Z).
    integer = set() if result.zscores else {spec.key for spec in result.specs if spec.measure.integer}
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
