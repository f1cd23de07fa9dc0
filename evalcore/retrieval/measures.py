"""The registry of retrieval measures: each declared once, as a `MetricSpec` with its names, formula,
parameters and kernel.

Notation, per query: rank r = 1, 2, ... in trec_eval's order (score descending, then document id
descending); rel(r) the judged grade at rank r (unjudged documents count as non-relevant); "relevant"
means rel >= l, the relevance level (trec_eval -l, default 1); R the number of relevant judged
documents; N the number of judged documents below the level; n the number retrieved, r of them
relevant.

The registry lists trec_eval 9.0.8's measures in trec_eval's own order (the order of its output
lines), then the measures it lacks. A kernel takes the ranking context, the measure's parameter and
the relevance level, and returns one value per evaluated query.

The examples use one query judged {d1: 2, d2: 0, d3: 1, d5: 3} and ranked d1, d2, d3, d4:

>>> example("P@2")
0.5
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from importlib import import_module
from typing import Any, Literal

import numpy as np

from evalcore.metrics import Direction, MetricSpec
from evalcore.retrieval import average_precision as ap
from evalcore.retrieval import compatibility, gain, pairwise, precision, user_models
from evalcore.retrieval.average_precision import MIN_GEO_MEAN
from evalcore.retrieval.precision import MeasureParam
from evalcore.retrieval.ranking import RankingContext

Kernel = Callable[[RankingContext, MeasureParam, int], np.ndarray]
#: How a measure takes parameters: none; cutoffs k (one output each, `P_10`); fractions (one output
#: each, printed with two decimals, `iprec_at_recall_0.50`); a list of values (one output,
#: `utility.1,-1,0,0`); or gain overrides (one output, `ndcg.1=3,2=9`).
Param = Literal["none", "cutoff", "fraction", "values", "gains"]
#: How per-query values combine: the mean; the sum (counts); the geometric mean (gm_map); the number
#: of queries (num_q); the sum of relevant documents (num_rel, which -c takes from the whole qrels);
#: the mean over the queries where the measure is defined (not NaN: Accuracy, as ir-measures skips
#: the others); nothing (text printed per query, and runid).
Aggregate = Literal["mean", "sum", "gmean", "queries", "relevant", "defined", "none"]

DEFAULT_CUTOFFS: tuple[int, ...] = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
DEFAULT_RECALL_LEVELS: tuple[float, ...] = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


@dataclass(frozen=True)
class Measure(MetricSpec):
    """One retrieval measure. `doc` holds its formula and an example; `definition` is its first line.

    `name` is trec_eval's name where trec_eval has the measure (parametrised ones are written
    `name_k`: `P_10`, `ndcg_cut_10`), and `trec_name` what trec_eval prints when the two differ
    (`11pt_avg`, which is no identifier). `ir_name` is the ir-measures name, written `name@k` with a
    parameter (`P@10`).
    """

    ir_name: str | None = None
    doc: str = ""
    param: Param = "none"
    aggregate: Aggregate = "mean"
    integer: bool = False  # printed as an integer (trec_eval's num_* measures)
    text: bool = False  # its values are text (runid, relstring)
    uses_rel_level: bool = True
    trec_eval: bool = False  # trec_eval 9.0.8 (and pytrec_eval) computes it under `trec_name`
    trec_style: bool = True  # also read as `name_k` / `name.params`
    printed_name: str = ""
    per_query: bool = True  # trec_eval prints it for each query with -q
    summary: bool = True  # trec_eval prints it for "all"
    defaults: tuple[float, ...] | None = None  # parameters of the bare name, when not the usual ones
    #: ir-measures' keyword parameters (`RBP(p=0.9)`, `SDCG(max_rel=3)@10`, `@k` being `cutoff`), in
    #: the order of the parameter tuple, their defaults in `defaults` (NaN: the name must give it).
    options: tuple[str, ...] = ()
    #: A name that evaluates it, for the registry-wide tests, when the bare name needs parameters.
    example_name: str = ""
    #: The relevance information it needs: "qrels", "prefs" (trec_eval -R prefs / qrels_prefs) or
    #: "qrels_jg" (-R qrels_jg).
    rel_format: str = "qrels"

    @property
    def trec_name(self) -> str:
        return self.printed_name or self.name

    #: What a query of the qrels that the run lacks scores under -c, when not 0 (RBP's residual: 1).
    missing: float = 0.0

    @property
    def missing_value(self) -> float:
        """What a query of the qrels that the run lacks contributes under complete=True (-c): NaN, nothing,
        for a measure whose mean skips the queries where it is undefined."""
        if self.aggregate == "defined":
            return float("nan")
        return float(np.log(MIN_GEO_MEAN)) if self.aggregate == "gmean" else self.missing

    @property
    def default_params(self) -> tuple[float, ...]:
        if self.defaults is not None:
            return self.defaults
        if self.param == "cutoff":
            return DEFAULT_CUTOFFS
        if self.param == "fraction":
            return DEFAULT_RECALL_LEVELS
        return ()


def _measure(
    name: str,
    label: str,
    kernel: Kernel,
    doc: str,
    *,
    direction: Direction = "higher",
    range: tuple[float | None, float | None] | None = (0.0, 1.0),
    unit: str = "",
    aliases: tuple[str, ...] = (),
    **options: Any,
) -> Measure:
    definition = doc.split("\n\n", 1)[0].replace("\n", " ")
    return Measure(
        name=name,
        label=label,
        family="retrieval",
        direction=direction,
        definition=definition,
        kernel=kernel,
        range=range,
        unit=unit,
        aliases=aliases,
        doc=doc,
        **options,
    )


def _count(
    name: str, label: str, kernel: Kernel, doc: str, *, unit: str = "documents", **options: Any
) -> Measure:
    options.setdefault("aggregate", "sum")
    return _measure(
        name, label, kernel, doc, direction="neutral", range=(0.0, None), unit=unit, integer=True, **options
    )


def _lazy(module: str, name: str) -> Kernel:
    """The kernel `name` of `evalcore.retrieval.<module>`, imported on first use: the preference and
    judgment-group kernels take their own context (`PrefsContext`, `JudgmentGroupContext`), and
    evaluating qrels never loads their modules."""

    def kernel(ctx: Any, param: MeasureParam, level: int) -> np.ndarray:
        result: np.ndarray = getattr(import_module(f"evalcore.retrieval.{module}"), name)(ctx, param, level)
        return result

    kernel.__name__ = kernel.__qualname__ = name
    return kernel


def _preference(name: str, label: str, kernel: Kernel, doc: str, **options: Any) -> Measure:
    """A preference measure (trec_eval -R prefs or qrels_prefs); see `evalcore.retrieval.preferences`."""
    return _measure(
        name, label, kernel, doc, rel_format="prefs", uses_rel_level=False, trec_eval=True, **options
    )


def _preference_count(name: str, label: str, kernel: Kernel, doc: str) -> Measure:
    return _count(
        name, label, kernel, doc, unit="preferences", rel_format="prefs", uses_rel_level=False, trec_eval=True
    )


_PREFS_EXAMPLE = "\n\n>>> example('{name}')\n{value}"

#: trec_eval 9.0.8's preference measures, in its output order (after num_nonrel_judged_ret).
_PREFERENCE_MEASURES: tuple[Measure, ...] = (
    _preference_count(
        "prefs_num_prefs_poss", "Preferences possible", _lazy("preferences", "num_prefs_poss"),
        "The number of preferences A > B of the judgments, summed over JGs and queries."
        + _PREFS_EXAMPLE.format(name="prefs_num_prefs_poss", value="3.0"),
    ),
    _preference_count(
        "prefs_num_prefs_ful", "Preferences fulfilled", _lazy("preferences", "num_prefs_ful"),
        "Preferences A > B with A ranked above B (B possibly not retrieved)."
        + _PREFS_EXAMPLE.format(name="prefs_num_prefs_ful", value="2.0"),
    ),
    _preference_count(
        "prefs_num_prefs_ful_ret", "Preferences fulfilled, both retrieved", _lazy("preferences", "num_prefs_ful_ret"),
        "Preferences A > B with both retrieved and A above B."
        + _PREFS_EXAMPLE.format(name="prefs_num_prefs_ful_ret", value="0.0"),
    ),
    _preference(
        "prefs_simp", "Preferences fulfilled / possible", _lazy("preferences", "simp"),
        "Fulfilled / possible preferences over all JGs; a preference neither of whose documents is\n"
        "retrieved counts as failed." + _PREFS_EXAMPLE.format(name="prefs_simp", value="0.6667"),
    ),
    _preference(
        "prefs_pair", "Mean share of fulfilled preferences per document pair", _lazy("preferences", "pair"),
        "Mean over document pairs with a preference of the share of their preferences (over JGs) the\n"
        "ranking fulfils; a pair neither of which is retrieved scores 0."
        + _PREFS_EXAMPLE.format(name="prefs_pair", value="0.6667"),
    ),
    _preference(
        "prefs_avgjg", "Preferences fulfilled / possible, averaged over JGs", _lazy("preferences", "avgjg"),
        "Fulfilled / possible preferences within each JG, averaged over the JGs."
        + _PREFS_EXAMPLE.format(name="prefs_avgjg", value="0.6667"),
    ),
    _preference(
        "prefs_avgjg_Rnonrel", "prefs_avgjg with R non-relevant documents", _lazy("preferences", "avgjg_rnonrel"),
        "prefs_avgjg with each JG's non-relevant documents (rel_level 0) cut to its first R or padded\n"
        "to R, R its relevant documents (akin to bpref)."
        + _PREFS_EXAMPLE.format(name="prefs_avgjg_Rnonrel", value="0.8"),
    ),
    _preference(
        "prefs_simp_ret", "Preferences fulfilled / possible, both retrieved", _lazy("preferences", "simp_ret"),
        "prefs_simp over the preferences whose two documents are retrieved."
        + _PREFS_EXAMPLE.format(name="prefs_simp_ret", value="0.0"),
    ),
    _preference(
        "prefs_pair_ret", "prefs_pair over retrieved pairs", _lazy("preferences", "pair_ret"),
        "prefs_pair over the pairs whose two documents are retrieved."
        + _PREFS_EXAMPLE.format(name="prefs_pair_ret", value="0.0"),
    ),
    _preference(
        "prefs_avgjg_ret", "prefs_avgjg over retrieved pairs", _lazy("preferences", "avgjg_ret"),
        "prefs_avgjg over the preferences whose two documents are retrieved."
        + _PREFS_EXAMPLE.format(name="prefs_avgjg_ret", value="0.0"),
    ),
    _preference(
        "prefs_avgjg_Rnonrel_ret", "prefs_avgjg_Rnonrel over retrieved pairs", _lazy("preferences", "avgjg_rnonrel_ret"),
        "prefs_avgjg_Rnonrel with R and the non-relevant documents counted among the retrieved."
        + _PREFS_EXAMPLE.format(name="prefs_avgjg_Rnonrel_ret", value="0.8"),
    ),
    _preference(
        "prefs_simp_imp", "prefs_simp over pairs with a retrieved document", _lazy("preferences", "simp_imp"),
        "prefs_simp ignoring the preferences neither of whose documents is retrieved."
        + _PREFS_EXAMPLE.format(name="prefs_simp_imp", value="0.6667"),
    ),
    _preference(
        "prefs_pair_imp", "prefs_pair over pairs with a retrieved document", _lazy("preferences", "pair_imp"),
        "prefs_pair ignoring the pairs neither of which is retrieved."
        + _PREFS_EXAMPLE.format(name="prefs_pair_imp", value="0.6667"),
    ),
    _preference(
        "prefs_avgjg_imp", "prefs_avgjg over pairs with a retrieved document", _lazy("preferences", "avgjg_imp"),
        "prefs_avgjg ignoring the preferences neither of whose documents is retrieved."
        + _PREFS_EXAMPLE.format(name="prefs_avgjg_imp", value="0.6667"),
    ),
)  # fmt: skip


_JG_EXAMPLE = "\n\n>>> example('{name}')\n{value}"

#: trec_eval 9.0.8's judgment-group measures (-R qrels_jg), then yaap, in its output order.
_JUDGMENT_GROUP_MEASURES: tuple[Measure, ...] = (
    _measure(
        "map_avgjg", "MAP averaged over judgment groups", _lazy("judgment_groups", "map_avgjg"),
        "AP of each judgment group's qrels, averaged over the query's JGs (users)."
        + _JG_EXAMPLE.format(name="map_avgjg", value="0.9167"),
        rel_format="qrels_jg", trec_eval=True,
    ),
    _measure(
        "P_avgjg", "Precision at k averaged over judgment groups", _lazy("judgment_groups", "p_avgjg"),
        "P@k of each judgment group's qrels, averaged over the query's JGs."
        + _JG_EXAMPLE.format(name="P_avgjg_5", value="0.3"),
        rel_format="qrels_jg", trec_eval=True, param="cutoff",
    ),
    _measure(
        "Rprec_mult_avgjg", "Precision at x times R averaged over judgment groups", _lazy("judgment_groups", "rprec_mult_avgjg"),
        "Rprec_mult of each judgment group's qrels (R its own), averaged over the query's JGs."
        + _JG_EXAMPLE.format(name="Rprec_mult_avgjg_1.00", value="0.75"),
        rel_format="qrels_jg", trec_eval=True, param="fraction",
        defaults=(0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0),
    ),
    _measure(
        "yaap", "Yet another average precision", _lazy("judgment_groups", "yaap"),
        "yaap = log((1 + S) / (1 + R - S)), S the sum of precision at the relevant retrieved ranks\n"
        "(AP times R): Robertson's smoothed AP (ECIR 2012), monotonic with AP on one query.\n\n"
        ">>> example('yaap')\n0.1335",
        range=(None, None), trec_eval=True,
    ),
)  # fmt: skip


def _run_id(ctx: RankingContext, param: MeasureParam, level: int) -> np.ndarray:
    return np.full(ctx.num_queries, ctx.run_id or "", dtype=object)


# --- the registry: trec_eval 9.0.8's measures in its output order, then the others -----------------

_REGISTRY: tuple[Measure, ...] = (
    _measure(
        "runid",
        "Run id",
        _run_id,
        "The run's name: the last field of a TREC run's last line, where trec_eval reads it.\n\n"
        ">>> example('runid')\n'example'",
        direction="neutral",
        range=None,
        aggregate="none",
        text=True,
        uses_rel_level=False,
        trec_eval=True,
        per_query=False,
    ),
    _count(
        "num_q",
        "Queries",
        precision.num_q,
        "Number of evaluated queries; with -c, every query of the qrels.\n\n>>> example('num_q')\n1.0",
        unit="queries",
        ir_name="NumQ",
        aggregate="queries",
        uses_rel_level=False,
        trec_eval=True,
        per_query=False,
    ),
    _count(
        "num_ret",
        "Documents retrieved",
        precision.num_ret,
        "n, the number of documents retrieved, summed over queries.\n\n>>> example('num_ret')\n4.0",
        ir_name="NumRet",
        uses_rel_level=False,
        trec_eval=True,
    ),
    _count(
        "num_rel",
        "Relevant documents",
        precision.num_rel,
        "R, the number of judged documents with rel >= l, summed over queries; with -c, every\n"
        "judgment with rel > 0 in the qrels, whatever l (trec_eval 9.0.8).\n\n>>> example('num_rel')\n3.0",
        ir_name="NumRel",
        aggregate="relevant",
        trec_eval=True,
    ),
    _count(
        "num_rel_ret",
        "Relevant documents retrieved",
        precision.num_rel_ret,
        "r, the relevant documents retrieved, summed over queries.\n\n>>> example('num_rel_ret')\n2.0",
        ir_name="NumRelRet",
        trec_eval=True,
    ),
    _measure(
        "map",
        "Mean average precision",
        ap.average_precision,
        "AP = (1/R) * sum over relevant ranks r of P@r; MAP is its mean over queries.\n\n"
        ">>> example('AP')\n0.5556",
        ir_name="AP",
        trec_eval=True,
    ),
    _measure(
        "gm_map",
        "Geometric mean average precision",
        ap.log_average_precision,
        "Geometric mean of AP: per query log(max(AP, 0.00001)), the summary exp(mean of those).\n"
        "Per-query values are the logs, as pytrec_eval reports them; trec_eval prints only the summary.\n\n"
        ">>> example('gm_map')\n0.5556",
        ir_name="GMAP",
        aggregate="gmean",
        trec_eval=True,
        per_query=False,
    ),
    _measure(
        "Rprec",
        "R-precision",
        precision.r_precision,
        "R-precision = |relevant in the top R| / R.\n\n>>> example('Rprec')\n0.6667",
        ir_name="Rprec",
        trec_eval=True,
    ),
    _measure(
        "bpref",
        "Binary preference",
        ap.bpref,
        "bpref = (1/R) * sum over relevant retrieved r of (1 - min(n_r, R) / min(N, R)), n_r the judged\n"
        "non-relevant documents above r (the term is 1 when n_r = 0); unjudged documents are skipped.\n\n"
        ">>> example('bpref')\n0.3333",
        ir_name="Bpref",
        trec_eval=True,
    ),
    _measure(
        "recip_rank",
        "Mean reciprocal rank",
        ap.reciprocal_rank,
        "RR = 1 / (rank of the first relevant document), 0 if none is retrieved; MRR is its mean.\n"
        "RR(rel=g) counts only grades >= g (seed 003's MRR uses g = 2).\n\n"
        ">>> example('RR(rel=3)')\n0.0",
        ir_name="RR",
        trec_eval=True,
    ),
    _measure(
        "iprec_at_recall",
        "Interpolated precision at recall x",
        precision.iprec_at_recall,
        "Interpolated precision at recall x: the best P@r over ranks r at or after the point where\n"
        "floor(x * R + 0.9) relevant documents have been seen (trec_eval 9's rounding).\n\n"
        ">>> example('iprec_at_recall_0.50')\n0.6667",
        ir_name="IPrec",
        param="fraction",
        trec_eval=True,
    ),
    _measure(
        "P",
        "Precision at k",
        precision.precision,
        "P@k = |relevant in the top k| / k, dividing by k even when fewer are retrieved.\n\n"
        ">>> example('P@2')\n0.5",
        ir_name="P",
        param="cutoff",
        trec_eval=True,
    ),
    _measure(
        "relstring",
        "Relevance string",
        precision.relstring,
        "The grades of the top N documents (default 10) as text: the digit, '>' above 9, '-' for a\n"
        "document outside the qrels, '.' for one judged with a negative grade; printed per query only.\n\n"
        ">>> example('relstring')\n'201-'",
        direction="neutral",
        range=None,
        param="values",
        aggregate="none",
        text=True,
        uses_rel_level=False,
        trec_eval=True,
        summary=False,
        defaults=(10.0,),
    ),
    _measure(
        "recall",
        "Recall at k",
        precision.recall,
        "R@k = |relevant in the top k| / R (0 when R = 0).\n\n>>> example('R@3')\n0.6667",
        ir_name="R",
        param="cutoff",
        trec_eval=True,
    ),
    _measure(
        "infAP",
        "Inferred average precision",
        ap.inferred_average_precision,
        "infAP (Yilmaz and Aslam): AP estimated from a sampled pool; at each relevant rank k > 1,\n"
        "1/k + ((k-1)/k) * (pooled above / (k-1)) * ((rel above + e) / (judged above + 2e)), e = 0.00001,\n"
        "where documents judged with a negative grade are pooled but unjudged; summed, divided by R.\n\n"
        ">>> example('infAP')\n0.5556",
        ir_name="infAP",
        trec_eval=True,
    ),
    _measure(
        "gm_bpref",
        "Geometric mean bpref",
        ap.log_bpref,
        "Geometric mean of bpref: per query log(max(bpref, 0.00001)), the summary exp(mean of those);\n"
        "trec_eval prints only the summary.\n\n>>> example('gm_bpref')\n0.3333",
        aggregate="gmean",
        trec_eval=True,
        per_query=False,
    ),
    _measure(
        "Rprec_mult",
        "Precision at x times R",
        precision.r_precision_multiple,
        "P at x * R: precision at cutoff floor(x * R + 0.9) (0 when that is 0); x = 1 is R-precision.\n\n"
        ">>> example('Rprec_mult_2.00')\n0.3333",
        param="fraction",
        trec_eval=True,
        defaults=(0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0),
    ),
    _measure(
        "utility",
        "Set utility",
        precision.utility,
        "Utility = a * r + b * (n - r) + c * (R - r) + d * (-r - (n - r) - (R - r)), with coefficients\n"
        "`utility.a,b,c,d` (default 1,-1,0,0); the last term would count the collection, taken as 0.\n\n"
        ">>> example('utility')\n0.0",
        range=None,
        unit="documents",
        param="values",
        trec_eval=True,
        defaults=(1.0, -1.0, 0.0, 0.0),
    ),
    _measure(
        "eleven_pt_avg",
        "11-point interpolated average precision",
        precision.eleven_point_average,
        "Mean interpolated precision at recall 0.0, 0.1, ..., 1.0 (or the levels of `11pt_avg.x,y`).\n\n"
        ">>> example('11pt_avg')\n0.6061",
        aliases=("11pt_avg",),
        printed_name="11pt_avg",
        param="values",
        trec_eval=True,
        defaults=DEFAULT_RECALL_LEVELS,
    ),
    _measure(
        "binG",
        "Binary G",
        gain.binary_g,
        "binG = (1/R) * sum over relevant retrieved documents of 1 / log2(2 + non-relevant above).\n\n"
        ">>> example('binG')\n0.5436",
        trec_eval=True,
    ),
    _measure(
        "G",
        "Normalized gain G",
        gain.g_measure,
        "G = sum over ranks r of gain(r) / log2(2 + cost(r) - gain so far), cost(r) the sum over ranks\n"
        "<= r of max(ideal gain, 1), divided by the ideal total gain (trec_eval's `G`, gains `G.1=3`).\n\n"
        ">>> example('G')\n0.2821",
        param="gains",
        trec_eval=True,
        uses_rel_level=False,
    ),
    _measure(
        "ndcg",
        "nDCG",
        gain.ndcg,
        "nDCG = DCG / IDCG with linear gain: DCG = sum over ranks r of gain(r) / log2(r + 1), gain the\n"
        "grade (or `ndcg.1=3,2=9` overrides); IDCG sorts all judged documents by gain. l does not apply.\n\n"
        ">>> example('nDCG')\n0.525",
        ir_name="nDCG",
        param="gains",
        uses_rel_level=False,
        trec_eval=True,
    ),
    _measure(
        "ndcg_rel",
        "nDCG averaged over relevant documents",
        gain.ndcg_rel,
        "nDCG averaged over the documents of positive gain: DCG@r / IDCG@r at each one retrieved (rank\n"
        "r), the final DCG / IDCG for each one missed.\n\n>>> example('ndcg_rel')\n0.5722",
        param="gains",
        uses_rel_level=False,
        trec_eval=True,
    ),
    _measure(
        "Rndcg",
        "nDCG averaged at R-levels",
        gain.r_ndcg,
        "nDCG averaged at the R-levels: after the last ideal document of each gain level, and at the\n"
        "end of the ranking when it goes further (0 when R = 0).\n\n>>> example('Rndcg')\n0.5537",
        param="gains",
        trec_eval=True,
    ),
    _measure(
        "ndcg_cut",
        "nDCG at k",
        gain.ndcg_cut,
        "nDCG@k = DCG@k / IDCG@k with linear gain; IDCG@k takes the k best judged documents.\n\n"
        ">>> example('nDCG@2')\n0.4693",
        ir_name="nDCG",
        param="cutoff",
        uses_rel_level=False,
        trec_eval=True,
    ),
    _measure(
        "map_cut",
        "Average precision at k",
        ap.average_precision_cut,
        "AP@k = (1/R) * sum over relevant ranks r <= k of P@r.\n\n>>> example('AP@2')\n0.3333",
        ir_name="AP",
        param="cutoff",
        trec_eval=True,
    ),
    _measure(
        "relative_P",
        "Relative precision at k",
        precision.relative_precision,
        "relative_P@k = |relevant in the top k| / min(k, R) (0 when R = 0): precision up to R, recall\n"
        "after; seed 000's recall, also named `recall_capped_k` and `R(cap)@k`.\n\n"
        ">>> example('R(cap)@2')\n0.5",
        aliases=("recall_capped",),
        ir_name="R(cap)",
        param="cutoff",
        trec_eval=True,
    ),
    _measure(
        "success",
        "Success at k",
        precision.success,
        "Success@k = 1 if a relevant document is in the top k, else 0 (hit rate).\n\n"
        ">>> example('Success@1')\n1.0",
        ir_name="Success",
        param="cutoff",
        trec_eval=True,
        defaults=(1, 5, 10),
    ),
    _measure(
        "set_P",
        "Set precision",
        precision.set_precision,
        "Set precision = r / n.\n\n>>> example('set_P')\n0.5",
        ir_name="SetP",
        trec_eval=True,
    ),
    _measure(
        "set_relative_P",
        "Set relative precision",
        precision.set_relative_precision,
        "Set relative precision = r / min(n, R) (0 when either is 0).\n\n>>> example('set_relative_P')\n0.6667",
        trec_eval=True,
    ),
    _measure(
        "set_recall",
        "Set recall",
        precision.set_recall,
        "Set recall = r / R (0 when R = 0).\n\n>>> example('set_recall')\n0.6667",
        ir_name="SetR",
        trec_eval=True,
    ),
    _measure(
        "set_map",
        "Set MAP",
        precision.set_map,
        "Set MAP = r^2 / (n * R): set precision times set recall.\n\n>>> example('set_map')\n0.3333",
        ir_name="SetAP",
        trec_eval=True,
    ),
    _measure(
        "set_F",
        "Set F-measure",
        precision.set_f,
        "Set F = (b + 1) * P * R / (b * P + R) of set precision P and set recall R, b from `set_F.b`\n"
        "(default 1), 0 when r = 0.\n\n>>> example('set_F')\n0.5714",
        ir_name="SetF",
        param="values",
        trec_eval=True,
        defaults=(1.0,),
    ),
    _count(
        "num_nonrel_judged_ret",
        "Judged non-relevant documents retrieved",
        precision.num_nonrel_judged_ret,
        "Judged documents retrieved below the level (rel >= 0 and < l), summed over queries.\n\n"
        ">>> example('num_nonrel_judged_ret')\n1.0",
        trec_eval=True,
    ),
    *_PREFERENCE_MEASURES,
    *_JUDGMENT_GROUP_MEASURES,
    # --- not in trec_eval 9.0.8 ------------------------------------------------------------------
    _measure(
        "recip_rank_cut",
        "Reciprocal rank at k",
        ap.reciprocal_rank_cut,
        "RR@k = 1 / (rank of the first relevant document) if that rank is <= k, else 0.\n\n"
        ">>> example('RR(rel=1)@1')\n1.0",
        ir_name="RR",
        param="cutoff",
    ),
    _measure(
        "ap_retrieved",
        "Average precision over the relevant retrieved, at k",
        ap.average_precision_retrieved,
        "Seed 000's AP: sum over relevant ranks r <= k of P@r, divided by the number of relevant\n"
        "documents in the top k instead of R (0 when there are none).\n\n>>> example('AP(ret)@3')\n0.8333",
        ir_name="AP(ret)",
        param="cutoff",
    ),
    _measure(
        "ndcg_exp",
        "nDCG, exponential gain",
        gain.ndcg_exp,
        "nDCG with exponential gain 2^rel - 1 (the seeds' formula), over the whole ranking.\n\n"
        ">>> example('nDCG(gain=exp)')\n0.3726",
        ir_name="nDCG(gain=exp)",
        uses_rel_level=False,
    ),
    _measure(
        "ndcg_exp_cut",
        "nDCG at k, exponential gain",
        gain.ndcg_exp_cut,
        "nDCG@k with exponential gain: sum over r <= k of (2^rel(r) - 1) / log2(r + 1), divided by the\n"
        "same sum over the k best judged documents.\n\n>>> example('nDCG(gain=exp)@2')\n0.3374",
        ir_name="nDCG(gain=exp)",
        param="cutoff",
        uses_rel_level=False,
    ),
    _measure(
        "judged",
        "Judged share of the top k",
        precision.judged,
        "judged_k = |documents in the top k that have any judgment| / k, dividing by k even when\n"
        "fewer are retrieved (as trec_eval's later unj_k does).\n\n>>> example('judged_10')\n0.3",
        param="cutoff",
        uses_rel_level=False,
    ),
    _measure(
        "Judged",
        "Judged share of the top k retrieved",
        precision.judged_of_retrieved,
        "Judged@k = |documents in the top k that have any judgment| / min(k, n) (ir-measures'\n"
        "definition).\n\n>>> example('Judged@10')\n0.75",
        ir_name="Judged",
        param="cutoff",
        uses_rel_level=False,
        trec_style=False,
    ),
)

# --- the measures ir-measures names that trec_eval lacks, each checked against the ir-measures provider
# that computes it (cwl_eval, gdeval, compat); parameters by keyword, as ir-measures writes them ----

_REQUIRED = float("nan")


def _keyword(
    name: str, label: str, kernel: Kernel, doc: str, *, options: dict[str, float], **extra: Any
) -> Measure:
    extra.setdefault("uses_rel_level", False)
    return _measure(
        name,
        label,
        kernel,
        doc,
        ir_name=name,
        param="values",
        trec_style=False,
        options=tuple(options),
        defaults=tuple(options.values()),
        **extra,
    )


def _graded(k: bool = False, **first: float) -> dict[str, float]:
    """A cwl_eval measure's options: its own, then the grades scaled to [0, 1]."""
    return {**({"cutoff": _REQUIRED} if k else {}), **first, "min_rel": 0.0, "max_rel": _REQUIRED}


