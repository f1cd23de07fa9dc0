"""A team's leaderboard scored on a machine judge's labels (issue 24, points 2 and 4).

`MachineJudgeEvaluation` is the job: for one qrels source built from a judging project (a leaderboard)
and one machine judge of that project, each run's prediction-powered estimate of its mean measures with
its interval, beside the human-only and machine-only estimates (`evalcore.machine_judges.
ppi_evaluate_measures`), and how the runs rank on the machine's labels against people's (`ranking_
agreement`, also written to `annotations.MachineJudgeRanking` for the judge's calibration page).
"""
