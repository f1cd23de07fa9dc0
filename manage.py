#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys

#: Commands that read files and print results, touching neither the database nor any web setting.
#: Each module's `Program` runs without the project's settings (so SECRET_KEY and DEBUG do not matter)
#: and without importing Django at all (`evalcore.filecommands.run_standalone`): they start in a
#: fraction of the time.
STANDALONE_COMMANDS = {
    "eval_retrieval": "monitoring.management.commands.eval_retrieval",
    "compare_runs": "monitoring.management.commands.compare_runs",
    "eval_agreement": "annotations.management.commands.eval_agreement",
    "eval_recsys": "monitoring.management.commands.eval_recsys",
    "eval_fraud": "monitoring.management.commands.eval_fraud",
    "eval_embeddings": "monitoring.management.commands.eval_embeddings",
    "simulate_pooling": "monitoring.management.commands.simulate_pooling",
    "calibrate_judge": "monitoring.management.commands.calibrate_judge",
    "ppi_evaluate": "monitoring.management.commands.ppi_evaluate",
    "derive_click_judgments": "monitoring.management.commands.derive_click_judgments",
    "run_overlap": "monitoring.management.commands.run_overlap",
    "fuse_runs": "monitoring.management.commands.fuse_runs",
}


def main() -> None:
    command = sys.argv[1] if len(sys.argv) > 1 else ""
    if command in STANDALONE_COMMANDS:
        from evalcore.filecommands import run_standalone

        run_standalone(STANDALONE_COMMANDS[command], sys.argv)
        return
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalplatform.settings")
    from evalplatform.startup import refuse_unloadable_settings

    refuse_unloadable_settings("manage.py")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