_CWL = (
    "Gains as cwl_eval gives them: max(grade, 0) clipped to [min_rel, max_rel] and scaled to [0, 1];\n"
    "weights normalised over 1,000 ranks (cwl_eval's depth)."
)

_REGISTRY += (
    _keyword(
        "RBP",
        "Rank-biased precision",
        user_models.rbp,
        "RBP (Moffat and Zobel 2008) = sum over relevant ranks i of (1 - p) * p^(i-1), persistence p\n"
        "(default 0.8), relevant meaning rel >= l (`RBP(p=0.9,rel=2)`); as cwl_eval computes it, over\n"
        "ranks 1 to 1000 with weights p^(i-1) / sum(p^(j-1), j <= 1000).\n\n"
        ">>> example('RBP(p=0.5)')\n0.625",
        options={"p": 0.8},
        uses_rel_level=True,
    ),
    _keyword(
        "RBP_residual",
        "Rank-biased precision residual",
        user_models.rbp_residual,
        "RBP's residual: how much RBP could still rise, the weight of the unjudged ranks and of the ranks\n"
        "past the end of the run (down to 1000), as cwl_eval -r reports it; RBP_residual(p=0.9) goes with\n"
        "RBP(p=0.9); under -c a query the run lacks has residual 1.\n\n"
        ">>> example('RBP_residual(p=0.5)')\n0.125",
        options={"p": 0.8},
        direction="lower",
        uses_rel_level=True,
        missing=1.0,
    ),
    _keyword(
        "ERR",
        "Expected reciprocal rank",
        user_models.err,
        "ERR@k (Chapelle et al. 2009), as gdeval computes it: sum over ranks i <= k of R(i) / i *\n"
        "prod(1 - R(j), j < i), R = (2^grade - 1) / 16 (gdeval's grades run to 4; higher ones count as 4,\n"
        "negative ones as 0). Without @k, the whole ranking.\n\n"
        ">>> example('ERR@2')\n0.1875",
        options={"cutoff": float("inf")},
    ),
    _keyword(
        "Compat",
        "Compatibility",
        compatibility.compat,
        "Compatibility (Clarke, Vtyurina and Smucker 2020): the rank-biased overlap, persistence p\n"
        "(default 0.95), of the ranking with the ideal ranking of the documents of grade > 0, divided by\n"
        "the ideal's own when normalize (the default; `Compat(p=0.8,normalize=false)`).\n\n"
        ">>> example('Compat(p=0.8)')\n0.3834",
        options={"p": 0.95, "normalize": 1.0},
    ),
    _keyword(
        "SDCG",
        "Scaled DCG at k",
        user_models.sdcg,
        "SDCG@k (cwl_eval): DCG@k divided by the DCG@k of k documents of the highest grade, as if the\n"
        "collection held that many: sum over i <= k of gain(i) / log2(i + 1), over sum of 1 / log2(i + 1).\n"
        + _CWL
        + "\n\n>>> example('SDCG(max_rel=3)@2')\n0.4088",
        options=_graded(k=True),
        example_name="SDCG(max_rel=3)@10",
    ),
    _keyword(
        "NERR8",
        "Nearly expected reciprocal rank (eq. 8) at k",
        user_models.nerr8,
        "NERR8@k (Azzopardi, Moffat and Mackenzie 2021, eq. 8): a C/W/L user who goes on after rank i < k\n"
        "with probability 1 - gain(i) and stops at k.\n"
        + _CWL
        + "\n\n>>> example('NERR8(max_rel=3)@2')\n0.5",
        options=_graded(k=True),
        example_name="NERR8(max_rel=3)@10",
    ),
    _keyword(
        "NERR9",
        "Nearly expected reciprocal rank (eq. 9) at k",
        user_models.nerr9,
        "NERR9@k (eq. 9): goes on after rank i < k with probability i / (i + 1) * (1 - gain(i)).\n"
        + _CWL
        + "\n\n>>> example('NERR9(max_rel=3)@2')\n0.5714",
        options=_graded(k=True),
        example_name="NERR9(max_rel=3)@10",
    ),
    _keyword(
        "NERR10",
        "Nearly expected reciprocal rank (eq. 10)",
        user_models.nerr10,
        "NERR10 (eq. 10): goes on with probability p * (1 - gain(i)), p default 0.9.\n"
        + _CWL
        + "\n\n>>> example('NERR10(max_rel=3)')\n0.2372",
        options=_graded(p=0.9),
        example_name="NERR10(max_rel=3)",
    ),
    _keyword(
        "NERR11",
        "Nearly expected reciprocal rank (eq. 12)",
        user_models.nerr11,
        "NERR11 (eq. 12): goes on with probability ((i + 2T - 1) / (i + 2T))^2 * (1 - gain(i)), T default 1.\n"
        + _CWL
        + "\n\n>>> example('NERR11(max_rel=3)')\n0.4865",
        options=_graded(T=1.0),
        example_name="NERR11(max_rel=3)",
    ),
    _keyword(
        "INST",
        "INST",
        user_models.inst,
        "INST (Moffat et al. 2015): goes on with probability ((i + T + T_i - 1) / (i + T + T_i))^2, T_i = T\n"
        "- the gain down to rank i, T (the gain wanted) default 1.\n"
        + _CWL
        + "\n\n>>> example('INST(max_rel=3)')\n0.3802",
        options=_graded(T=1.0),
        example_name="INST(max_rel=3)",
    ),
    _keyword(
        "INSQ",
        "INSQ",
        user_models.insq,
        "INSQ (Moffat et al. 2012): goes on with probability ((i + 2T - 1) / (i + 2T))^2, T default 1.\n"
        + _CWL
        + "\n\n>>> example('INSQ(max_rel=3)')\n0.2912",
        options=_graded(T=1.0),
        example_name="INSQ(max_rel=3)",
    ),
    _keyword(
        "BPM",
        "Bejeweled player model at k",
        user_models.bpm,
        "BPM@k, static (Zhang et al. 2017): reads on while the gain so far is below T (default 1) and\n"
        "fewer than k documents were read; the mean gain of those read.\n"
        + _CWL
        + "\n\n>>> example('BPM(max_rel=3)@2')\n0.3333",
        options=_graded(k=True, T=1.0),
        example_name="BPM(max_rel=3)@10",
    ),
    _keyword(
        "Accuracy",
        "Accuracy (relevant above non-relevant)",
        pairwise.accuracy,
        "Accuracy@k (ir-measures' accuracy provider): the share of pairs of a relevant and a non-relevant\n"
        "document among the first k retrieved that the ranking orders relevant first, 1 - sum over relevant\n"
        "d of |non-relevant above d| / (r * m); unjudged documents have grade 0. Undefined (NaN, left out of\n"
        "the mean) for a query without a relevant or without a non-relevant document there.\n\n"
        ">>> example('Accuracy')  # d1 above d2 and d4; d3 above d4, not d2\n0.75",
        options={"cutoff": float("inf")},
        uses_rel_level=True,
        aggregate="defined",
    ),
)

