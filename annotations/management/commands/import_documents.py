from annotations.management.commands._importing import ImportCommand


class Command(ImportCommand):
    kind = "documents"
    file_help = (
        'JSONL {"doc_id", "title"?, "text"}, or TSV `doc_id<TAB>text` / `doc_id<TAB>title<TAB>text` '
        "(optionally gzipped)"
    )
