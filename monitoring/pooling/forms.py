"""The form that creates a pool: the linked team's runs, a strategy and its parameters, and the measure
that ranks the runs in the pool page's simulation."""

from __future__ import annotations

from typing import Any

from django import forms

from evalcore.pooling import ADAPTIVE_STRATEGIES, STRATEGIES
from evalplatform.errors import InputError
from evalplatform.models import Team
from monitoring.evaluations.forms import RunsChoiceField
from monitoring.pooling.models import DEFAULTS
from monitoring.pooling.planner import MEASURE, simulation_measure_check
from monitoring.pooling.selectors import team_runs

STRATEGY_HELP = {
    "depth": "TREC's depth-k pool, each run's documents in trec_eval's ranking order",
    "take-rrf": "Take@N by reciprocal rank fusion",
    "take-rbp": "Take@N by rank-biased precision weights",
    "mtf": "Move-to-front: the runs that found relevant documents go on",
    "bandit-mm-ns": "Non-stationary Bayesian bandit (Losada, Parapar and Barreiro)",
    "random": "A seeded random order (a baseline)",
}


def strategy_choices() -> list[tuple[str, str]]:
    return [
        (name, f"{name}: {STRATEGY_HELP.get(name, 'a bandit method')}"
         + (" (adaptive)" if name in ADAPTIVE_STRATEGIES else ""))
        for name in STRATEGIES
    ]  # fmt: skip


class PoolForm(forms.Form):
    strategy = forms.ChoiceField(choices=strategy_choices, initial="depth")
    budget = forms.IntegerField(
        min_value=1, required=False, help_text="Pairs to judge over all topics; empty: every pooled pair."
    )
    depth = forms.IntegerField(
        min_value=1, max_value=10_000, initial=DEFAULTS.depth, help_text="How deep each run is read."
    )
    seed = forms.IntegerField(
        min_value=0, max_value=2**62, initial=DEFAULTS.seed, help_text="Drives the random and bandit orders."
    )
    simulation_measure = forms.CharField(
        label="Rank the simulated runs by",
        required=False,
        initial=MEASURE,
        # No max_length: the check below says when a name is too long, a browser's maxlength would not.
        help_text="The measure that ranks the runs in the pool page's simulation of the strategies: any one "
        "numeric measure of the registry, in any of its spellings (ndcg_cut_10, nDCG@10, P_5); empty: map.",
    )

    def clean_simulation_measure(self) -> str:
        """As the API's: one numeric measure of the registry (`planner.simulation_measure_check`)."""
        try:
            return simulation_measure_check(self.cleaned_data.get("simulation_measure") or "")
        except InputError as error:
            raise forms.ValidationError(str(error)) from None

    def __init__(self, *args: Any, team: Team, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["runs"] = RunsChoiceField(
            queryset=team_runs(team=team), widget=forms.CheckboxSelectMultiple, label="Runs",
            help_text=f"{team.name}'s runs; their top documents over this project's topics are pooled.",
        )  # fmt: skip
        self.order_fields(["runs", "strategy", "budget", "depth", "seed", "simulation_measure"])
