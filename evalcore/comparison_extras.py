"""What a comparison of runs adds to its paired tests, as JSON-ready data: how different each pair of runs'
lists are (`evalcore.overlap`), and the statistics of many systems (`evalcore.stats`: two-way ANOVA,
Tukey's HSD, discriminative power) over the runs' per-query scores of one measure. Framework-free; the
comparison job stores what these return, and its page, CSV and API read it back.

>>> import numpy as np
>>> scores = np.array([[0.5, 0.6, 0.3, 0.8], [0.4, 0.5, 0.3, 0.6], [0.2, 0.4, 0.1, 0.5]])
>>> stats = many_systems_json(scores, [1, 2, 3], alpha=0.05, n_resamples=200)
>>> round(stats["anova"]["systems"]["f"], 2), round(stats["anova"]["residual_variance"], 5)
(28.5, 0.00222)
>>> [(row["run_a_id"], row["run_b_id"]) for row in stats["tukey"]["pairs"]]
[(1, 2), (1, 3), (2, 3)]
>>> stats["discriminative_power"]["pairs"]
3
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from evalcore.errors import EvalCoreError
from evalcore.jsonable import json_number, json_numbers
from evalcore.overlap import MEASURES as OVERLAP_FIGURES
from evalcore.overlap import OverlapParams, run_overlap
from evalcore.retrieval import Run
from evalcore.stats import discriminative_power, paired_effect_size, tukey_hsd, two_way_anova

__all__ = ["OVERLAP_FIGURES", "effect_size_json", "many_systems_json", "overlap_json"]

#: Discriminative power's bootstrap test (Sakai 2006 used B = 1000), seeded so a re-run gives the same.
DISCRIMINATIVE_RESAMPLES = 1000
DISCRIMINATIVE_SEED = 0


def effect_size_json(a: np.ndarray, b: np.ndarray) -> dict[str, float | None]:
    """Cohen's d_z and Hedges' g of a - b; None where undefined (fewer than three queries, no spread)."""
    try:
        size = paired_effect_size(a, b)
    except EvalCoreError:
        return {"cohens_dz": None, "hedges_g": None}
    return {"cohens_dz": json_number(size.cohens_dz), "hedges_g": json_number(size.hedges_g)}


def many_systems_json(
    scores: np.ndarray,
    run_ids: Sequence[int],
    *,
    alpha: float,
    confidence: float = 0.95,
    n_resamples: int = DISCRIMINATIVE_RESAMPLES,
    seed: int = DISCRIMINATIVE_SEED,
) -> dict[str, Any]:
    """The (runs x queries) matrix of one measure's scores summed up for many systems.

    `{"anova": ..., "tukey": ..., "discriminative_power": ..., "notes": [...]}`: the ANOVA and Tukey's HSD
    (randomised-block design, topics as blocks) with three or more runs, else None; discriminative
    power (Sakai's bootstrap test at `alpha`) with two or more. A statistic that cannot be computed (a
    single query, an undefined score) is None, and `notes` says why.
    """
    out: dict[str, Any] = {"anova": None, "tukey": None, "discriminative_power": None, "notes": []}
    ids = [int(run_id) for run_id in run_ids]
    if len(ids) >= 3:
        try:
            out["anova"] = _anova_json(scores)
            out["tukey"] = _tukey_json(scores, ids, alpha=alpha, confidence=confidence)
        except EvalCoreError as error:
            out["notes"].append(f"ANOVA and Tukey's HSD: {error}")
    try:
        out["discriminative_power"] = _power_json(
            scores, ids, alpha=alpha, n_resamples=n_resamples, seed=seed
        )
    except EvalCoreError as error:
        out["notes"].append(f"discriminative power: {error}")
    return out


def _anova_json(scores: np.ndarray) -> dict[str, Any]:
    table = two_way_anova(scores)
    effects = {
        name: {
            "sum_sq": json_number(effect.sum_sq), "df": effect.df, "mean_sq": json_number(effect.mean_sq),
            "f": json_number(effect.f), "p_value": json_number(effect.p_value),
        }
        for name, effect in (("systems", table.systems), ("topics", table.topics), ("residual", table.residual))
    }  # fmt: skip
    return {**effects, "residual_variance": json_number(table.residual_variance)}


def _tukey_json(scores: np.ndarray, ids: list[int], *, alpha: float, confidence: float) -> dict[str, Any]:
    hsd = tukey_hsd(scores, confidence=confidence)
    first, second = np.triu_indices(len(ids), k=1)
    pairs = [
        {
            "run_a_id": ids[i], "run_b_id": ids[j], "mean_difference": json_number(hsd.mean_difference[i, j]),
            "q": json_number(hsd.statistic[i, j]), "p_value": json_number(hsd.p_values[i, j]),
            "lower": json_number(hsd.lower[i, j]), "upper": json_number(hsd.upper[i, j]),
            "significant": bool(hsd.p_values[i, j] < alpha),
        }
        for i, j in zip(first.tolist(), second.tolist(), strict=True)
    ]  # fmt: skip
    return {
        "design": hsd.design,
        "mse": json_number(hsd.mse),
        "df": hsd.df,
        "confidence": confidence,
        "pairs": pairs,
    }


def _power_json(
    scores: np.ndarray, ids: list[int], *, alpha: float, n_resamples: int, seed: int
) -> dict[str, Any]:
    power = discriminative_power(scores, alpha=alpha, test="bootstrap", n_resamples=n_resamples, seed=seed)
    return {
        "test": power.test,
        "alpha": alpha,
        "n_resamples": n_resamples,
        "seed": seed,
        "pairs": len(power.p_values),
        "significant": power.significant,
        "share": json_number(power.share),
        "min_significant_difference": json_number(power.min_significant_difference),
        "p_values": [
            {"run_a_id": ids[i], "run_b_id": ids[j], "p_value": json_number(p)}
            for (i, j), p in zip(power.pairs.tolist(), power.p_values.tolist(), strict=True)
        ],
    }


def overlap_json(a: Run, b: Run, *, run_a_id: int, run_b_id: int, params: OverlapParams) -> dict[str, Any]:
    """Every overlap figure of two runs' top-k lists: per query (null where undefined) and the means
    over the queries where each is defined, with how many that is."""
    result = run_overlap(a, b, params)
    return {
        "run_a_id": run_a_id,
        "run_b_id": run_b_id,
        "num_q": len(result.qids),
        "only_a": len(result.only_a),
        "only_b": len(result.only_b),
        "mean": {figure: json_number(result.mean(figure)) for figure in OVERLAP_FIGURES},
        "defined": {figure: result.defined(figure) for figure in OVERLAP_FIGURES},
        "qids": [str(qid) for qid in result.qids.tolist()],
        "shared": [int(n) for n in np.asarray(result.shared).tolist()],
        "per_query": {figure: json_numbers(result.values[figure]) for figure in OVERLAP_FIGURES},
    }
