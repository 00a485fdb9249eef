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

# the attacks of issue 55: what was tried, its outcome and the test (under tests/) that tries it
ATTACKS = [
    (
        "a writer inserts a decision under a curator's name and date, rewrites decided_by/decided_at,"
        " deletes decisions, writes kgrag.curation_ended",
        "permission denied (42501): only the curation functions write decisions, with the login role "
        "and the database's clock",
        "tenancy/test_doors.py::test_a_writer_cannot_forge_rewrite_or_delete_a_decision",
    ),
    (
        "a curator inserts a decision itself (an empty name, a made-up target), calls "
        "kgrag_private.decide or end_decisions",
        "permission denied; through the functions an empty name, an unstated relation, an unknown "
        "name and CO_OCCURS are refused (22023)",
        "tenancy/test_doors.py::test_a_curator_decides_only_through_the_functions_and_can_search",
    ),
    (
        "a curator searches and reads context",
        "answered (it could not: permission denied for fuzzy_aliases)",
        "tenancy/test_doors.py::test_a_curator_decides_only_through_the_functions_and_can_search",
    ),
    (
        "a document with decisions is deleted; a decision is taken back",
        "each leaves an entry: kgrag.decision_history says forgotten (by whom, when, why) or replaced"
        " (by which decision of whom)",
        "tenancy/test_doors.py::test_a_decision_forgotten_with_its_document_leaves_an_entry, "
        "test_a_replaced_decision_says_by_whom",
    ),
    (
        "a writer points rerank_url (or rerank_model, rerank_api, reader_memory_mb, setting_limits) "
        "at its own listener; a reader then searches with KGRAG_RERANK_API_KEY set",
        "refused when written (42501, the owner's alone), and so is deleting or rekeying the owner's row of one"
        " for the tenant; the listener receives nothing",
        "tenancy/test_doors.py::test_a_writer_cannot_aim_a_setting_at_the_operators_secrets_or_below_a_floor",
    ),
    (
        'a writer sets chunk_max_chars 1, search_timeout_ms 0 / -1 / 0.5 / "100", khop_timeout_ms 0, '
        "max_paths_walked 0, max_question_chars -5, a key that is no setting",
        "refused when written (22023, naming the rule)",
        "tenancy/test_doors.py::test_a_writer_cannot_aim_a_setting_at_the_operators_secrets_or_below_a_floor",
    ),
    (
        "the installing superuser (no policy applies) writes a default out of its rule",
        "refused by the constraint settings_value_fits_its_rule",
        "tenancy/test_doors.py::test_the_owner_sets_a_tenants_reranker_and_the_rules_bind_the_owner_too",
    ),
    (
        "a tenant's row written before its floor (search_timeout_ms 0)",
        "read within the rule (1 ms), never as no limit",
        "tenancy/test_doors.py::test_a_row_written_before_its_floor_is_read_within_it",
    ),
    (
        "a writer calls the log redaction itself, prepares the scratch tables kgrag.delete_documents writes"
        " through, or ingests and deletes a document whose entities are named as the words of every reason",
        "permission denied; 55000 'scratch tables of another role are in the way'; the log is "
        "unchanged (a deletion redacts only the searches that reached its documents), and a real deletion still"
        " forgets what only it named",
        "tenancy/test_doors.py::test_a_writer_cannot_aim_the_logs_redaction",
    ),
    (
        "a reader confirms a guessed question from the log",
        "the logs keep no hash of the question (dropped: a keyed one could still be confirmed by asking the"
        " question); neither the question, its md5 nor its sha256 is in any row",
        "tenancy/test_doors.py::test_the_log_keeps_nothing_a_guess_could_be_confirmed_with",
    ),
    (
        "a login granted kgrag_writer for tenant a holds a reader's key of tenant b and calls the writing"
        " SECURITY DEFINER functions (delete_documents, approve, purge), on a managed (non-superuser) owner",
        "42501: a reader's API key may not write (kgrag_private.check_writing); b's document is still there",
        "schema/test_managed.py::test_a_readers_key_writes_nothing_through_a_definer_under_a_managed_owner",
    ),
    (
        "kgrag.use_key twice in a transaction, for two tenants; a key of 300 characters, upper-case, non-hex",
        "25001 for the second tenant; 28P01 (not a 500) for each key",
        "tenancy/test_doors.py::test_a_transaction_acts_for_one_tenant_and_a_malformed_key_is_refused",
    ),
    (
        "a 1,000,000-character question; 20,000 characters against a limit of 2,000; a bad option with a long question",
        "400 question_too_long / invalid_value before anything is embedded (about 60 ms), other "
        "tenants' searches unchanged",
        "serve/test_attacks.py::test_sizes_and_options_are_refused_before_the_question_is_embedded",
    ),
    (
        "/v1/embeddings with 2 x 30,800 characters, 5 x 8,000, 129 texts",
        "400 input_too_long / too_many_inputs before the model runs (was 47 s)",
        "serve/test_attacks.py::test_embeddings_are_bounded_in_count_and_characters",
    ),
    (
        "a search or an answer past --timeout; a client that hangs up",
        "408 at the deadline, the query cancelled and rolled back: no query_log or answer_log row",
        "serve/test_attacks.py::test_a_search_past_its_time_is_cancelled_and_logs_nothing, "
        "test_a_search_whose_client_hung_up_is_cancelled_and_logs_nothing, "
        "test_an_answer_past_its_time_logs_neither_its_search_nor_its_answer",
    ),
    (
        "one tenant floods with long searches or long embeddings",
        "429 too_many_in_progress with Retry-After beyond the tenant's bound; another tenant waits "
        "for one embedding at most",
        "serve/test_attacks.py::test_one_tenant_s_flood_leaves_the_others_served, "
        "test_one_tenant_s_embeddings_leave_the_others_their_turn",
    ),
    (
        "SIGTERM while a query is blocked on a lock",
        "the server exits within --shutdown-timeout, the query cancelled",
        "serve/test_attacks.py::test_sigterm_stops_the_server_mid_request",
    ),
    (
        "404, 405, bad JSON, a wrong field type, a SQL error; /v1/ask without an LLM; a malformed key",
        "OpenAI's error shape with a stable code (never a SQLSTATE); 503 llm_not_configured; 401 invalid_api_key",
        "serve/test_attacks.py::test_every_error_has_openai_s_shape_and_a_stable_code, "
        "test_an_ask_without_an_llm_is_refused_before_it_searches, test_a_malformed_key_is_a_401",
    ),
    (
        "413s, 404s, /mcp without a key, failing MCP tool calls",
        "all counted in /metrics",
        "serve/test_attacks.py::test_metrics_count_every_request_and_every_tool_call",
    ),
    (
        "pgkgrag mcp --tenant a run by the schema owner; the agent asks for tenant b or '*'",
        "refused: acts for 'a' only; none of b's text",
        "serve/test_attacks.py::test_mcp_tenant_binds_the_schema_owner_to_its_tenant",
    ),
    (
        "another root-started embedded server's OS account, or nobody, connects to this server's "
        "socket as an application login or as postgres",
        "peer authentication failed / permission denied (was: logged in with no password)",
        "cli/test_embedded.py::test_another_embedded_servers_account_logs_in_as_no_role, "
        "test_the_server_is_not_open_to_every_local_account, "
        "test_a_server_an_older_pgkgrag_locked_down_trusts_no_role_after_its_next_start",
    ),
    (
        "kill -9 of an ingest while its reader works; an ingest stopped with SIGSTOP",
        "the reader's process ends within seconds, and at its own reader_timeout_s",
        "ingest/test_hostile_files.py::test_a_killed_ingest_takes_its_busy_reader_with_it, "
        "test_a_reader_stops_at_its_time_limit_when_its_ingest_cannot_stop_it",
    ),
    (
        "a 200 MB .txt, a 10 MB JSONL line with max_document_mb 1, a named pipe named .txt",
        "refused unread (peak memory 88 MB, was 487 MB); the other lines written; 'not a regular file'",
        "ingest/test_hostile_files.py::test_a_text_file_past_max_document_mb_is_refused_before_it_is_"
        "read, test_a_jsonl_line_past_its_limit_is_refused_unread_and_the_others_written, "
        "test_pipes_named_like_text_files_are_refused_not_waited_on",
    ),
    (
        "HTML nested 100,000 deep; small pages nested 600 and 5,000 deep; a heading of 20,000 spaces;"
        " 4 MB of unclosed Markdown links",
        "refused before parsing (1 s, was 33 s and a RecursionError) or by the walk; the heading read"
        " in linear time; Markdown stopped at reader_timeout_s",
        "ingest/test_hostile_files.py::test_web_pages_nested_past_512_are_refused_before_they_are_par"
        "sed, test_a_page_too_small_to_keep_the_parser_long_is_refused_by_its_walk, "
        "test_a_heading_with_a_long_run_of_spaces_is_read, "
        "test_markdown_is_read_within_the_readers_time_limit",
    ),
    (
        "a folder being ingested holds a package named pgkgrag",
        "none of its code runs",
        "ingest/test_hostile_files.py::test_a_folder_holding_a_package_named_pgkgrag_runs_none_of_its_code",
    ),
]
AUDIENCE_ATTACKS = [
    (
        "a reader holding no group (or hr, or finance) calls every public function and route on random "
        "corpora with documents for hr and for finance sharing names",
        "no id, name, word or codeword only a hidden document holds; the documents of its groups found",
        "tenancy/test_audiences.py::test_no_function_and_no_route_shows_a_group_not_held",
    ),
    (
        "a role holding hr in another tenant switches kgrag.tenant in the middle of a statement; a revoked "
        "key's seal is replayed in a later transaction; the schema owner's session acts with a key of no group",
        "none sees the HR document (the first form of revision 0042 let all three through: the review found them)",
        "tenancy/test_audiences.py::test_what_a_statement_sets_while_it_runs_lends_no_group",
    ),
    (
        "a document a curator decided about and a reader searched goes into an audience",
        "no decision, log row, community or entity tells a reader without the group of it; the decisions are "
        "kept for the audience; a writer holding one of a document's two groups may not move it",
        "tenancy/test_audiences.py::test_a_document_going_into_an_audience_leaves_nothing_for_everyone",
    ),
    (
        "a narrowing asks for a group not held; a session sets kgrag.groups by hand",
        "refused (42501); by hand it only narrows",
        "tenancy/test_audiences.py::test_a_narrowing_only_narrows",
    ),
    (
        "on Citus (whose shards make every policy permissive): a reader without hr scans every shard; a "
        "tenant's writer changes the owner's row of an owner's setting",
        "neither another tenant's documents nor the group's; 0 rows changed (revision 0041's restrictive "
        "policies were permissive on the shards: folded into the tenant policies)",
        "citus/test_delegation.py::test_a_document_for_a_group_reaches_its_holders_alone_on_the_cluster",
    ),
    (
        "a reader holding b calls the audience probes (SECURITY DEFINER, past the audience policy) directly, "
        "with either ordering and after narrowing to no group, and the audience list; reads kgrag.lexeme_stats; "
        "a writer holding b writes a statistics row for 'a,b'",
        "only ids of chunks it sees (equal to a brute force over them), only chunks for everyone once narrowed; "
        "the list refused (42501: kgrag_probe's alone, for the current tenant: the review found a role whose "
        "tenant was taken back listing its audiences); no statistics row of an audience it does not see; the "
        "row refused (the review suppressed a legal-only word with one)",
        "tenancy/test_audiences.py::test_a_caller_who_sees_few_chunks_gets_the_nearest_of_its_own",
    ),
    (
        "a reader without hr names hr's person, or the marked id of hr's entity or of hr's twin of a shared "
        "one, to k_hop; reads entities, communities, reports, PageRank and the global route; a writer of hr "
        "inserts entity rows marked ~finance and ~finance,legal, and stages a public document's entity marked "
        "~hr; a curator of hr decides about hr's relation; a curator of no group approves hr's marked ids",
        '"no entity is named" (as for a name nobody wrote); nothing of hr; both rows refused by the policy; '
        "the staged entity stored unmarked; refused (0A000: every curator reads decisions) and nothing of hr's "
        "graph queued; refused before any lookup, existing or not (the review found approve telling whether "
        "hr's person existed); the shared communities equal a tenant's without hr's document",
        "tenancy/test_audiences.py::test_an_audience_s_graph_is_its_holders_own",
    ),
    (
        "tenant a's key without hr, and the hr key narrowed to no group, ask over /v1/ask and through the MCP "
        "tools (search, context, ask); any key asks /v1/neighbourhood",
        "the HR document is in neither the LLM's prompt (a local chat server) nor a tool's result; the hr key's "
        "prompt and results hold it; no neighbourhood shows it",
        "serve/test_keys_and_limits.py::test_a_key_s_groups_bind_its_answers_graph_and_agent_tools",
    ),
    (
        "on managed PostgreSQL (18 and 16, owner no superuser): a reader without the group moves a document "
        "with set_access; the owner takes the group back",
        "refused (42501); the reader no longer finds the document",
        "schema/test_managed.py::test_a_managed_owner_grants_audiences_and_its_writer_moves_a_document",
    ),
]
DOORS = "\n\n| attack tried | outcome | test (tests/) |\n|---|---|---|\n" + "\n".join(
    f"| {attack} | {outcome} | `{test}` |" for attack, outcome, test in ATTACKS
)
AUDIENCES = "\n\n| attack tried | outcome | test (tests/) |\n|---|---|---|\n" + "\n".join(
    f"| {attack} | {outcome} | `{test}` |" for attack, outcome, test in AUDIENCE_ATTACKS
)


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
    (
        "Doors (issue 55)",
        "Every door tried as the attacker holding one tenant's role or key, another OS account, or a hostile"
        " file would: the decisions, the settings, the logs, the keys, the service and the machine. Each row's"
        " test failed on the code before the change that made it hold." + DOORS,
        [
            "tests/tenancy/test_doors.py::test_a_writer_cannot_forge_rewrite_or_delete_a_decision",
            "tests/tenancy/test_doors.py::test_a_curator_decides_only_through_the_functions_and_can_search",
            "tests/tenancy/test_doors.py::test_a_decision_forgotten_with_its_document_leaves_an_entry",
            "tests/tenancy/test_doors.py::test_a_replaced_decision_says_by_whom",
            "tests/tenancy/test_doors.py::test_a_writer_cannot_aim_a_setting_at_the_operators_secrets_or_below_a_floor",
            "tests/tenancy/test_doors.py::test_the_owner_sets_a_tenants_reranker_and_the_rules_bind_the_owner_too",
            "tests/tenancy/test_doors.py::test_a_row_written_before_its_floor_is_read_within_it",
            "tests/tenancy/test_doors.py::test_a_writer_cannot_aim_the_logs_redaction",
            "tests/tenancy/test_doors.py::test_the_log_keeps_nothing_a_guess_could_be_confirmed_with",
            "tests/schema/test_managed.py::test_a_readers_key_writes_nothing_through_a_definer_under_a_managed_owner",
            "tests/tenancy/test_doors.py::test_a_transaction_acts_for_one_tenant_and_a_malformed_key_is_refused",
            "tests/serve/test_attacks.py::test_sizes_and_options_are_refused_before_the_question_is_embedded",
            "tests/serve/test_attacks.py::test_embeddings_are_bounded_in_count_and_characters",
            "tests/serve/test_attacks.py::test_a_search_past_its_time_is_cancelled_and_logs_nothing",
            "tests/serve/test_attacks.py::test_a_search_whose_client_hung_up_is_cancelled_and_logs_nothing",
            "tests/serve/test_attacks.py::test_an_answer_past_its_time_logs_neither_its_search_nor_its_answer",
            "tests/serve/test_attacks.py::test_one_tenant_s_flood_leaves_the_others_served",
            "tests/serve/test_attacks.py::test_one_tenant_s_embeddings_leave_the_others_their_turn",
            "tests/serve/test_attacks.py::test_sigterm_stops_the_server_mid_request",
            "tests/serve/test_attacks.py::test_every_error_has_openai_s_shape_and_a_stable_code",
            "tests/serve/test_attacks.py::test_an_ask_without_an_llm_is_refused_before_it_searches",
            "tests/serve/test_attacks.py::test_a_malformed_key_is_a_401",
            "tests/serve/test_attacks.py::test_metrics_count_every_request_and_every_tool_call",
            "tests/serve/test_attacks.py::test_mcp_tenant_binds_the_schema_owner_to_its_tenant",
            "tests/cli/test_embedded.py::test_another_embedded_servers_account_logs_in_as_no_role",
            "tests/cli/test_embedded.py::test_the_server_is_not_open_to_every_local_account",
            "tests/cli/test_embedded.py::test_a_server_an_older_pgkgrag_locked_down_trusts_no_role_after_its_next_start",
            "tests/ingest/test_hostile_files.py::test_a_killed_ingest_takes_its_busy_reader_with_it",
            "tests/ingest/test_hostile_files.py::test_a_reader_stops_at_its_time_limit_when_its_ingest_cannot_stop_it",
            "tests/ingest/test_hostile_files.py::test_a_text_file_past_max_document_mb_is_refused_before_it_is_read",
            "tests/ingest/test_hostile_files.py::test_a_jsonl_line_past_its_limit_is_refused_unread_and_the_others_written",
            "tests/ingest/test_hostile_files.py::test_pipes_named_like_text_files_are_refused_not_waited_on",
            "tests/ingest/test_hostile_files.py::test_web_pages_nested_past_512_are_refused_before_they_are_parsed",
            "tests/ingest/test_hostile_files.py::test_a_page_too_small_to_keep_the_parser_long_is_refused_by_its_walk",
            "tests/ingest/test_hostile_files.py::test_a_heading_with_a_long_run_of_spaces_is_read",
            "tests/ingest/test_hostile_files.py::test_markdown_is_read_within_the_readers_time_limit",
            "tests/ingest/test_hostile_files.py::test_a_folder_holding_a_package_named_pgkgrag_runs_none_of_its_code",
        ],
    ),
    (
        "Audiences (issue 56)",
        "Documents for groups inside a tenant, tried as a reader, a writer and a key holder without the group"
        " would (docs/audiences.md)." + AUDIENCES,
        [
            "tests/tenancy/test_audiences.py",
            "tests/serve/test_keys_and_limits.py::"
            "test_a_key_sees_the_documents_of_its_groups_and_an_end_user_narrows_them",
            "tests/citus/test_delegation.py::test_a_document_for_a_group_reaches_its_holders_alone_on_the_cluster",
            "tests/serve/test_keys_and_limits.py::test_a_key_s_groups_bind_its_answers_graph_and_agent_tools",
            "tests/schema/test_managed.py::test_a_managed_owner_grants_audiences_and_its_writer_moves_a_document",
        ],
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
