// Add documents to pgkgrag from Node.js: one SQL call a document, no Python on this machine. Each
// document waits in the tenant's ingestion queue until `pgkgrag worker` (anywhere) ingests it;
// the tickets printed say where each one is (SELECT * FROM kgrag.ingest_queue WHERE ticket = ...).
//
//   npm install pg
//   PGHOST=... PGDATABASE=... PGUSER=... KGRAG_TENANT=acme node submit.mjs tickets.jsonl
//
// The file holds one document a line, as pgkgrag ingest reads JSONL: {"doc_id", "text", "title",
// "metadata", "language", "entities", "relations", "access"}. A document the database refuses (a
// bad field, past a size limit, the queue at its ceiling) is reported with its line and why; the
// others are submitted. The login must be granted kgrag_writer (a reader is refused).
import { readFileSync } from "node:fs";
import pg from "pg";

const path = process.argv[2];
const tenant = process.env.KGRAG_TENANT;
if (!path || !tenant) {
  console.error("usage: KGRAG_TENANT=<tenant> node submit.mjs <documents.jsonl>");
  process.exit(2);
}
const lines = readFileSync(path, "utf8").split("\n");

const client = new pg.Client(); // PGHOST, PGPORT, PGDATABASE, PGUSER, PGPASSWORD from the environment
await client.connect();
const tickets = [];
let refused = 0;
try {
  for (const [i, line] of lines.entries()) {
    if (!line.trim()) continue;
    try {
      await client.query("BEGIN");
      await client.query("SELECT kgrag.use_tenant($1)", [tenant]); // checked against this login's grants
      const { rows: [{ ticket }] } = await client.query("SELECT kgrag.submit_document($1::jsonb) AS ticket", [line]);
      await client.query("COMMIT");
      tickets.push({ line: i + 1, ticket: Number(ticket) });
    } catch (error) {
      await client.query("ROLLBACK");
      refused += 1;
      console.error(`${path}:${i + 1}: ${error.message}`);
    }
  }
} finally {
  await client.end();
}
console.log(JSON.stringify(tickets));
process.exit(refused ? 1 : 0);
