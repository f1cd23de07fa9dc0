from typing import Any

from django.core.management.base import CommandParser

from annotations.imports import DEFAULT_DEPTH
from annotations.management.commands._importing import ImportCommand


class Command(ImportCommand):
    kind = "pool"
    file_help = "a TREC run file (`qid Q0 doc_id rank score tag`, pooled to --depth), or TSV `qid<TAB>doc_id`"

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument(
            "--depth",
            type=int,
            default=DEFAULT_DEPTH,
            help=f"pool each topic's top DEPTH documents of a run (default {DEFAULT_DEPTH}; ignored for pair lists)",
        )

    def import_options(self, options: dict[str, Any]) -> dict[str, Any]:
        return {"depth": options["depth"]}
