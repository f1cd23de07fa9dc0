"""What a team uploads to evaluate: runs and qrels sources (`models`), their uploads checked on
their first lines (`uploads`), a run's deletion (`actions`), their API (`api`) and upload pages
(`views`).
"""
