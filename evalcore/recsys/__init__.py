"""Recommendation metrics, accuracy and beyond, vectorised over users x k arrays.

Every metric reads a `RecommendationLists` (a users x k matrix of item codes, -1 padding a short
list; the catalog is the codes 0 .. n_items - 1) and, as it needs them, held-out `Interactions`
(the relevant items), the users' history, a popularity value per item, item categories or features,
and a baseline list. `read_recsys_files` builds all of it from CSV files; `evaluate_recommendations`
computes every metric from shared statistics (a users x k hits matrix, an exposure vector over the
catalog), each step linear in the number of users, never a users x catalog or items x items matrix.
Options are keyword-only; `k` cuts every list to its first k items (default: the lists' depth).

Notation: L_u is user u's top-k list, R_u their relevant items, H_u their history, e_i the number
of lists that hold item i (its exposure), p(i) item i's popularity (interactions), C the catalog.
Per-user values are averaged over the users that have them: accuracy and serendipity over users
with |R_u| > 0 (as trec_eval skips unjudged queries), list measures over users with a non-empty list.

| name | formula | notes |
|---|---|---|
| `hit_rate` | mean_u [L_u ∩ R_u ≠ ∅] | seed 004 divides by every user, relevant items or not |
| `precision_at_k` | mean_u |L_u ∩ R_u| / k | divided by k even for a shorter list |
| `recall_at_k` | mean_u |L_u ∩ R_u| / |R_u| | |
| `ndcg_at_k` | mean_u DCG / IDCG, gain 1 if relevant, discount 1/log2(rank + 1) | ideal: min(k, |R_u|) hits first |
| `catalog_coverage` | |{i : e_i > 0}| / |C| | C is the explicit catalog |
| `unique_items_recommended` | |{i : e_i > 0}| | |
| `gini` | sum_j (2j - n - 1) e_(j) / (n sum e), over all of C, e sorted ascending | default: unrecommended items count as 0 |
| `gini_recommended` | the same over {i : e_i > 0} | seed 004's variant |
| `category_coverage` | |cat(recommended)| / |cat(C)| | items without a category left out; seed 004 counts them as "unk" in the numerator only |
| `popularity_bias` | (sum_i e_i p(i) / sum_i e_i) / (sum_{i in C} p(i) / |C|) | seed 004's ARP ratio (slots pooled over users) |
| `arp` | mean_u mean_{i in L_u} p(i) | Abdollahpouri et al.; unit: interactions |
| `aplt` | mean_u |L_u ∩ tail| / |L_u| | tail: outside the short head, the most popular items holding `head_share` (0.8) of interactions |
| `novelty` | mean_u mean_{i in L_u} -log2 p(i), p(i) = interactions(i) / total | an item never interacted with counts as seen once |
| `intra_list_diversity` | mean_u 2/(n(n-1)) sum_{i<j in L_u} (1 - sim(i, j)) | sim: same category, or cosine of features |
| `unexpectedness` | mean_u mean_{i in L_u} min_{h in H_u} (1 - sim(i, h)) | seed 004's "serendipity" as its comment says (its code takes the min similarity); 1 for an empty history (seed: 0) |
| `serendipity_history` | mean_u (1/k) sum_{i in L_u ∩ R_u} unexp(u, i) | relevant and unexpected relative to the history |
| `serendipity_baseline` | mean_u |{i in L_u ∩ R_u : i not in B_u}| / k | B_u: a baseline's list (the command: the k most popular items) |

Seed 004's worked example (three users, ten items) gives catalog coverage 0.60, category coverage
1.00, popularity bias 1.60 and, for `gini_recommended`, 0.24; `gini` over the catalog is 0.54.
``METRIC_SPECS`` declares every metric in the platform-wide registry (`evalcore.metrics`).
"""

from evalcore.recsys._accuracy import (
    RelevanceHits,
    hit_rate,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    relevance_hits,
)
from evalcore.recsys._data import Interactions, RecommendationLists, RecsysInputError, RepeatedEntryError
from evalcore.recsys._diversity import (
    ItemSimilarity,
    intra_list_diversity,
    serendipity_baseline,
    serendipity_history,
    unexpectedness,
)
from evalcore.recsys._exposure import (
    catalog_coverage,
    category_coverage,
    exposure_share,
    gini,
    gini_coefficient,
    gini_recommended,
    unique_items_recommended,
)
from evalcore.recsys._files import RecsysFiles, category_codes, read_recsys_files
from evalcore.recsys._options import RecsysOptions
from evalcore.recsys._popularity import (
    DEFAULT_HEAD_SHARE,
    average_percentage_long_tail,
    average_recommendation_popularity,
    long_tail_items,
    most_popular_items,
    novelty,
    popularity_bias,
    self_information,
)
from evalcore.recsys._registry import (
    METRIC_SPECS,
    METRICS,
    PER_USER_METRICS,
    RecsysData,
    RecsysMetric,
    RecsysStats,
    evaluate_recommendations,
    per_user_values,
)

__all__ = [
    "DEFAULT_HEAD_SHARE",
    "METRICS",
    "METRIC_SPECS",
    "PER_USER_METRICS",
    "Interactions",
    "ItemSimilarity",
    "RecommendationLists",
    "RecsysData",
    "RecsysFiles",
    "RecsysInputError",
    "RecsysMetric",
    "RecsysOptions",
    "RecsysStats",
    "RelevanceHits",
    "RepeatedEntryError",
    "average_percentage_long_tail",
    "average_recommendation_popularity",
    "catalog_coverage",
    "category_codes",
    "category_coverage",
    "evaluate_recommendations",
    "exposure_share",
    "gini",
    "gini_coefficient",
    "gini_recommended",
    "hit_rate",
    "intra_list_diversity",
    "long_tail_items",
    "most_popular_items",
    "ndcg_at_k",
    "novelty",
    "per_user_values",
    "popularity_bias",
    "precision_at_k",
    "read_recsys_files",
    "recall_at_k",
    "relevance_hits",
    "self_information",
    "serendipity_baseline",
    "serendipity_history",
    "unexpectedness",
    "unique_items_recommended",
]
