"""Preference judgments and trec_eval 9.0.8's preference measures (`-R prefs`, `-R qrels_prefs`).

A preference file holds `qid jg jsg docno rel_level` lines: within a judgment sub-group (JSG) a document
with a higher rel_level is preferred to one with a lower level. A judgment group (JG) with one JSG
prefers every higher equivalence class to every lower one; a JG with several JSGs is a partial order,
closed under transitivity (A > B in one JSG and B > C in another give A > C). A rel_level of 0 marks a
non-relevant document. `-R qrels_prefs` reads a qrels file the same way: the iter column is the JG,
every line is in JSG "0".

Per query, every document of the preferences gets a docid rank: 0 .. J-1 for the J judged documents
the run retrieved (in the run's order: score descending, then document id ascending, as trec_eval's
preference code sorts), then the unretrieved judged documents in document id order. A preference
A > B is *fulfilled* when A's docid rank is below B's; it is *retrieved* when both are retrieved,
*implied* when one is, *not occurring* when neither is. The measures count those per JG:

- prefs_num_prefs_poss / _ful / _ful_ret: counts of preferences possible, fulfilled, fulfilled with
  both retrieved;
- prefs_simp (all preferences), _ret (both retrieved), _imp (at least one retrieved): fulfilled /
  possible;
- prefs_pair, _ret, _imp: the mean over document pairs of the share of the pair's preferences (over
  all JGs) that the ranking fulfils;
- prefs_avgjg, _ret, _imp: fulfilled / possible per JG, averaged over JGs;
- prefs_avgjg_Rnonrel, _ret: as prefs_avgjg with each JG's non-relevant documents cut or padded to
  R, its number of relevant ones (trec_eval's recount, quirks included).

Everything is counted with numpy over the query's preference pairs; only the transitive closure of a
partial-order JG and the Rnonrel recount of a JG loop, once per JG, never per pair.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from evalcore.errors import EvalCoreError
from evalcore.retrieval.data import Qrels, Run
from evalcore.retrieval.ranking import _evaluated_queries, _join, _ranks


class PreferenceError(EvalCoreError, ValueError):
    """Inconsistent preferences within one judgment group (trec_eval stops on them too)."""


@dataclass(frozen=True, eq=False)
class Prefs:
    """Preference judgments, one row per line: query code, JG, JSG, document id, rel_level."""

    qids: np.ndarray  # sorted query ids
    qid_codes: np.ndarray
    jgs: np.ndarray  # object array of str
    jsgs: np.ndarray
    docnos: np.ndarray
    rel_levels: np.ndarray  # float64

    @classmethod
    def from_rows(
        cls, qids: list[str], jgs: list[str], jsgs: list[str], docnos: list[str], rel_levels: list[float]
    ) -> Prefs:
        vocab, codes = np.unique(np.asarray(qids, dtype=object), return_inverse=True)
        return cls(
            vocab.astype(object),
            codes.astype(np.int64).reshape(-1),
            np.asarray(jgs, dtype=object),
            np.asarray(jsgs, dtype=object),
            np.asarray(docnos, dtype=object),
            np.asarray(rel_levels, dtype=np.float64),
        )

    def __len__(self) -> int:
        return len(self.qid_codes)


def _codes(values: np.ndarray) -> np.ndarray:
    """Each string's place in the sorted distinct values (strcmp order for UTF-8 text)."""
    if not len(values):
        return np.zeros(0, dtype=np.int64)
    return np.unique(values, return_inverse=True)[1].astype(np.int64).reshape(-1)


