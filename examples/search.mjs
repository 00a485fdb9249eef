// Search pgkgrag from Node.js: embed the question with the tenant's embedder through
// `pgkgrag serve` (OpenAI's embeddings API; any OpenAI client works too), then one SQL call.
//
//   npm install pg
//   PGHOST=... PGDATABASE=... PGUSER=... KGRAG_TENANT=demo node search.mjs "Who approves changes to the PayFlow contract?"
//   ... node search.mjs "How many contracts are there?" '{"as_of": "2025-01-01", "min_confidence": 0.5}'
//
// The second argument, search options as JSON, goes to kgrag_search as they are (see its comment:
// as_of, history, min_confidence, hops, ...); a count question's rows carry payload.matching.
// KGRAG_EMBEDDINGS_URL (default http://127.0.0.1:8765/v1/embeddings) and KGRAG_API_KEY point
// at the server; a tenant whose embedder is `openai` embeds at its own OpenAI-compatible endpoint.
// KGRAG_GROUPS (comma-separated, may be empty) narrows the search to the groups of the end user the
// application acts for (kgrag.use_groups: only within the groups this login holds; docs/audiences.md).
import pg from "pg";

const question = process.argv[2] ?? "Who approves changes to the PayFlow contract?";
const options = process.argv[3] ?? "{}";
const tenant = process.env.KGRAG_TENANT;
if (!tenant) {
  console.error("KGRAG_TENANT is not set: name the tenant to search (e.g. KGRAG_TENANT=demo)");
  process.exit(2);
}
const url = process.env.KGRAG_EMBEDDINGS_URL ?? "http://127.0.0.1:8765/v1/embeddings";
const token = process.env.KGRAG_API_KEY;

const client = new pg.Client(); // PGHOST, PGPORT, PGDATABASE, PGUSER, PGPASSWORD from the environment
await client.connect();
try {
  await client.query("BEGIN");
  await client.query("SELECT kgrag.use_tenant($1)", [tenant]); // checked against this login's grants
  const groups = process.env.KGRAG_GROUPS;
  if (groups !== undefined) {
    await client.query("SELECT kgrag.use_groups($1)", [groups ? groups.split(",") : []]);
  }
  const { rows: [{ model }] } = await client.query("SELECT kgrag.setting('embedder') #>> '{}' AS model");
  const response = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", ...(token ? { Authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ model, input: question }),
  });
  if (!response.ok) throw new Error(`embeddings: HTTP ${response.status}: ${await response.text()}`);
  const vector = (await response.json()).data[0].embedding;
  const { rows } = await client.query(
    "SELECT rank, kind, source, ref_id, score, route, reason, payload FROM kgrag.kgrag_search($1::vector, 'auto', $2, 10, $3::jsonb)",
    [JSON.stringify(vector), question, options],
  );
  if (rows.length === 0) {  // no row: the search says why (no documents, nothing above the floors, ...)
    const { rows: [{ reason }] } = await client.query("SELECT reason FROM kgrag.last_search()");
    console.error(`no result: ${reason}`);
  }
  await client.query("COMMIT");
  console.log(JSON.stringify(rows));
} catch (error) {
  console.error(`error: ${error.message}`); // e.g. a group this login does not hold
  process.exitCode = 1;
} finally {
  await client.end();
}
