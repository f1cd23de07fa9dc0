"""Evaluate a run against qrels with trec_eval 9.0.8's semantics, and print trec_eval's text."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from evalcore.errors import EvalCoreError
from evalcore.retrieval.data import Qrels, Run
from evalcore.retrieval.keys import small_pages
from evalcore.retrieval.names import DEFAULT_MEASURES, MeasureSpec, parse_measures
from evalcore.retrieval.ranking import RankingContext, build_context


class NoCommonQueriesError(EvalCoreError, ValueError):
    """The run and the qrels share no query (trec_eval stops here too)."""


@dataclass(frozen=True, eq=False)
class RetrievalResult:
    """Per-query values (arrays aligned with `qids`) and their aggregates, keyed by measure name.

    `qids` are the evaluated queries: those in both the run and the qrels, sorted. With
    `complete=True` the aggregates also count `missing_qids` (qrels queries the run lacks) as 0.
    """

    qids: np.ndarray
    values: dict[str, np.ndarray]
    aggregate: dict[str, float]
    specs: tuple[MeasureSpec, ...]
    missing_qids: np.ndarray
    complete: bool

    @cached_property
    def per_query(self) -> dict[str, dict[str, float]]:
        """{qid: {measure: value}} for the evaluated queries (built on first use)."""
        columns = {key: values.tolist() for key, values in self.values.items()}
        return {
            str(qid): {key: column[i] for key, column in columns.items()} for i, qid in enumerate(self.qids)
        }

    def per_query_array(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(qids, values) for one measure, for paired statistics.

        With complete=True the qrels queries the run lacks follow, with the value they contribute to
        the aggregate (0; log(0.00001) for gm_map), so the arrays are aligned across runs.
        """
        spec = next((s for s in self.specs if s.key == name), None)
        if spec is None:
            raise KeyError(f"{name!r} was not evaluated; the measures are {[s.key for s in self.specs]}")
        values = self.values[name]
        if not self.complete or not len(self.missing_qids):
            return self.qids, values
        filler = np.full(len(self.missing_qids), spec.measure.missing_value)
        qids = np.concatenate([self.qids, self.missing_qids])
        order = np.argsort(qids, kind="stable")
        return qids[order], np.concatenate([values, filler])[order]


def _aggregate(spec: MeasureSpec, values: np.ndarray, missing: int, complete: bool) -> float:
    measure = spec.measure
    if measure.aggregate == "sum":
        return float(values.sum())
    total = float(values.sum())
    count = len(values)
    if complete:
        total += missing * measure.missing_value
        count += missing
    if measure.aggregate == "gmean":
        return float(np.exp(total / count)) if count else 0.0
    return total / count if count else 0.0


def evaluate(
    qrels: Qrels,
    run: Run,
    measures: Sequence[str] | None = None,
    *,
    rel_level: int = 1,
    complete: bool = False,
) -> RetrievalResult:
    """Evaluate `run` against `qrels`, as `trec_eval [-l rel_level] [-c] -m ...` does.

    `measures` takes trec_eval and ir-measures names (see `parse_measure`); None means trec_eval's
    default set. Queries of the run that the qrels lack are ignored; with `complete` the aggregates
    divide by every qrels query, counting the missing ones as 0.

    >>> qrels = Qrels.from_dict({"q1": {"a": 1, "b": 0}, "q2": {"c": 2}})
    >>> run = Run.from_dict({"q1": {"a": 1.0, "b": 2.0}, "q3": {"c": 1.0}})
    >>> evaluate(qrels, run, ["P@1", "map"]).aggregate
    {'P@1': 0.0, 'map': 0.5}
    >>> evaluate(qrels, run, ["map"], complete=True).aggregate
    {'map': 0.25}
    """
    if isinstance(measures, str):
        measures = [measures]
    specs = parse_measures(list(DEFAULT_MEASURES if measures is None else measures))
    with small_pages():
        ctx = build_context(qrels, run)
    if ctx.num_queries == 0:
        raise NoCommonQueriesError("no query has both results and relevance judgments")
    values = compute(ctx, specs, rel_level)
    missing = len(ctx.missing_qids)
    aggregate = {s.key: _aggregate(s, values[s.key], missing, complete) for s in specs}
    return RetrievalResult(ctx.qids, values, aggregate, specs, ctx.missing_qids, complete)


def compute(ctx: RankingContext, specs: Sequence[MeasureSpec], rel_level: int) -> dict[str, np.ndarray]:
    """Per-query values of every spec, computing each distinct (measure, param, level) once."""
    done: dict[tuple[str, float | None, int], np.ndarray] = {}
    out: dict[str, np.ndarray] = {}
    for spec in specs:
        level = spec.level(rel_level) if spec.measure.uses_rel_level else rel_level
        key = (spec.measure.name, spec.param, level)
        if key not in done:
            done[key] = spec.measure.kernel(ctx, spec.param, level)
        out[spec.key] = done[key]
    return out


def _format_value(spec: MeasureSpec, value: float) -> str:
    return str(int(round(value))) if spec.measure.integer else f"{value:.4f}"


def format_trec(result: RetrievalResult, *, per_query: bool = False) -> str:
    """trec_eval's text output: `measure<TAB>qid|all<TAB>value`, with the measure padded to 22.

    With `per_query` (trec_eval -q) each query's lines come first; gm_map and num_q are printed only
    for "all", as trec_eval does.
    """
    lines: list[str] = []
    if per_query:
        for i, qid in enumerate(result.qids):
            for spec in result.specs:
                if spec.measure.name in ("gm_map", "num_q"):
                    continue
                value = _format_value(spec, float(result.values[spec.key][i]))
                lines.append(f"{spec.key:<22s}\t{qid}\t{value}")
    for spec in result.specs:
        lines.append(f"{spec.key:<22s}\tall\t{_format_value(spec, result.aggregate[spec.key])}")
    return "\n".join(lines) + "\n"
