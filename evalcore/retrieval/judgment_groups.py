"""Judgment groups (trec_eval -R qrels_jg): several users' qrels for one query, and the measures
averaged over them (map_avgjg, P_avgjg, Rprec_mult_avgjg), plus yaap.

A `qrels_jg` file is a qrels file whose second column names the judgment group (JG, a user) instead of
trec_eval's unused iter. Each JG is evaluated as a query of its own, the run's ranking of its query
repeated for it, and a query's value is the mean over its JGs: trec_eval's m_map_avgjg.c,
m_P_avgjg.c and m_Rprec_mult_avgjg.c compute each JG exactly as map, P and Rprec_mult and divide the
sum by the number of JGs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa

from evalcore.retrieval import average_precision as ap
from evalcore.retrieval import precision
from evalcore.retrieval.data import Qrels, Run, lookup
from evalcore.retrieval.precision import MeasureParam
from evalcore.retrieval.ranking import RankingContext

#: Separates a query id from a JG in the compound query ids (below any printable character, so that
#: the compound ids sort by query, then JG, as trec_eval sorts them).
SEPARATOR = "\x1f"


@dataclass(frozen=True, eq=False)
class QrelsJG:
    """Judgments per (query, JG): a `Qrels` over compound query ids `qid<US>jg`."""

    qrels: Qrels

    @classmethod
    def from_rows(cls, qids: list[str], jgs: list[str], docnos: list[str], rels: list[int]) -> QrelsJG:
        compound = [f"{q}{SEPARATOR}{j}" for q, j in zip(qids, jgs, strict=True)]
        vocab, codes = np.unique(np.asarray(compound, dtype=object), return_inverse=True)
        return cls(Qrels.from_codes(vocab, codes.reshape(-1), docnos, np.asarray(rels, dtype=np.int64)))

    @property
    def query_of_group(self) -> np.ndarray:
        """The query id of each compound id (sorted as the compound ids are)."""
        return np.array([q.split(SEPARATOR, 1)[0] for q in self.qrels.qids.tolist()], dtype=object)


def expand_run(judgments: QrelsJG, run: Run) -> Run:
    """The run with each query's rows repeated under each of its JGs' compound ids."""
    group_query = judgments.query_of_group
    run_code_of_group = lookup(run.qids, group_query)
    groups = np.flatnonzero(run_code_of_group >= 0)
    if not len(groups):
        return Run.from_codes(judgments.qrels.qids, np.zeros(0, dtype=np.int64), [], np.zeros(0))
    # Rows of each run query, grouped, then repeated for every JG of that query.
    order = np.argsort(run.qid_codes, kind="stable")
    starts = np.searchsorted(run.qid_codes[order], np.arange(len(run.qids) + 1))
    codes = run_code_of_group[groups]
    sizes = starts[codes + 1] - starts[codes]
    offset = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    rows = order[np.repeat(starts[codes], sizes) + offset]
    expanded = Run.from_codes(
        judgments.qrels.qids, np.repeat(groups, sizes), run.docnos.take(pa.array(rows)), run.scores[rows]
    )
    return replace(expanded, run_id=run.run_id)


@dataclass(eq=False)
class JudgmentGroupContext:
    """The ranking context of the compound (query, JG) queries, and which evaluated query each is."""

    inner: RankingContext
    group_query: np.ndarray  # per compound query of `inner`, its evaluated query index
    qids: np.ndarray
    run_id: str | None

    @property
    def num_queries(self) -> int:
        return len(self.qids)

    def average(self, values: np.ndarray) -> np.ndarray:
        """trec_eval's sum over a query's JGs, divided by their number when there are several."""
        total = np.bincount(self.group_query, weights=values, minlength=self.num_queries)
        groups = np.bincount(self.group_query, minlength=self.num_queries)
        return np.where(groups > 1, total / np.maximum(groups, 1), total)


def map_avgjg(ctx: JudgmentGroupContext, param: MeasureParam, level: int) -> np.ndarray:
    return ctx.average(ap.average_precision(ctx.inner, param, level))


def p_avgjg(ctx: JudgmentGroupContext, param: MeasureParam, level: int) -> np.ndarray:
    return ctx.average(precision.precision(ctx.inner, param, level))


def rprec_mult_avgjg(ctx: JudgmentGroupContext, param: MeasureParam, level: int) -> np.ndarray:
    return ctx.average(precision.r_precision_multiple(ctx.inner, param, level))


def yaap(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    """Robertson's yet another average precision: log((1 + S) / (1 + R - S)), S the sum of precision
    at the relevant ranks (AP times R)."""
    sums, _ = ap._precision_sum(ctx, np.inf, level)
    return np.log((1.0 + sums) / (1.0 + ctx.num_rel(level) - sums))
