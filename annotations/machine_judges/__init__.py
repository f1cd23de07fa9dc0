"""Machine judges in a project (issue 24): labels from an LLM grader or a click model, kept apart from
people's answers, calibrated against them and routed to them where the machine is doubtful.

- `services`: `judge_labels_import` (a file of labels, atomic and idempotent), `judge_calibration` (the
  figures of `evalcore.machine_judges.calibrate_judge` against gold and the human consensus),
  `judge_route` (send doubtful pairs to people).
- `clicks`: a search log as a click-model judge (`evalcore.clicks` fits, this stores the labels);
  `imports`: the `MachineJudgeImport` job that runs it, and large files of labels, off the request.
- `views`, `api`, `forms`, `charts`: the lead's pages and the REST endpoints; `import_views`,
  `import_api`, `click_forms`: those of the imports.

Statistics live in `evalcore.machine_judges`; this package only reads and writes rows.
"""
