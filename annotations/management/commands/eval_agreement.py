"""`eval_agreement`: inter-annotator agreement of a CSV of labels (``item,annotator,label``), as text
or one JSON object."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from evalcore import filecommands
from evalcore.agreement import LEVELS, AgreementReport, agreement_report, read_annotations_csv
from evalcore.errors import EvalCoreError

KAPPA_TITLES = {"unweighted": "unweighted", "linear": "linear weights", "quadratic": "quadratic weights"}


class Program(filecommands.FileCommand):
    help = (
        "Agreement between annotators: exact and pairwise agreement, Fleiss' kappa, Krippendorff's alpha "
        "and the Cohen's kappa matrix, from a CSV with the header item,annotator,label (numeric labels; "
        "an annotator may leave items out)."
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--annotations", required=True, metavar="FILE", help="CSV: item,annotator,label")
        parser.add_argument(
            "--level",
            choices=LEVELS,
            default="ordinal",
            help="level of measurement for Krippendorff's alpha (default: ordinal)",
        )
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of a summary")

    def handle(self, **options: Any) -> None:
        path = options["annotations"]
        try:
            if Path(path).is_dir():
                raise filecommands.CommandError(f"{path}: is a directory, not a file")
            labels = read_annotations_csv(path)
        except OSError as error:
            raise filecommands.CommandError(f"{path}: {error.strerror or error}") from error
        except EvalCoreError as error:
            raise filecommands.CommandError(str(error)) from error
        report = agreement_report(labels, level=options["level"])
        if options["json"]:
            self.stdout.write(json.dumps(_as_json(report), allow_nan=False))
        else:
            self.stdout.write(_as_text(report, path))


def __getattr__(name: str) -> Any:
    """`Command`, Django's management command running `Program`, made on first use: the shell runs
    `Program` without importing Django (`evalcore.filecommands.run_standalone`)."""
    if name != "Command":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from evalplatform.filecommands import django_command  # loads Django and Celery: only here

    return django_command(Program)


def _as_json(report: AgreementReport) -> dict[str, Any]:
    return {
        "n_items": report.n_items,
        "n_annotators": report.n_annotators,
        "n_labels": report.n_labels,
        "exact_agreement": _number(report.exact_agreement),
        "pairwise_agreement": _number(report.pairwise_agreement),
        "fleiss_kappa": _number(report.fleiss_kappa),
        "krippendorff_alpha": _number(report.krippendorff_alpha),
        "cohen_kappa": {
            "annotators": [str(annotator) for annotator in report.annotators],
            **{
                name: [[_number(x) for x in row] for row in matrix]
                for name, matrix in report.cohen_kappa.items()
            },
        },
    }


def _number(value: float) -> float | None:
    """JSON has no NaN: an undefined figure is null."""
    return None if math.isnan(value) else float(value)


def _as_text(report: AgreementReport, path: str) -> str:
    def figure(value: float) -> str:
        return "undefined" if math.isnan(value) else f"{value:.4f}"

    lines = [
        f"Agreement in {path}",
        f"  {report.n_items} items, {report.n_annotators} annotators, {report.n_labels} labels",
        f"  exact agreement       {figure(report.exact_agreement)}  (items whose labels are all equal)",
        f"  pairwise agreement    {figure(report.pairwise_agreement)}  (equal label pairs within an item)",
        f"  Fleiss' kappa         {figure(report.fleiss_kappa)}",
        f"  Krippendorff's alpha  {figure(report.krippendorff_alpha)}  ({report.level})",
    ]
    names = [str(annotator) for annotator in report.annotators]
    width = max([7, *(len(name) for name in names)])
    for key, matrix in report.cohen_kappa.items():
        lines += [
            "",
            f"Cohen's kappa ({KAPPA_TITLES[key]}); '-' where a pair shares no item or kappa is undefined",
        ]
        lines.append(" " * width + "".join(f" {name:>{width}}" for name in names))
        for name, row in zip(names, matrix, strict=True):
            cells = "".join(f" {'-' if math.isnan(x) else f'{x:.3f}':>{width}}" for x in row)
            lines.append(f"{name:<{width}}{cells}")
    return "\n".join(lines)
