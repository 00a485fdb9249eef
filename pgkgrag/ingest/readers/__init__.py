"""Readers: from the files a team has to documents with their structure. `files` finds the input
files and reads each (JSONL, Markdown, text; PDF, HTML and DOCX through `pdf`, `html` and `docx`,
run in an isolated worker with limits by `isolation`), `converted` is what a reader returns: the
text, its title, and the page and headings of each span."""
