"""`derive_click_judgments`: graded judgments from a search log, by a click model (COEC, PBM or DBN)."""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Any

from monitoring.common import cli

LOG_FORMATS = ("csv", "jsonl", "ubi")
MODELS = ("coec", "pbm", "dbn")


class Program(cli.FileCommand):
    help = (
        "Derive graded judgments (0-4) from a search log with a click model: coec (clicks over expected "
        "clicks), pbm (position-based model) or dbn (dynamic Bayesian network, Chapelle and Zhang 2009), "
        "the last two fitted by EM. The log has one row per shown result: a CSV with the header "
        "session,query,doc,position,clicked[,dwell], JSON Lines with those keys, or User Behavior Insights "
        "events (impression and click actions). Pairs shown fewer than --min-impressions times get no "
        "judgment. Writes the judged pairs as TREC qrels to --out and prints a summary."
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--log", required=True, metavar="FILE", help="the search log")
        parser.add_argument(
            "--format",
            dest="log_format",
            choices=LOG_FORMATS,
            default="csv",
            help="the log's format (default csv)",
        )
        parser.add_argument("--model", required=True, choices=MODELS, help="the click model")
        parser.add_argument(
            "--min-impressions", type=int, default=10, metavar="N",
            help="judge only pairs shown at least N times (default 10)",
        )  # fmt: skip
        parser.add_argument(
            "--thresholds", metavar="T1,T2,T3,T4",
            help="the relevance at which grades 1 to 4 start (default: coec 0.5,1,1.5,2.5; pbm and dbn 0.1,0.3,0.5,0.7)",
        )  # fmt: skip
        parser.add_argument(
            "--min-dwell",
            type=float,
            metavar="SECONDS",
            help="count a click with a shorter dwell time as no click",
        )
        parser.add_argument(
            "--max-iterations",
            type=int,
            metavar="N",
            help="EM iterations at most (default: pbm 500, dbn 100)",
        )
        parser.add_argument("--out", metavar="QRELS", help="write the judged pairs as TREC qrels here")
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")

    def handle(self, **options: Any) -> None:
        from evalcore.clicks import ClickModelParams, fit, read_click_log
        from evalcore.errors import EvalCoreError

        path = options["log"]
        cli.require_file(path)
        try:
            params = ClickModelParams(
                options["model"],
                min_impressions=options["min_impressions"],
                thresholds=_thresholds(options["thresholds"]),
                max_iterations=options["max_iterations"],
                min_dwell=options["min_dwell"],
            )
        except ValueError as exc:
            raise cli.CommandError(str(exc)) from None
        try:
            with cli.progress([path], stages=2) as bar:
                bar.set_description("reading")
                log = read_click_log(path, options["log_format"])
                bar.update()
                bar.set_description(f"fitting {params.model}")
                judgments = fit(log, params)
                bar.update()
        except (EvalCoreError, OSError) as exc:
            raise cli.CommandError(str(exc)) from exc
        if options["out"]:
            _write_atomically(Path(options["out"]), judgments.qrels_lines())
        summary = as_json(judgments, out=options["out"])
        if options["json"]:
            self.stdout.write(cli.dump_json(summary))
        else:
            self.stdout.write(_as_text(summary))


def __getattr__(name: str) -> Any:
    """`Command`, Django's management command running `Program`, made on first use: the shell runs
    `Program` without importing Django (`evalcore.filecommands.run_standalone`)."""
    return cli.django_command(Program, __name__, name)


def _thresholds(text: str | None) -> tuple[float, ...] | None:
    if text is None:
        return None
    try:
        return tuple(float(part) for part in text.split(","))
    except ValueError:
        raise cli.CommandError(f"--thresholds {text!r}: give four numbers separated by commas") from None


def _write_atomically(out: Path, lines: list[str]) -> None:
    """The qrels appear whole or not at all: written beside the target, then renamed over it."""
    try:
        handle, temporary = tempfile.mkstemp(
            dir=out.parent if str(out.parent) else ".", prefix=f".{out.name}."
        )
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write("".join(f"{line}\n" for line in lines))
        os.replace(temporary, out)
    except OSError as exc:
        raise cli.CommandError(f"{out}: {exc.strerror or exc}") from exc


def as_json(judgments: Any, *, out: str | None) -> dict[str, Any]:
    """The summary: `{"model", "sessions", "impressions", "clicks", "pairs", "judged_pairs", "grades",
    "positions", ...}`, every number finite."""
    from evalcore.jsonable import json_number

    params = judgments.params
    return {
        "model": params.model,
        "sessions": judgments.sessions,
        "impressions": judgments.rows,
        "clicks": int(judgments.clicks.sum()),
        "pairs": int(judgments.pair_query.size),
        "judged_pairs": int(judgments.judged.sum()),
        "grades": {str(grade): count for grade, count in judgments.grade_counts().items()},
        "positions": {name: [json_number(v) for v in values] for name, values in judgments.positions.items()},
        "min_impressions": params.min_impressions,
        "thresholds": list(params.grade_thresholds),
        "iterations": judgments.iterations,
        "converged": judgments.converged,
        "out": out,
    }


def _as_text(summary: dict[str, Any]) -> str:
    grades = ", ".join(f"{grade}: {count}" for grade, count in summary["grades"].items())
    lines = [
        f"model {summary['model']}: {summary['sessions']} sessions, {summary['impressions']} impressions, "
        f"{summary['clicks']} clicks",
        f"pairs {summary['pairs']}, judged {summary['judged_pairs']} (shown at least "
        f"{summary['min_impressions']} times); grades {grades}",
    ]
    if summary["model"] != "coec":
        state = "converged" if summary["converged"] else "stopped before converging"
        lines.append(f"EM: {summary['iterations']} iterations, {state}")
    for name, values in summary["positions"].items():
        lines.append(f"{name}: " + " ".join("-" if v is None else f"{v:.4f}" for v in values))
    if summary["out"]:
        lines.append(f"qrels written to {summary['out']}")
    return "\n".join(lines)