MEASURES: dict[str, Measure] = {m.name: m for m in _REGISTRY}
#: Every trec_eval-style name (names, printed names and aliases) -> its measure.
TREC_NAMES: dict[str, Measure] = {
    name: m for m in _REGISTRY if m.trec_style for name in dict.fromkeys((m.name, m.trec_name, *m.aliases))
}
#: Each measure's place in trec_eval's output order.
ORDER: dict[str, int] = {m.name: i for i, m in enumerate(_REGISTRY)}

#: trec_eval's measure sets (`-m official`, `-m all_trec`, `-m set`).
NICKNAMES: dict[str, tuple[str, ...]] = {
    "official": (
        "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref",
        "recip_rank", "iprec_at_recall", "P",
    ),
    # trec_eval 9.0.8 names yaap in no set.
    "all_trec": tuple(
        m.trec_name for m in _REGISTRY if m.trec_eval and m.rel_format == "qrels" and m.name != "yaap"
    ),
    "qrels_jg": ("runid", "num_q", *(m.name for m in _JUDGMENT_GROUP_MEASURES[:3])),
    "all_prefs": ("runid", "num_q", *(m.name for m in _PREFERENCE_MEASURES)),
    "prefs": ("runid", "num_q", *(m.name for m in _PREFERENCE_MEASURES[:6])),
    "set": ("runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P", "set_recall",
            "set_relative_P", "set_map", "set_F"),
}  # fmt: skip


