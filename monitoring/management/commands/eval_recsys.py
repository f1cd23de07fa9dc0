"""`eval_recsys`: accuracy and beyond-accuracy metrics of recommendation lists, from CSV files."""

from __future__ import annotations

import argparse
from typing import Any

from evalcore.options import OptionsError, command_argument, options_of
from evalcore.recsys import RecsysOptions
from monitoring.common import cli

#: How the command spells the options (in its messages).
FLAGS = {"k": "-k", "complete": "--complete", "head_share": "--head-share"}


class Program(cli.FileCommand):
    help = (
        "Evaluate recommendation lists: hit rate, precision, recall and nDCG at k against held-out "
        "interactions; catalog and category coverage, the Gini coefficient of exposure (over the whole "
        "catalog, and over recommended items as seed 004), popularity bias (ARP ratio), ARP, APLT, novelty, "
        "intra-list diversity and serendipity. Popularity counts the history's rows when --history is "
        "given, else the interactions' rows. Without --items the catalog is every item seen in any file."
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--recs", required=True, metavar="FILE", help="CSV user,item,rank (rank 1 is the top)"
        )
        parser.add_argument(
            "--interactions", required=True, metavar="FILE", help="CSV user,item: held-out relevant items"
        )
        parser.add_argument(
            "--items", metavar="FILE", help="CSV item,category: the catalog (one row per item)"
        )
        parser.add_argument(
            "--history",
            metavar="FILE",
            help="CSV user,item: earlier interactions, for popularity, unexpectedness and serendipity_history",
        )
        # The options' types, defaults and help come from `RecsysOptions`; it checks their bounds.
        command_argument(parser, RecsysOptions, "k", "-k", metavar="K")
        command_argument(parser, RecsysOptions, "complete", "-c", "--complete")
        command_argument(parser, RecsysOptions, "head_share", "--head-share", metavar="S")
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")

    def handle(self, **options: Any) -> None:
        from dataclasses import replace

        from evalcore.errors import EvalCoreError
        from evalcore.jsonable import json_number
        from evalcore.recsys import evaluate_recommendations, read_recsys_files

        paths = [options[name] for name in ("recs", "interactions", "items", "history") if options[name]]
        for path in paths:
            cli.require_file(path)
        try:
            chosen = options_of(RecsysOptions, options, flags=FLAGS)
        except OptionsError as exc:
            raise cli.CommandError(str(exc)) from None
        try:
            with cli.progress(paths, stages=2) as bar:
                bar.set_description("reading")
                files = read_recsys_files(
                    options["recs"],
                    options["interactions"],
                    items=options["items"],
                    history=options["history"],
                    k=chosen.k,
                    complete=chosen.complete,
                )
                bar.update()
                bar.set_description("evaluating")
                data = replace(files.data, head_share=chosen.head_share)
                # The cutoff reaches the metrics: a K beyond the longest list still divides by K.
                metrics = evaluate_recommendations(data, k=chosen.k)
                bar.update()
        except (EvalCoreError, OSError) as exc:
            raise cli.CommandError(str(exc)) from exc
        summary = files.summary(chosen.k)
        integer = {"unique_items_recommended"}
        if options["json"]:
            values = {name: json_number(value, integer=name in integer) for name, value in metrics.items()}
            self.stdout.write(cli.dump_json({**summary, **values}))
            return
        width = max(map(len, [*summary, *metrics]))
        lines = [f"{name:<{width}}  {value}" for name, value in summary.items()]
        lines += [
            f"{name:<{width}}  {_text(value, integer=name in integer)}" for name, value in metrics.items()
        ]
        self.stdout.write("\n".join(lines))


def __getattr__(name: str) -> Any:
    """`Command`, Django's management command running `Program`, made on first use: the shell runs
    `Program` without importing Django (`evalcore.filecommands.run_standalone`)."""
    return cli.django_command(Program, __name__, name)


def _text(value: float, *, integer: bool) -> str:
    if value != value:
        return "-"
    return str(int(value)) if integer else f"{value:.4f}"
