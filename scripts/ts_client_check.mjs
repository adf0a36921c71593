// Every result of the resource methods, and search's, through the TypeScript SDK's client,
// which parses each against the protocol's schemas (and a tool's structured content
// against its output schema): a result that does not conform throws.
//
//   npm install @modelcontextprotocol/sdk      (in a folder DIR; ES modules resolve from the script)
//   cp scripts/ts_client_check.mjs DIR && node DIR/ts_client_check.mjs FOLDER [PYTHON]
//
// FOLDER is a data folder with at least one .md file (with more than 100 files, the list
// is paged by its cursor; with a .pdf, a page of it is read); PYTHON runs the server
// (default: .venv/bin/python). Prints one line per check and exits 1 on the first failure.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { appendFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const [folder, python = ".venv/bin/python"] = process.argv.slice(2);
const transport = new StdioClientTransport({
  command: python,
  args: ["-m", "micro_rag_mcp", "--data-folder", folder, "--title", "Docs", "--inst", "x"],
  stderr: "ignore",
});
const client = new Client({ name: "ts-check", version: "1.0.0" });
const updated = [];
let listChanged = 0;
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => updated.push(n.params.uri));
client.setNotificationHandler(ResourceListChangedNotificationSchema, () => listChanged++);
await client.connect(transport);
const ok = (what, detail = "") => console.log(`ok   ${what}${detail ? ": " + detail : ""}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const added = join(folder, "ts-check-added.md");
try {
  const caps = client.getServerCapabilities();
  ok("capabilities", JSON.stringify(caps.resources));
  const templates = await client.listResourceTemplates();
  ok("resources/templates/list", templates.resourceTemplates[0].uriTemplate);
  for (let i = 0; i < 600; i++) {  // the start-up pass indexes first
    const index = (await client.callTool({ name: "search", arguments: { query: "the" } })).structuredContent.index;
    if (!index.indexing && index.model === "ready") break;
    await sleep(500);
  }
  const first = await client.listResources();
  const listed = first.resources;
  ok("resources/list", `${listed.length} files, first ${listed[0].uri}`);
  const all = [...listed];
  let pages = 1;
  for (let cursor = first.nextCursor; cursor; pages++) {
    const next = await client.listResources({ cursor });
    all.push(...next.resources);
    cursor = next.nextCursor;
  }
  ok("resources/list paged by nextCursor", `${pages} pages, ${all.length} files`);
  const read = await client.readResource({ uri: listed[0].uri });
  ok("resources/read", `${read.contents[0].text.length} chars, _meta keys ${Object.keys(read.contents[0]._meta["micro-rag/read"]).length}`);
  const range = await client.readResource({ uri: `${listed[0].uri}?char_start=2&char_end=30` });
  const at = range.contents[0]._meta["micro-rag/read"];
  if (range.contents[0].text.length !== 28 || at.char_start !== 2 || at.char_end !== 30) throw new Error(`range read: ${JSON.stringify(at)}`);
  ok("resources/read ?char_start=2&char_end=30", JSON.stringify(range.contents[0].text));
  const pdf = all.find((r) => r.name.endsWith(".pdf"));
  if (pdf) {
    const page = await client.readResource({ uri: `${pdf.uri}?page=2` });
    const where = page.contents[0]._meta["micro-rag/read"];
    if (where.page !== 2) throw new Error(`page read: ${JSON.stringify(where)}`);
    ok(`resources/read ?page=2 of ${pdf.name}`, `page ${where.page}, chars ${where.char_start}-${where.char_end}`);
  }
  const done = await client.complete({
    ref: { type: "ref/resource", uri: templates.resourceTemplates[0].uriTemplate },
    argument: { name: "path", value: listed[0].name.slice(0, 1) },
  });
  ok("completion/complete", done.completion.values.join(", "));
  const search = await client.callTool({ name: "search", arguments: { query: "the" } });
  const kinds = search.content.map((c) => c.type).join(", ");
  ok("tools/call search (structured content checked against its output schema)", kinds);
  const hit = search.structuredContent.results[0];
  if (hit) {
    const back = await client.callTool({ name: "read", arguments: { path: hit.path, anchor: hit.anchor } });
    ok("tools/call read by anchor", `changed=${back.structuredContent.changed}`);
  }
  await client.subscribeResource({ uri: listed[0].uri });
  ok("resources/subscribe");
  const file = readdirSync(folder).find((n) => listed[0].name === n);
  appendFileSync(join(folder, file), "\n\nA line added by the TypeScript check.\n");
  await client.callTool({ name: "reindex", arguments: {} });
  for (let i = 0; i < 200 && !updated.includes(listed[0].uri); i++) await new Promise((r) => setTimeout(r, 100));
  if (!updated.includes(listed[0].uri)) throw new Error("no notifications/resources/updated");
  ok("notifications/resources/updated", updated[0]);
  await client.unsubscribeResource({ uri: listed[0].uri });
  ok("resources/unsubscribe");
  const before = listChanged;
  writeFileSync(added, "# Added\n\nA note the TypeScript check adds.\n");
  await client.callTool({ name: "reindex", arguments: {} });
  for (let i = 0; i < 200 && listChanged === before; i++) await sleep(100);
  if (listChanged === before) throw new Error("no notifications/resources/list_changed");
  ok("notifications/resources/list_changed", "a file added");
  const refused = await client.callTool({ name: "search", arguments: { query: "x", top_k: 99 } });
  if (!refused.isError) throw new Error("top_k 99 was not refused");
  ok("tools/call with a bad argument: isError", refused.content[0].text);
} catch (e) {
  console.log(`FAIL ${e.stack ?? e}`);
  process.exitCode = 1;
} finally {
  rmSync(added, { force: true });
  await client.close();
}