def example(name: str) -> float | str:
    """Evaluate one measure on the module's example (for the doctests), rounded to 4 decimals; a
    preference measure on `prefs_example`'s."""
    from evalcore.retrieval.data import Qrels, Run
    from evalcore.retrieval.evaluation import evaluate
    from evalcore.retrieval.names import parse_measure

    rel_format = parse_measure(name)[0].measure.rel_format
    if rel_format == "prefs":
        return prefs_example(name)
    if rel_format == "qrels_jg":
        return jg_example(name)

    qrels = Qrels.from_dict({"q1": {"d1": 2, "d2": 0, "d3": 1, "d5": 3}})
    run = replace(Run.from_dict({"q1": {"d1": 0.9, "d2": 0.8, "d3": 0.7, "d4": 0.6}}), run_id="example")
    result = evaluate(qrels, run, [name])
    if result.text:
        return str(next(iter(result.text.values()))[0])
    if not result.aggregate:  # runid
        return result.run_id or ""
    return round(next(iter(result.aggregate.values())), 4)


def prefs_example(name: str) -> float:
    """One preference measure on a small example, rounded to 4 decimals: one query, one JG ranking
    d1 > d2 > d3 (levels 2, 1, 0), a run retrieving d2, d1 and d4 (d3 is not retrieved).

    >>> prefs_example("prefs_simp")  # d1 > d3 and d2 > d3 fulfilled, d1 > d2 not
    0.6667
    """
    from evalcore.retrieval.data import Run
    from evalcore.retrieval.evaluation import evaluate_prefs
    from evalcore.retrieval.preferences import Prefs

    judged = Prefs.from_rows(["q1"] * 3, ["u"] * 3, ["s"] * 3, ["d1", "d2", "d3"], [2.0, 1.0, 0.0])
    run = Run.from_dict({"q1": {"d2": 0.9, "d1": 0.8, "d4": 0.7}})
    return round(next(iter(evaluate_prefs(judged, run, [name]).aggregate.values())), 4)


def jg_example(name: str) -> float:
    """One judgment-group measure on a small example, rounded to 4 decimals: one query judged by two
    users, u1 finding d1 relevant and u2 d1 and d3; the run ranks d1, d2, d3.

    >>> jg_example("map_avgjg")  # u1: AP 1, u2: (1 + 2/3) / 2
    0.9167
    """
    from evalcore.retrieval.data import Run
    from evalcore.retrieval.evaluation import evaluate_jg
    from evalcore.retrieval.judgment_groups import QrelsJG

    judged = QrelsJG.from_rows(["q1"] * 4, ["u1", "u1", "u2", "u2"], ["d1", "d3", "d1", "d3"], [1, 0, 1, 1])
    run = Run.from_dict({"q1": {"d1": 0.9, "d2": 0.8, "d3": 0.7}})
    return round(next(iter(evaluate_jg(judged, run, [name]).aggregate.values())), 4)


#: The registry's view of the retrieval family (`evalcore.metrics.metric_registry`).
METRIC_SPECS: tuple[Measure, ...] = _REGISTRY
