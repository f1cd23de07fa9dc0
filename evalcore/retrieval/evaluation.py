"""Evaluate a run against qrels with trec_eval 9.0.8's semantics, and print trec_eval's text."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from evalcore.arrow import small_pages
from evalcore.errors import EvalCoreError
from evalcore.retrieval.average_precision import MIN_GEO_MEAN
from evalcore.retrieval.data import Qrels, Run
from evalcore.retrieval.measures import ORDER
from evalcore.retrieval.names import OFFICIAL_MEASURES, MeasureSpec, parse_measures
from evalcore.retrieval.ranking import RankingContext, build_context


class NoCommonQueriesError(EvalCoreError, ValueError):
    """The run and the qrels share no query (trec_eval stops here too)."""


@dataclass(frozen=True, eq=False)
class RetrievalResult:
    """Per-query values (arrays aligned with `qids`) and their aggregates, keyed by measure name.

    `qids` are the evaluated queries: those in both the run and the qrels, sorted. With
    `complete=True` the aggregates also count `missing_qids` (qrels queries the run lacks) as 0.
    `specs` are the numeric measures; `text_specs` the text ones (runid, relstring), whose per-query
    values are in `text` and which have no aggregate.
    """

    qids: np.ndarray
    values: dict[str, np.ndarray]
    aggregate: dict[str, float]
    specs: tuple[MeasureSpec, ...]
    missing_qids: np.ndarray
    complete: bool
    text: dict[str, np.ndarray] = field(default_factory=dict)
    text_specs: tuple[MeasureSpec, ...] = ()
    run_id: str | None = None

    @cached_property
    def per_query(self) -> dict[str, dict[str, float | str]]:
        """{qid: {measure: value}} for the evaluated queries (built on first use)."""
        columns: dict[str, list[float | str]] = {key: values.tolist() for key, values in self.values.items()}
        columns.update({key: values.tolist() for key, values in self.text.items()})
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


def _sequential_sum(values: np.ndarray) -> float:
    """The sum in query order, one term at a time, as trec_eval accumulates it.

    numpy's sum adds pairwise, which rounds differently in the last bits; on values such as a mean of
    P@10 that can move the printed fourth decimal.
    """
    return float(np.cumsum(values)[-1]) if len(values) else 0.0


def _aggregate(spec: MeasureSpec, values: np.ndarray, ctx: RankingContext, complete: bool) -> float:
    how = spec.measure.aggregate
    missing = len(ctx.missing_qids) if complete else 0
    count = len(values) + missing
    if how == "queries":
        return float(count)
    if how == "relevant" and complete:
        # trec_eval 9.0.8 (m_num_rel.c) counts every judgment with rel > 0 in the qrels under -c,
        # whatever -l; an explicit level (`num_rel_min_rel_2`) counts rel >= that level.
        rels = ctx.qrels_rels
        return float(np.count_nonzero(rels > 0 if spec.rel_level is None else rels >= spec.rel_level))
    total = _sequential_sum(values)
    if how in ("sum", "relevant"):
        return total
    if how == "gmean":
        total += missing * math.log(MIN_GEO_MEAN)  # a missing query's AP counts as the floor
        return math.exp(total / count) if count else 0.0
    if spec.measure.missing:
        total += missing * spec.measure.missing  # RBP's residual: nothing of a missing query is known
    return total / count if count else 0.0


def evaluate(
    qrels: Qrels,
    run: Run,
    measures: Sequence[str] | str | None = None,
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
    specs = parse_measures(list(OFFICIAL_MEASURES if measures is None else measures))
    with small_pages():
        ctx = build_context(qrels, run)
    if ctx.num_queries == 0:
        raise NoCommonQueriesError("no query has both results and relevance judgments")
    numeric = tuple(s for s in specs if not s.measure.text)
    text_specs = tuple(s for s in specs if s.measure.text)
    values = compute(ctx, numeric, rel_level)
    text = compute(ctx, tuple(s for s in text_specs if s.measure.per_query), rel_level)
    aggregate = {s.key: _aggregate(s, values[s.key], ctx, complete) for s in numeric}
    return RetrievalResult(
        ctx.qids, values, aggregate, numeric, ctx.missing_qids, complete, text, text_specs, run.run_id
    )


def compute(ctx: RankingContext, specs: Sequence[MeasureSpec], rel_level: int) -> dict[str, np.ndarray]:
    """Per-query values of every spec, computing each distinct (measure, param, level) once."""
    done: dict[tuple[str, object, int], np.ndarray] = {}
    out: dict[str, np.ndarray] = {}
    for spec in specs:
        level = spec.level(rel_level) if spec.measure.uses_rel_level else rel_level
        key = (spec.measure.name, spec.param, level)
        if key not in done:
            assert spec.measure.kernel is not None
            done[key] = spec.measure.kernel(ctx, spec.param, level)
        out[spec.key] = done[key]
    return out


# --- trec_eval's text ----------------------------------------------------------------------------


def _trec_order(spec: MeasureSpec) -> int:
    return ORDER[spec.measure.name]


def _formatted(spec: MeasureSpec, values: np.ndarray) -> list[str]:
    if spec.measure.text:
        return [f"'{value}'" for value in values.tolist()]
    if spec.measure.integer:
        return [str(int(round(value))) for value in values.tolist()]
    return [f"{value:6.4f}" for value in values.tolist()]


def format_trec(result: RetrievalResult, *, per_query: bool = False) -> str:
    """trec_eval's text output: `measure<TAB>qid|all<TAB>value`, with the measure padded to 22.

    Lines follow trec_eval's order of measures, whatever order they were asked in. With `per_query`
    (trec_eval -q) each query's lines come first; runid, num_q, gm_map and gm_bpref are printed only
    for "all", and relstring only per query, as trec_eval does.
    """
    specs = sorted((*result.specs, *result.text_specs), key=_trec_order)
    lines: list[str] = []
    if per_query:
        columns = [
            (spec, _formatted(spec, result.text[spec.key] if spec.measure.text else result.values[spec.key]))
            for spec in specs
            if spec.measure.per_query
        ]
        for i, qid in enumerate(result.qids.tolist()):
            lines.extend(f"{spec.label:<22s}\t{qid}\t{column[i]}" for spec, column in columns)
    for spec in specs:
        if not spec.measure.summary:
            continue
        if spec.measure.text:  # runid
            value = result.run_id or ""
        else:
            value = _formatted(spec, np.array([result.aggregate[spec.key]]))[0]
        lines.append(f"{spec.label:<22s}\tall\t{value}")
    return "\n".join(lines) + "\n"