def _prefs_ranks(prefs: Prefs, run: Run, max_docs: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(evaluated qids, per prefs row its evaluated query or -1, per row its rank in the run or 0).

    The rank puts tied scores in document id ascending order, as trec_eval's form_prefs_counts sorts;
    a document past `max_docs` (trec_eval -M) counts as not retrieved.
    """
    doc_codes = _codes(prefs.docnos)
    _, first, row_pair = np.unique(
        prefs.qid_codes * (len(prefs) + 1) + doc_codes, return_index=True, return_inverse=True
    )
    qrels = Qrels.from_codes(
        prefs.qids, prefs.qid_codes[first], list(prefs.docnos[first]), np.zeros(len(first))
    )
    qids, run_to_eval, qrels_to_eval = _evaluated_queries(qrels, run)
    run_rows, qrels_rows = _join(qrels, run, run_to_eval, qrels_to_eval)
    rank = np.zeros(len(qrels), dtype=np.int64)
    if len(run_rows):
        descending = _ranks(run, run_rows)
        layout = run.layout
        begin, end = layout.tie_groups(run_rows)
        start = begin - layout.query_start[run.qid_codes[run_rows]] + 1
        rank[qrels_rows] = 2 * start + (end - begin - 1) - descending
    if max_docs is not None:
        rank[rank > max_docs] = 0
    # The pairs are sorted and distinct, so Qrels keeps them in order: pair i is qrels row i.
    row_rank = rank[row_pair.reshape(-1)]
    return qids, qrels_to_eval[prefs.qid_codes], row_rank


@dataclass(eq=False)
class PrefsContext:
    """What the preference kernels need, per evaluated query: one row per preference line with its
    docid rank, and the counts of each JG."""

    qids: np.ndarray
    run_id: str | None
    num_judged_ret: np.ndarray  # per query
    # per JG (global index), with its query
    jg_query: np.ndarray
    counts: dict[
        str, np.ndarray
    ]  # ful_ret, poss_ret, ful_imp, poss_imp, notoccur, rel, rel_ret, nonrel, nonrel_ret
    rnonrel: np.ndarray  # per JG: prefs_avgjg_Rnonrel's fulfilled / possible (nan as trec_eval's 0/0)
    rnonrel_ret: np.ndarray
    pair_query: np.ndarray  # per unordered document pair with a preference
    pair_kind: np.ndarray  # 0 both retrieved, 1 one retrieved, 2 neither
    pair_share: np.ndarray  # preferences fulfilled by the ranking / preferences on the pair
    _cache: dict[object, object] = field(default_factory=dict, repr=False)

    @property
    def num_queries(self) -> int:
        return len(self.qids)

    def per_query(self, values: np.ndarray, where: np.ndarray | None = None) -> np.ndarray:
        query = self.jg_query if where is None else where
        return np.bincount(query, weights=values, minlength=self.num_queries).astype(np.float64)

    @cached_property
    def num_jgs(self) -> np.ndarray:
        return np.bincount(self.jg_query, minlength=self.num_queries).astype(np.float64)


def _pairs_within(group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every ordered pair (i, j), i != j, of rows in the same group (rows sorted by group)."""
    if not len(group):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    sizes = np.diff(np.r_[starts, len(group)])
    size = sizes[np.searchsorted(starts, np.arange(len(group)), side="right") - 1]
    start = starts[np.searchsorted(starts, np.arange(len(group)), side="right") - 1]
    left = np.repeat(np.arange(len(group)), size)
    offset = np.arange(len(left)) - np.repeat(np.cumsum(size) - size, size)
    right = np.repeat(start, size) + offset
    keep = left != right
    return left[keep], right[keep]


def build_prefs_context(prefs: Prefs, run: Run, *, max_docs: int | None = None) -> PrefsContext:
    """Place every preference's documents in the run and count what each JG's preferences became."""
    qids, query, rank = _prefs_ranks(prefs, run, max_docs)
    keep = query >= 0
    query, rank = query[keep], rank[keep]
    jg, jsg = _codes(prefs.jgs[keep]), _codes(prefs.jsgs[keep])
    doc, level = _codes(prefs.docnos[keep]), prefs.rel_levels[keep]
    docnos = prefs.docnos[keep]
    nq = len(qids)
    # Docid ranks: retrieved judged documents in run order, then the others by document id.
    doc_key = query * (int(doc.max(initial=0)) + 1) + doc
    udoc, doc_of_row = np.unique(doc_key, return_inverse=True)
    doc_of_row = doc_of_row.reshape(-1)
    first_row = np.unique(doc_of_row, return_index=True)[1]
    d_query, d_rank, d_doc = query[first_row], rank[first_row], doc[first_row]
    retrieved = d_rank > 0
    order = np.lexsort((d_doc, np.where(retrieved, d_rank, 0), ~retrieved, d_query))
    d_first = np.searchsorted(d_query[order], np.arange(nq))
    docid = np.empty(len(udoc), dtype=np.int64)
    docid[order] = np.arange(len(udoc)) - d_first[d_query[order]]
    njr = np.bincount(d_query[retrieved], minlength=nq)
    r = docid[doc_of_row]
    # Rows in trec_eval's order: query, JG, JSG, rel_level descending, docid rank.
    jg_key = query * (int(jg.max(initial=0)) + 1) + jg
    order = np.lexsort((r, -level, jsg, jg_key))
    query, jg_key, jsg, level, r, docnos = (
        query[order],
        jg_key[order],
        jsg[order],
        level[order],
        r[order],
        docnos[order],
    )
    ujg, jg_index = np.unique(jg_key, return_inverse=True)
    jg_index = jg_index.reshape(-1)
    jg_query = query[np.unique(jg_index, return_index=True)[1]]
    n_jg = len(ujg)
    jsg_count = np.bincount(
        jg_index[np.r_[True, (jg_index[1:] != jg_index[:-1]) | (jsg[1:] != jsg[:-1])]]
        if len(jg_index)
        else [],
        minlength=n_jg,
    )
    partial = jsg_count > 1
    row_njr = njr[query]

    # Direct preferences within each JSG: rows i, j with level_i > level_j.
    group = jg_index * (int(jsg.max(initial=0)) + 1) + jsg
    left, right = _pairs_within(group)
    prefer = level[left] > level[right]
    left, right = left[prefer], right[prefer]
    same_doc = r[left] == r[right]
    ec_pair = ~partial[jg_index[left]]
    if np.any(same_doc & ec_pair):
        bad = left[same_doc & ec_pair][0]
        raise PreferenceError(f"document {docnos[bad]!r} has two rel_levels in one judgment sub-group")
    pa, pb, pjg = r[left[ec_pair]], r[right[ec_pair]], jg_index[left[ec_pair]]
    rel_doc_jg, rel_doc, rel_doc_level = _partial_order_docs(jg_index, r, level, partial, docnos)
    closure = _closures(
        jg_index[left[~ec_pair]], r[left[~ec_pair]], r[right[~ec_pair]], partial, rel_doc_jg, rel_doc
    )
    ca, cb, cjg = closure
    pa, pb, pjg = np.r_[pa, ca], np.r_[pb, cb], np.r_[pjg, cjg]
    p_njr = njr[jg_query[pjg]]
    fulfilled = pa < pb
    kind = np.where(
        fulfilled,
        np.where(pb < p_njr, 0, np.where(pa < p_njr, 1, 2)),
        np.where(pa < p_njr, 3, np.where(pb < p_njr, 4, 2)),
    )

    def per_jg(mask: np.ndarray, where: np.ndarray = pjg) -> np.ndarray:
        return np.bincount(where[mask], minlength=n_jg).astype(np.int64)

    counts = {
        "ful_ret": per_jg(kind == 0),
        "ful_imp": per_jg(kind == 1),
        "notoccur": per_jg(kind == 2),
    }
    counts["poss_ret"] = per_jg(kind == 3) + counts["ful_ret"]
    counts["poss_imp"] = per_jg(kind == 4) + counts["ful_imp"]
    # Relevant and non-relevant documents of each JG: every line of a complete JG, each document of a
    # partial one once (with its last rel_level).
    ec_row = ~partial[jg_index]
    ret_row = r < row_njr
    counts["rel"] = per_jg(ec_row & (level > 0), jg_index) + per_jg(rel_doc_level > 0, rel_doc_jg)
    counts["nonrel"] = per_jg(ec_row & (level <= 0), jg_index) + per_jg(rel_doc_level == 0, rel_doc_jg)
    doc_ret = rel_doc < njr[jg_query[rel_doc_jg]]
    counts["rel_ret"] = per_jg(ec_row & (level > 0) & ret_row, jg_index) + per_jg(
        (rel_doc_level > 0) & doc_ret, rel_doc_jg
    )
    counts["nonrel_ret"] = per_jg(ec_row & (level <= 0) & ret_row, jg_index) + per_jg(
        (rel_doc_level == 0) & doc_ret, rel_doc_jg
    )
    rnonrel, rnonrel_ret = _rnonrel(
        counts, partial, jg_index, level, r, njr[jg_query], (pa, pb, pjg), rel_doc_jg, rel_doc, rel_doc_level
    )
    pair_query, pair_kind, pair_share = _pair_shares(pa, pb, jg_query[pjg], njr)
    return PrefsContext(
        qids, run.run_id, njr, jg_query, counts, rnonrel, rnonrel_ret, pair_query, pair_kind, pair_share
    )


def _partial_order_docs(
    jg_index: np.ndarray, r: np.ndarray, level: np.ndarray, partial: np.ndarray, docnos: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The documents of the partial-order JGs, each once with its last rel_level (trec_eval's rel_array).

    A document that is non-relevant (0) in one JSG and relevant in another is an inconsistency.
    """
    rows = np.flatnonzero(partial[jg_index])
    key = jg_index[rows] * (int(r.max(initial=0)) + 1) + r[rows]
    if len(rows):
        mixed = np.zeros(len(rows), dtype=bool)
        order = np.argsort(key, kind="stable")
        k, lv = key[order], level[rows][order]
        starts = np.r_[True, k[1:] != k[:-1]]
        group = np.cumsum(starts) - 1
        has_zero = np.bincount(group, weights=(lv == 0), minlength=group[-1] + 1) > 0
        has_pos = np.bincount(group, weights=(lv > 0), minlength=group[-1] + 1) > 0
        mixed = has_zero & has_pos
        if mixed.any():
            bad = rows[order][np.flatnonzero(starts)[np.flatnonzero(mixed)[0]]]
            raise PreferenceError(f"document {docnos[bad]!r} is both non-relevant (0) and relevant in one JG")
    # The last row of each (JG, document) in trec_eval's order carries the document's level.
    last = np.unique(key[::-1], return_index=True)[1]
    last_rows = rows[::-1][last] if len(rows) else rows
    return jg_index[last_rows], r[last_rows], level[last_rows]


def _closures(
    jg: np.ndarray, a: np.ndarray, b: np.ndarray, partial: np.ndarray, doc_jg: np.ndarray, doc: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The transitive closure of each partial-order JG's preferences: (a, b, JG) of every a > b.

    A boolean matrix per JG over its own documents, squared until it stops changing (a loop per JG).
    """
    out_a, out_b, out_jg = [], [], []
    for g in np.flatnonzero(partial):
        docs = np.unique(doc[doc_jg == g])
        sel = jg == g
        m = np.zeros((len(docs), len(docs)), dtype=bool)
        m[np.searchsorted(docs, a[sel]), np.searchsorted(docs, b[sel])] = True
        reach = m | np.eye(len(docs), dtype=bool)
        while True:
            grown = (reach.astype(np.uint8) @ reach.astype(np.uint8)) > 0
            if np.array_equal(grown, reach):
                break
            reach = grown
        np.fill_diagonal(reach, False)
        if np.any(reach & reach.T):
            raise PreferenceError("inconsistent preferences within one judgment group (A > B and B > A)")
        i, j = np.nonzero(reach)
        out_a.append(docs[i])
        out_b.append(docs[j])
        out_jg.append(np.full(len(i), g, dtype=np.int64))
    if not out_a:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    return np.concatenate(out_a), np.concatenate(out_b), np.concatenate(out_jg)


def _rnonrel(
    counts: dict[str, np.ndarray],
    partial: np.ndarray,
    jg_index: np.ndarray,
    level: np.ndarray,
    r: np.ndarray,
    jg_njr: np.ndarray,
    prefs: tuple[np.ndarray, np.ndarray, np.ndarray],
    doc_jg: np.ndarray,
    doc: np.ndarray,
    doc_level: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Per JG, prefs_avgjg_Rnonrel's and prefs_avgjg_Rnonrel_ret's fulfilled / possible, as trec_eval's
    m_prefs_avgjg_Rnonrel(_ret).c count them (a JG with no preference left gives nan, 0 / 0)."""
    c = {k: v.astype(np.float64) for k, v in counts.items()}
    big_r, big_n = c["rel"], c["nonrel"]
    with np.errstate(divide="ignore", invalid="ignore"):
        full = (c["ful_ret"] + c["ful_imp"] + c["rel_ret"] * (big_r - big_n)) / (
            c["poss_ret"] + c["poss_imp"] + c["notoccur"] + big_r * (big_r - big_n)
        )
        r_ret, n_ret = c["rel_ret"], c["nonrel_ret"]
        full_ret = (c["ful_ret"] + r_ret * (r_ret - n_ret)) / (c["poss_ret"] + big_r * (r_ret - n_ret))
    pa, pb, pjg = prefs
    for g in np.flatnonzero(big_r < big_n).tolist():
        full[g] = _recount(g, bool(partial[g]), jg_index, level, r, int(jg_njr[g]), pa, pb, pjg, doc_jg, doc, doc_level,
                           int(big_r[g]), retrieved_only=False)  # fmt: skip
    for g in np.flatnonzero(r_ret < n_ret).tolist():
        full_ret[g] = _recount(g, bool(partial[g]), jg_index, level, r, int(jg_njr[g]), pa, pb, pjg, doc_jg, doc,
                               doc_level, int(big_r[g]), retrieved_only=True, keep=int(r_ret[g]))  # fmt: skip
    return full, full_ret


def _recount(
    g: int,
    is_partial: bool,
    jg_index: np.ndarray,
    level: np.ndarray,
    r: np.ndarray,
    njr: int,
    pa: np.ndarray,
    pb: np.ndarray,
    pjg: np.ndarray,
    doc_jg: np.ndarray,
    doc: np.ndarray,
    doc_level: np.ndarray,
    num_rel: int,
    *,
    retrieved_only: bool,
    keep: int | None = None,
) -> float:
    """One JG's recount with only its first R non-relevant documents (trec_eval's `recalculate`)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if not is_partial:
            rows = np.flatnonzero(jg_index == g)
            lv, rk = level[rows], r[rows]
            last = lv == lv[-1]  # the last equivalence class (the lowest level)
            sel = pjg == g
            a, b = pa[sel], pb[sel]
            last_docs = rk[last]
            in_last = np.isin(b, last_docs)  # pairs whose lower document is in the last class
            a, b = a[~in_last], b[~in_last]
            size = num_rel if keep is None else keep
            chosen = last_docs[:size]
            if retrieved_only:
                both = (a < njr) & (b < njr)
                a, b = a[both], b[both]
                ful = int(np.count_nonzero(a < b))
                poss = len(a)
                ret = rk[rk < njr]
                chosen = chosen[chosen < njr]
                grid_ful = np.count_nonzero(ret[:, None] < chosen[None, :])
                ful += int(grid_ful)
                poss += len(ret) * len(chosen)
            else:
                ful = int(np.count_nonzero((a < b) & (a < njr)))
                poss = len(a)
                grid_ful = np.count_nonzero((rk[:, None] < chosen[None, :]) & (rk[:, None] < njr))
                ful += int(grid_ful)
                poss += len(rk) * len(chosen)
            return float(np.float64(ful) / np.float64(poss))
        docs, levels = doc[doc_jg == g], doc_level[doc_jg == g]
        order = np.argsort(docs)
        docs, levels = docs[order], levels[order]
        zero = levels == 0
        limit_docs = docs[docs < njr] if retrieved_only else docs
        limit_zero = zero[docs < njr] if retrieved_only else zero
        seen = np.cumsum(limit_zero)
        hit = np.flatnonzero(limit_zero & (seen == num_rel + 1))
        first_discarded = int(limit_docs[hit[0]]) if len(hit) else (njr if retrieved_only else 1 << 62)
        discarded = set(docs[zero & (docs >= first_discarded)].tolist())
        sel = pjg == g
        a, b = pa[sel], pb[sel]
        drop = np.isin(a, list(discarded)) | np.isin(b, list(discarded))
        a, b = a[~drop], b[~drop]
        if retrieved_only:
            both = (a < njr) & (b < njr)
            a, b = a[both], b[both]
        ful = int(np.count_nonzero((a < njr) & (b > a)))
        return float(np.float64(ful) / np.float64(len(a)))


def _pair_shares(
    pa: np.ndarray, pb: np.ndarray, pquery: np.ndarray, njr: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per unordered document pair with any preference: its query, whether both, one or neither
    document was retrieved, and the share of its preferences (over all JGs) the ranking fulfils."""
    if not len(pa):
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0)
    width = int(max(pa.max(), pb.max())) + 1
    lo, hi = np.minimum(pa, pb), np.maximum(pa, pb)
    key = (pquery.astype(np.int64) * width + lo) * width + hi
    ukey, inverse = np.unique(key, return_inverse=True)
    inverse = inverse.reshape(-1)
    forward = np.bincount(inverse, weights=(pa < pb), minlength=len(ukey))
    total = np.bincount(inverse, minlength=len(ukey)).astype(np.float64)
    query = ukey // (width * width)
    lo_u, hi_u = (ukey // width) % width, ukey % width
    q_njr = njr[query]
    kind = np.where(hi_u < q_njr, 0, np.where(lo_u < q_njr, 1, 2))
    return query, kind, forward / total


# --- kernels -------------------------------------------------------------------------------------


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.zeros(len(num), dtype=np.float64)
    np.divide(num, den, out=out, where=den != 0)
    return out


def _sum(ctx: PrefsContext, *names: str) -> np.ndarray:
    total = np.zeros(len(ctx.jg_query), dtype=np.float64)
    for name in names:
        total += ctx.counts[name]
    return ctx.per_query(total)


def num_prefs_poss(ctx: PrefsContext, param: object, level: int) -> np.ndarray:
    return _sum(ctx, "poss_ret", "poss_imp", "notoccur")


def num_prefs_ful(ctx: PrefsContext, param: object, level: int) -> np.ndarray:
    return _sum(ctx, "ful_ret", "ful_imp")


def num_prefs_ful_ret(ctx: PrefsContext, param: object, level: int) -> np.ndarray:
    return _sum(ctx, "ful_ret")


def simp(ctx: PrefsContext, param: object, level: int) -> np.ndarray:
    return _ratio(_sum(ctx, "ful_ret", "ful_imp"), _sum(ctx, "poss_ret", "poss_imp", "notoccur"))


def simp_ret(ctx: PrefsContext, param: object, level: int) -> np.ndarray:
    return _ratio(_sum(ctx, "ful_ret"), _sum(ctx, "poss_ret"))


def simp_imp(ctx: PrefsContext, param: object, level: int) -> np.ndarray:
    return _ratio(_sum(ctx, "ful_ret", "ful_imp"), _sum(ctx, "poss_ret", "poss_imp"))


def _avgjg(ctx: PrefsContext, ful: np.ndarray, poss: np.ndarray) -> np.ndarray:
    total = ctx.per_query(_ratio(ful.astype(np.float64), poss.astype(np.float64)))
    return np.where(total > 0, _ratio(total, ctx.num_jgs), 0.0)


def avgjg(ctx: PrefsContext, param: object, level: int) -> np.ndarray:
    c = ctx.counts
    return _avgjg(ctx, c["ful_ret"] + c["ful_imp"], c["poss_ret"] + c["poss_imp"] + c["notoccur"])


def avgjg_ret(ctx: PrefsContext, param: object, level: int) -> np.ndarray:
    return _avgjg(ctx, ctx.counts["ful_ret"], ctx.counts["poss_ret"])


def avgjg_imp(ctx: PrefsContext, param: object, level: int) -> np.ndarray:
    c = ctx.counts
    return _avgjg(ctx, c["ful_ret"] + c["ful_imp"], c["poss_ret"] + c["poss_imp"])


def _mean_over_jgs(ctx: PrefsContext, values: np.ndarray) -> np.ndarray:
    # A JG counted 0 / 0 makes trec_eval's sum nan, and the query's value then stays 0.
    total = ctx.per_query(values)
    with np.errstate(invalid="ignore"):
        return np.where(total > 0, _ratio(np.nan_to_num(total), ctx.num_jgs), 0.0)


def avgjg_rnonrel(ctx: PrefsContext, param: object, level: int) -> np.ndarray:
    return _mean_over_jgs(ctx, ctx.rnonrel)


def avgjg_rnonrel_ret(ctx: PrefsContext, param: object, level: int) -> np.ndarray:
    return _mean_over_jgs(ctx, ctx.rnonrel_ret)


def _pairs(ctx: PrefsContext, kinds: tuple[int, ...]) -> np.ndarray:
    counted = np.isin(ctx.pair_kind, kinds)
    fulfilled = np.where(ctx.pair_kind < 2, ctx.pair_share, 0.0)
    total = np.bincount(ctx.pair_query[counted], weights=fulfilled[counted], minlength=ctx.num_queries)
    number = np.bincount(ctx.pair_query[counted], minlength=ctx.num_queries).astype(np.float64)
    return _ratio(total, number)


def pair(ctx: PrefsContext, param: object, level: int) -> np.ndarray:
    return _pairs(ctx, (0, 1, 2))


def pair_ret(ctx: PrefsContext, param: object, level: int) -> np.ndarray:
    return _pairs(ctx, (0,))


def pair_imp(ctx: PrefsContext, param: object, level: int) -> np.ndarray:
    return _pairs(ctx, (0, 1))


__all__ = ["PreferenceError", "Prefs", "PrefsContext", "build_prefs_context"]
