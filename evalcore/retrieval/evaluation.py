"""Evaluate a run against qrels with trec_eval 9.0.8's semantics, and print trec_eval's text."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from evalcore.arrow import small_pages
from evalcore.errors import EvalCoreError
from evalcore.retrieval.average_precision import MIN_GEO_MEAN
from evalcore.retrieval.data import Qrels, Run
from evalcore.retrieval.measures import ORDER
from evalcore.retrieval.names import OFFICIAL_MEASURES, MeasureSpec, UnknownMeasureError, parse_measures
from evalcore.retrieval.ranking import (
    RankingContext,
    _evaluated_queries,
    _join,
    _ranks,
    build_context,
    judged_context,
)

if TYPE_CHECKING:  # imported where used: evaluating qrels never loads them
    from evalcore.retrieval.judgment_groups import QrelsJG
    from evalcore.retrieval.preferences import Prefs


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
    #: Values are z-scores (trec_eval -Z): printed with a "Z" before the name, every one as a decimal.
    zscores: bool = False

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


def _defined_mean(values: np.ndarray) -> float:
    """The mean over the queries with a value (NaN marks the others), NaN when none has one, as
    ir-measures' mean of the values its provider reports."""
    defined = values[~np.isnan(values)]
    return _sequential_sum(defined) / len(defined) if len(defined) else float("nan")


