"""Reading a team's fusions."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from evalplatform.models import Team
from monitoring.evaluations.selectors import get_one
from monitoring.models import Fusion, Run


def team_fusions(*, team: Team) -> QuerySet[Fusion]:
    """The team's fusions, newest first, with their qrels and fused run."""
    return (
        Fusion.objects.filter(team=team)
        .select_related("team", "qrels", "result", "created_by")
        .order_by("-created_at", "-pk")
    )


def get_fusion(*, team: Team, pk: Any) -> Fusion:
    return get_one(team_fusions(team=team), pk, "fusion")  # type: ignore[no-any-return]


def run_fusion(*, run: Run) -> Fusion | None:
    """The fusion that made `run`, if one did (its page links back to it)."""
    return Fusion.objects.filter(result=run).only("pk", "team_id", "result_id").first()
