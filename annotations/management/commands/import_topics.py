from annotations.management.commands._importing import ImportCommand


class Command(ImportCommand):
    kind = "topics"
    file_help = 'a TREC topics file (<top>...</top>), TSV `qid<TAB>text`, or JSONL {"qid", "text"}'
