"""`RecsysOptions`: the choices of a recommendation evaluation, declared once with their bounds."""

from __future__ import annotations

from dataclasses import dataclass

from evalcore.options import option, options_check
from evalcore.recsys._popularity import DEFAULT_HEAD_SHARE


@dataclass(frozen=True)
class RecsysOptions:
    """The choices of a recommendation evaluation, declared once for the core, the command `eval_recsys`,
    the jobs, the forms and the API (`evalcore.options`: each is checked here, and the others derive
    their fields).

    `k` cuts every list to its first k items (None: the lists' depth); with `complete`, users who have
    held-out interactions but no list count as 0 in the accuracy metrics; `head_share` is the share of
    interactions the short head holds (APLT counts the items outside it).

    >>> RecsysOptions(k=10).head_share
    0.8
    >>> RecsysOptions(head_share=0)
    Traceback (most recent call last):
    ...
    evalcore.options.OptionsError: head_share must lie in (0, 1], got 0
    """

    k: int | None = option(
        None, kind=int, minimum=1, help="Cutoff: each list's first k items; none: whole lists."
    )
    complete: bool = option(
        False, kind=bool, help="Users with held-out interactions but no list score 0 on the accuracy metrics."
    )
    head_share: float = option(
        DEFAULT_HEAD_SHARE, kind=float, minimum=0.0, minimum_open=True, maximum=1.0,
        help="The most popular items holding this share of interactions are the short head; APLT counts the rest.",
    )  # fmt: skip

    def __post_init__(self) -> None:
        options_check(self)
