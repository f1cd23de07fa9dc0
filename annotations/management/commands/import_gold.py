from annotations.management.commands._importing import ImportCommand


class Command(ImportCommand):
    kind = "gold"
    file_help = "gold labels as qrels: `qid 0 doc_id grade` (or TSV / JSONL qrels)"
