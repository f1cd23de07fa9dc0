"""`eval_fraud`: detection rate at a target FPR, ROC/PR areas, budget, costs and time to detection."""

from __future__ import annotations

import argparse
from typing import Any

from evalcore.fraud import FraudOptions
from evalcore.options import OptionsError, command_argument, options_of
from monitoring.common import cli

#: The command's flag of each option (its messages name them so).
FLAGS = {"target_fpr": "--fpr", "threshold": "--threshold", "fp_cost": "--fp-cost", "fn_cost": "--fn-cost",
         "budget": "--budget"}  # fmt: skip


class Program(cli.FileCommand):
    help = (
        "Evaluate fraud or anomaly scores from a CSV with the header id,score,label[,amount][,entity,timestamp]: "
        "the detection rate at --fpr (conservative: the best TPR whose realised FPR is within the target, with "
        "its threshold; and interpolated along the ROC curve), ROC-AUC, PR-AUC (average precision), precision "
        "and recall at --budget, and the costs of the examples flagged at --threshold (score >= T), or at the "
        "detection point without it. A missed fraud costs --fn-cost times its amount when the file has one. "
        "With entity and timestamp columns, the time from each entity's first fraud to its first flag."
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--scores", required=True, metavar="FILE", help="CSV id,score,label[,amount][,entity,timestamp]"
        )
        # The options' types, defaults and help come from `FraudOptions`; it checks their bounds.
        for name, flag in FLAGS.items():
            metavar = {"target_fpr": "RATE", "threshold": "T", "budget": "K"}.get(name, "C")
            command_argument(parser, FraudOptions, name, flag, metavar=metavar)
        parser.add_argument("--curves", action="store_true", help="with --json, also the ROC and PR curves")
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")

    def handle(self, **options: Any) -> None:
        from evalcore.errors import EvalCoreError
        from evalcore.fraud import evaluate_scores, read_scores
        from evalcore.jsonable import json_number

        path = options["scores"]
        cli.require_file(path)
        try:
            fraud_options = options_of(FraudOptions, options, flags=FLAGS)
        except OptionsError as exc:
            raise cli.CommandError(str(exc)) from None
        try:
            with cli.progress([path], stages=2) as bar:
                bar.set_description("reading")
                examples = read_scores(path)
                bar.update()
                bar.set_description("evaluating")
                evaluation = evaluate_scores(examples, fraud_options)
                report = _report(evaluation, curves=options["curves"] and options["json"])
                bar.update()
        except (EvalCoreError, OSError) as exc:
            raise cli.CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(cli.dump_json(_json_ready(report, json_number)))
        else:
            self.stdout.write(_as_text(report))


def __getattr__(name: str) -> Any:
    """`Command`, Django's management command running `Program`, made on first use: the shell runs
    `Program` without importing Django (`evalcore.filecommands.run_standalone`)."""
    return cli.django_command(Program, __name__, name)


def _report(evaluation: Any, *, curves: bool) -> dict[str, Any]:
    from evalcore.fraud import METRICS, precision_recall_curve_from, roc_curve_from

    metrics = evaluation.metrics()
    curve = evaluation.curve
    cost = evaluation.cost
    report: dict[str, Any] = {
        "n": curve.n,
        "n_positive": curve.n_positive,
        "n_negative": curve.n_negative,
        "target_fpr": evaluation.options.target_fpr,
        **{
            name: metrics[name]
            for name in (
                "detection_rate",
                "threshold",
                "realised_fpr",
                "detection_rate_interpolated",
                "roc_auc",
                "pr_auc",
            )
        },
    }
    if evaluation.budget is not None:
        report.update(
            budget=evaluation.budget.budget,
            **{n: metrics[n] for n in ("precision_at_budget", "recall_at_budget")},
        )
    operating = evaluation.operating
    report["operating_threshold"] = operating.threshold
    report["operating_rule"] = operating.rule
    if operating.note:
        report["operating_note"] = operating.note
    report["confusion"] = {"tp": cost.tp, "fp": cost.fp, "tn": cost.tn, "fn": cost.fn}
    report.update({name: metrics[name] for name in ("total_cost", "cost_per_prediction")})
    report.update(flag_nothing_cost=cost.flag_nothing_cost, flag_everything_cost=cost.flag_everything_cost)
    report.update({name: metrics[name] for name in ("savings", "savings_vs_best_trivial")})
    times = evaluation.detection_times
    if times is not None:
        report.update(
            {name: metrics[name] for name in ("mean_ttd", "median_ttd", "p95_ttd", "entity_detection_rate")}
        )
        report.update(
            n_entities_anomalous=times.n_anomalous,
            n_entities_detected=times.n_detected,
            undetected_entities=[str(e) for e in times.undetected.tolist()],
        )
    if curves:
        fpr, tpr, thresholds = roc_curve_from(curve)
        precision, recall, pr_thresholds = precision_recall_curve_from(curve)
        report["roc_curve"] = {"fpr": fpr.tolist(), "tpr": tpr.tolist(), "thresholds": thresholds.tolist()}
        report["pr_curve"] = {
            "precision": precision.tolist(),
            "recall": recall.tolist(),
            "thresholds": pr_thresholds.tolist(),
        }
    assert set(METRICS) >= {k for k in report if k in METRICS}
    return report


def _json_ready(value: Any, number: Any) -> Any:
    """NaN and infinities become null (a threshold of +inf means: flag nothing)."""
    if isinstance(value, dict):
        return {k: _json_ready(v, number) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_ready(v, number) for v in value]
    if isinstance(value, bool) or not isinstance(value, float):
        return value
    return number(value)


def _as_text(report: dict[str, Any]) -> str:
    lines = []
    width = max(len(name) for name in report)
    for name, value in report.items():
        if name == "undetected_entities":
            shown = ", ".join(value[:10]) + (f", ... ({len(value)} in all)" if len(value) > 10 else "")
            value = shown or "-"
        elif name == "confusion":
            value = " ".join(f"{k}={v}" for k, v in value.items())
        elif isinstance(value, float):
            value = "-" if value != value else f"{value:.6g}"
        lines.append(f"{name:<{width}}  {value}")
    return "\n".join(lines)