def _aggregate(spec: MeasureSpec, values: np.ndarray, ctx: RankingContext, complete: bool) -> float:
    how = spec.measure.aggregate
    missing = len(ctx.missing_qids) if complete else 0
    count = len(values) + missing
    if how == "defined":
        return _defined_mean(values)
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
    max_docs: int | None = None,
    judged_only: bool = False,
    num_docs: int = 0,
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

    `max_docs` keeps each query's first documents only (trec_eval -M); `judged_only` drops the
    documents the qrels do not judge (with rel >= 0) before ranking (trec_eval -J); `num_docs` is the
    collection's size (trec_eval -N), which only utility's fourth coefficient uses:

    >>> evaluate(qrels, run, ["P@1", "num_ret"], max_docs=1).aggregate
    {'P@1': 0.0, 'num_ret': 1.0}
    >>> evaluate(qrels, Run.from_dict({"q1": {"x": 3.0, "a": 1.0}}), ["P@1"], judged_only=True).aggregate
    {'P@1': 1.0}

    A query with no judged document retrieved stays under `judged_only`, with nothing retrieved (as in
    trec_eval and pytrec_eval). ir-measures' `judged_only=True` asks it of one measure only:

    >>> evaluate(qrels, Run.from_dict({"q1": {"x": 3.0, "a": 1.0}}), ["P@1", "P(judged_only=True)@1"]).aggregate
    {'P@1': 0.0, 'P(judged_only=True)@1': 1.0}
    >>> evaluate(qrels, run, ["utility.0,0,0,1"], num_docs=100).aggregate  # q1: 100 + 1 - 2 - 1
    {'utility.0,0,0,1': 98.0}
    """
    if isinstance(measures, str):
        measures = [measures]
    specs = parse_measures(list(OFFICIAL_MEASURES if measures is None else measures))
    require_rel_format(specs, "qrels")
    if max_docs is not None:
        run = restrict_run(qrels, run, max_docs=max_docs)
    with small_pages():
        ctx = build_context(qrels, run)
    if ctx.num_queries == 0:
        raise NoCommonQueriesError("no query has both results and relevance judgments")
    if judged_only:
        ctx = judged_context(ctx)
    ctx.num_docs = float(num_docs)
    numeric = tuple(s for s in specs if not s.measure.text)
    text_specs = tuple(s for s in specs if s.measure.text)
    values = _compute_columns(ctx, numeric, rel_level, judged_already=judged_only)
    text = compute(ctx, tuple(s for s in text_specs if s.measure.per_query), rel_level)
    aggregate = {s.key: _aggregate(s, values[s.key], ctx, complete) for s in numeric}
    return RetrievalResult(
        ctx.qids, values, aggregate, numeric, ctx.missing_qids, complete, text, text_specs, run.run_id
    )


def _compute_columns(
    ctx: RankingContext, specs: Sequence[MeasureSpec], rel_level: int, *, judged_already: bool
) -> dict[str, np.ndarray]:
    """`compute`, with the specs marked judged_only (`P(judged_only=True)@10`) computed on the ranking
    of the judged documents (one more context, derived from `ctx` without a join, built only when one
    is asked), in the order asked."""
    judged = [s for s in specs if s.judged_only]
    if not judged or judged_already:
        return compute(ctx, specs, rel_level)
    plain = compute(ctx, [s for s in specs if not s.judged_only], rel_level)
    plain.update(compute(judged_context(ctx), judged, rel_level))
    return {s.key: plain[s.key] for s in specs}


def require_rel_format(specs: Sequence[MeasureSpec], rel_format: str) -> None:
    """Refuse the measures that need other relevance information than `rel_format` (runid and num_q
    need none): a preference measure asked of qrels, map asked of preferences."""
    generic = {"runid", "num_q"}
    wrong = [s.key for s in specs if s.measure.rel_format != rel_format and s.measure.name not in generic]
    if wrong:
        formats = {"qrels": "-R qrels (a qrels file)", "prefs": "-R prefs or -R qrels_prefs",
                   "qrels_jg": "-R qrels_jg"}  # fmt: skip
        needs = " or ".join(dict.fromkeys(formats[s.measure.rel_format] for s in specs if s.key in wrong))
        raise UnknownMeasureError(f"{', '.join(wrong)}: only with {needs}")


def restrict_run(qrels: Qrels, run: Run, *, max_docs: int | None = None, judged_only: bool = False) -> Run:
    """The run as trec_eval evaluates it under -M (each query's first `max_docs` documents in its order)
    and -J (then only the documents judged with rel >= 0). Only called when either is asked."""
    keep = np.ones(len(run), dtype=bool)
    if max_docs is not None:
        keep &= _ranks(run, np.arange(len(run))) <= max_docs
    if judged_only:
        _, run_to_eval, qrels_to_eval = _evaluated_queries(qrels, run)
        rows, qrels_rows = _join(qrels, run, run_to_eval, qrels_to_eval)
        judged = np.zeros(len(run), dtype=bool)
        judged[rows[qrels.rels[qrels_rows] >= 0]] = True
        keep &= judged
    if keep.all():
        return run
    return replace(run.take(np.flatnonzero(keep)), run_id=run.run_id)


def evaluate_prefs(
    prefs: Prefs, run: Run, measures: Sequence[str] | str | None = None, *, max_docs: int | None = None
) -> RetrievalResult:
    """Evaluate `run` against preference judgments, as `trec_eval -R prefs [-M n] -m ...` does.

    `measures` defaults to trec_eval's `prefs` set; the preference measures and runid and num_q apply.
    Queries of the prefs that the run lacks are skipped, as trec_eval skips them.
    """
    from evalcore.retrieval.preferences import build_prefs_context

    if isinstance(measures, str):
        measures = [measures]
    specs = parse_measures(list(["prefs"] if measures is None else measures))
    require_rel_format(specs, "prefs")
    with small_pages():
        ctx = build_prefs_context(prefs, run, max_docs=max_docs)
    if ctx.num_queries == 0:
        raise NoCommonQueriesError("no query has both results and preference judgments")
    numeric = tuple(s for s in specs if not s.measure.text)
    text_specs = tuple(s for s in specs if s.measure.text)
    values = compute(ctx, numeric, 1)  # type: ignore[arg-type]
    missing = np.zeros(0, dtype=object)
    aggregate = {s.key: _reduce(s, values[s.key], missing=0) for s in numeric}
    return RetrievalResult(ctx.qids, values, aggregate, numeric, missing, False, {}, text_specs, run.run_id)


def evaluate_jg(
    judgments: QrelsJG,
    run: Run,
    measures: Sequence[str] | str | None = None,
    *,
    rel_level: int = 1,
    max_docs: int | None = None,
    judged_only: bool = False,
) -> RetrievalResult:
    """Evaluate `run` against several users' qrels, as `trec_eval -R qrels_jg -m ...` does.

    `measures` defaults to trec_eval's `qrels_jg` set (map_avgjg, P_avgjg, Rprec_mult_avgjg): each
    judgment group is evaluated as its own query on the query's ranking, then averaged over the JGs.
    """
    from evalcore.retrieval.judgment_groups import JudgmentGroupContext, expand_run

    if isinstance(measures, str):
        measures = [measures]
    specs = parse_measures(list(["qrels_jg"] if measures is None else measures))
    require_rel_format(specs, "qrels_jg")
    expanded = expand_run(judgments, run)
    if max_docs is not None or judged_only:
        expanded = restrict_run(judgments.qrels, expanded, max_docs=max_docs, judged_only=judged_only)
    with small_pages():
        inner = build_context(judgments.qrels, expanded)
    if inner.num_queries == 0:
        raise NoCommonQueriesError("no query has both results and relevance judgments")
    query_of = np.array([q.split("\x1f", 1)[0] for q in inner.qids.tolist()], dtype=object)
    qids, group_query = np.unique(query_of, return_inverse=True)
    ctx = JudgmentGroupContext(inner, group_query.reshape(-1), qids.astype(object), run.run_id)
    numeric = tuple(s for s in specs if not s.measure.text)
    text_specs = tuple(s for s in specs if s.measure.text)
    values = compute(ctx, numeric, rel_level)  # type: ignore[arg-type]
    aggregate = {s.key: _reduce(s, values[s.key], missing=0) for s in numeric}
    return RetrievalResult(
        ctx.qids, values, aggregate, numeric, np.zeros(0, dtype=object), False, {}, text_specs, run.run_id
    )


#: trec_eval's value for a measure and query that the z-score file lacks (or has with stddev 0 and
#: another mean).
MISSING_ZSCORE = -1000000.0


def with_zscores(
    result: RetrievalResult, table: Mapping[tuple[str, str], tuple[float, float]]
) -> RetrievalResult:
    """Each query's values as z-scores against `table` {(qid, measure): (mean, stddev)}, the aggregates
    recomputed from them, as trec_eval -Z does; num_q stays the number of queries.

    >>> qrels = Qrels.from_dict({"q1": {"a": 1}})
    >>> result = evaluate(qrels, Run.from_dict({"q1": {"a": 1.0}}), ["P_1", "map"])
    >>> with_zscores(result, {("q1", "P_1"): (0.5, 0.25)}).aggregate
    {'P_1': 2.0, 'map': -1000000.0}
    """
    qids = [str(q) for q in result.qids.tolist()]
    values: dict[str, np.ndarray] = {}
    for spec in result.specs:
        stats = np.array([table.get((qid, spec.label), (np.nan, np.nan)) for qid in qids], dtype=np.float64)
        mean, stddev = (stats[:, 0], stats[:, 1]) if len(qids) else (np.zeros(0), np.zeros(0))
        raw = result.values[spec.key]
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(stddev != 0, (raw - mean) / np.where(stddev != 0, stddev, 1.0), 0.0)
        z = np.where(np.isnan(mean) | ((stddev == 0) & (raw != mean)), MISSING_ZSCORE, z)
        values[spec.key] = z
    missing = len(result.missing_qids) if result.complete else 0
    aggregate = {s.key: _reduce(s, values[s.key], missing=missing) for s in result.specs}
    return replace(result, values=values, aggregate=aggregate, zscores=True)


def _reduce(spec: MeasureSpec, values: np.ndarray, *, missing: int) -> float:
    """An aggregate from per-query values alone (no qrels at hand): mean, sum, geometric mean, count."""
    how = spec.measure.aggregate
    count = len(values) + missing
    if how == "defined":
        return _defined_mean(values)
    if how == "queries":
        return float(count)
    total = _sequential_sum(values)
    if how in ("sum", "relevant"):
        return total
    if how == "gmean":
        total += missing * math.log(MIN_GEO_MEAN)
        return math.exp(total / count) if count else 0.0
    return total / count if count else 0.0


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


def _formatted(spec: MeasureSpec, values: np.ndarray, zscores: bool = False) -> list[str]:
    if spec.measure.text:
        return [f"'{value}'" for value in values.tolist()]
    if spec.measure.integer and not zscores:
        return [str(int(round(value))) for value in values.tolist()]
    return [f"{value:6.4f}" for value in values.tolist()]


def format_trec(result: RetrievalResult, *, per_query: bool = False, summary: bool = True) -> str:
    """trec_eval's text output: `measure<TAB>qid|all<TAB>value`, with the measure padded to 22.

    `summary=False` leaves out the `all` lines (trec_eval -n).

    Lines follow trec_eval's order of measures, whatever order they were asked in. With `per_query`
    (trec_eval -q) each query's lines come first; runid, num_q, gm_map and gm_bpref are printed only
    for "all", and relstring only per query, as trec_eval does.
    """
    specs = sorted((*result.specs, *result.text_specs), key=_trec_order)
    z = result.zscores

    def name(spec: MeasureSpec) -> str:
        # trec_eval -Z prints "Z" before each numeric measure's padded name.
        return f"Z{spec.label:<22s}" if z and not spec.measure.text else f"{spec.label:<22s}"

    lines: list[str] = []
    if per_query:
        columns = [
            (
                spec,
                _formatted(spec, result.text[spec.key] if spec.measure.text else result.values[spec.key], z),
            )
            for spec in specs
            if spec.measure.per_query
        ]
        skipped = {  # a query where the measure is undefined (Accuracy) gets no line, as in ir-measures
            spec.key: np.isnan(result.values[spec.key])
            for spec, _ in columns
            if spec.measure.aggregate == "defined"
        }
        for i, qid in enumerate(result.qids.tolist()):
            lines.extend(
                f"{name(spec)}\t{qid}\t{column[i]}"
                for spec, column in columns
                if not (spec.key in skipped and skipped[spec.key][i])
            )
    for spec in specs:
        if not (summary and spec.measure.summary):
            continue
        if spec.measure.text:  # runid
            value = result.run_id or ""
        else:
            value = _formatted(spec, np.array([result.aggregate[spec.key]]), z)[0]
        lines.append(f"{name(spec)}\tall\t{value}")
    return "".join(line + "\n" for line in lines)
