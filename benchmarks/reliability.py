"""Run the reliability tests and write what each measured to docs/reliability.md.

The figures come from the tests themselves (pytest's record_property), so the document says what
the suite checks, measured in the same run. Usage: python benchmarks/reliability.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path

from common import ROOT, machine

REPORT = ROOT / "docs" / "reliability.md"

# (section, what is claimed, pytest node ids)
SCENARIOS: list[tuple[str, str, list[str]]] = [
    (
        "Replay",
        "The same batch ingested (and built) 5 times leaves identical per-table checksums.",
        ["tests/ingest/test_ingest.py::test_same_input_five_times_changes_nothing"],
    ),
    (
        "Crash",
        "The server stopped with `pg_ctl stop -m immediate`, and separately the ingesting backend killed with"
        " `pg_terminate_backend` (waited until gone), in the middle of a 1,200-document run in batches of 40:"
        " after restart no document is partial (each one's chunks and mentions equal a clean run's), and"
        " re-running the same command completes the batch; every table then equals a clean run.",
        [
            "tests/ingest/test_reliability.py::test_the_server_stopped_immediately_mid_batch",
            "tests/ingest/test_reliability.py::test_the_ingesting_backend_terminated_mid_batch",
        ],
    ),
    (
        "Concurrency",
        "4 `pgkgrag ingest` processes over overlapping entities (every document names 3 of the same 24),"
        " and one process writing 3 batches at once (`--jobs 3`): none fails, no deadlock reaches the user,"
        " and every table equals a serial run. A writer adding a citation of two entities waits for a"
        " concurrent writer whose changed document stops citing them (without the entity lock it would"
        " count the citation that is going away).",
        [
            "tests/ingest/test_reliability.py::test_four_ingesting_processes_equal_a_serial_run",
            "tests/ingest/test_reliability.py::test_one_process_writing_three_batches_at_once_equals_a_serial_run",
            "tests/ingest/test_reliability.py::test_a_writer_waits_for_the_entities_a_changed_document_leaves",
        ],
    ),
    (
        "Runaway queries",
        "A k-hop on a dense graph without a cap is cancelled by its time budget (khop_timeout_ms, raised as"
        " query_canceled like a statement timeout) with a clear message;"
        " the connection stays usable.",
        ["tests/routes/test_graph.py::test_runaway_traversal_is_cancelled_and_connection_survives"],
    ),
    (
        "Bad input",
        "Each mistake gets an error naming it, and the tenant's tables are unchanged (checksums).",
        [
            "tests/ingest/test_reliability.py::test_bad_search_input_is_named_and_writes_nothing",
            "tests/ingest/test_reliability.py::test_bad_documents_are_named_and_nothing_of_them_is_written",
        ],
    ),
    (
        "LLM outputs",
        "Malformed extraction responses fail their document with a reason; nothing of it is cached or written."
        " (Fenced or prose-wrapped JSON is accepted; invalid items and injected instructions are covered by"
        " tests/answers/test_llm.py as well.)",
        ["tests/answers/test_llm.py::test_malformed_output_fails_the_document_and_is_not_cached"],
    ),
    (
        "Tenancy",
        "Two tenants with random corpora: every public function and every route, called as each tenant, returns"
        " nothing of the other, answers exactly as before the other tenant existed, and writes aimed at the"
        " other's ids change none of its rows. A tenant holding 1% of the rows still gets k results from the"
        " BQ index, and the full-text, trigram, traversal and vector indexes are used under row-level security.",
        [
            "tests/tenancy/test_tenancy.py",
            "tests/schema/test_hardening.py::test_traversal_full_text_and_linking_use_their_indexes_under_row_level_security",
            "tests/routes/test_vector.py::test_a_tenant_with_one_percent_of_rows_still_gets_k_through_the_index",
        ],
    ),
    (
        "Isolation against a role that can run SQL",
        "A login role granted kgrag_reader (then kgrag_writer) and tenant a only calls every public function as"
        " tenant b, with the setting forged and with a forged seal: every call is refused, and b's tables are"
        " unchanged. A tenant set for the session (SET, set_config(..., false), options=-c) or left by an earlier"
        " transaction does not count; a transaction has one tenant; the defaults tenant '*' is the owner's;"
        " readers cannot write the query log; grants are the owner's to give.",
        ["tests/tenancy/test_trust.py"],
    ),
    (
        "Hostile input",
        "Hostile lines among good ones, through `pgkgrag ingest`: each is reported with its file and line and"
        " skipped, no good document is lost, nothing is a traceback; a document past a limit of what one document"
        " may carry is refused for any SQL client (the rule is kgrag_private.ingest_apply's).",
        [
            "tests/ingest/test_hostile_input.py::test_hostile_lines_are_reported_by_line_and_the_good_ones_written",
            "tests/ingest/test_hostile_input.py::test_an_unreadable_file_is_named_and_skipped",
            "tests/ingest/test_hostile_input.py::test_a_document_past_a_limit_is_refused_for_any_sql_client",
        ],
    ),
    (
        "Failures recorded in SQL",
        "Every input an ingestion could not take (a line with NUL, NaN, bad UTF-8, JSON nested too deep or a"
        " duplicate doc_id, a document past a limit, a relation to an entity its document does not give) is a"
        " row of kgrag.ingest_failure with its file, line, document and reason; the good lines are written"
        " whole; the rows go once the file is read again without those failures.",
        ["tests/ingest/test_failures_recorded.py"],
    ),
    (
        "Operations a tenant cannot undo",
        "An attacker holding kgrag_writer cannot lift a limit the owner set (questions, timeouts, hops, question"
        " text logging, the query log itself), nor insert, update or delete log rows; a reader flooding the log"
        " through the logging function leaves the tenant's rate of rows and the rest counted; kgrag.purge deletes"
        " the rows past each tenant's retention and nothing else; a deleted document's entities, names and chunks"
        " leave the query log (the forgetting test below greps every table, logs included).",
        ["tests/tenancy/test_limits.py", "tests/tenancy/test_retention.py"],
    ),
    (
        "Bounded work",
        "A question past max_question_chars, a path longer than a walk, a walk past max_paths_walked and a search"
        " past search_timeout_ms are refused or cancelled with a message naming the setting; linking grows"
        " linearly with the question; the chunker cuts text without boundaries (a 4.9 MB token) within its limits.",
        [
            "tests/ingest/test_hostile_input.py::test_every_caller_is_bounded",
            "tests/ingest/test_hostile_input.py::test_a_walk_past_its_path_budget_or_the_search_deadline_stops",
            "tests/ingest/test_hostile_input.py::test_the_chunker_cuts_text_without_boundaries_within_its_limits",
        ],
    ),
    (
        "Forgetting",
        "A marker planted in every place a document can put text is in no table and in no function's answer"
        " after the document is deleted (before any build); the same final input gives the same tables after a"
        " history of older versions, two concurrent writers, deletes and builds.",
        ["tests/ingest/test_forgetting.py"],
    ),
]


def run(nodes: list[str], xml: Path) -> int:
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-o",
        "junit_family=xunit1",
        f"--junitxml={xml}",
        *nodes,
    ]
    return subprocess.run(command, cwd=ROOT, check=False).returncode


def cases(xml: Path) -> list[tuple[str, str, float, list[tuple[str, str]]]]:
    out = []
    for case in ET.parse(xml).getroot().iter("testcase"):
        failed = case.find("failure") is not None or case.find("error") is not None
        skipped = case.find("skipped") is not None
        outcome = "failed" if failed else "skipped" if skipped else "passed"
        props = [(p.get("name", ""), p.get("value", "")) for p in case.iter("property")]
        out.append((case.get("name", ""), outcome, float(case.get("time", "0")), props))
    return out


def main() -> int:
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Reliability",
        "",
        f"_{stamp}; {machine()}; written by `python benchmarks/reliability.py`, which runs the tests below and"
        " prints what each one measured. Every claim here is an assertion of the test suite (`make test`)._",
    ]
    status = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i, (title, claim, nodes) in enumerate(SCENARIOS):
            xml = Path(tmp) / f"{i}.xml"
            status |= run(nodes, xml)
            lines += ["", f"## {title}", "", claim, ""]
            for name, outcome, seconds, props in cases(xml):
                lines.append(f"- `{name}`: **{outcome}** in {seconds:.1f} s")
                lines += [f"  - {key}: {value}" for key, value in props]
    REPORT.write_text("\n".join(lines) + "\n")
    print(f"wrote {REPORT.relative_to(ROOT)}")
    return status


if __name__ == "__main__":
    sys.exit(main())
