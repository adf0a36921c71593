// Every result of the resource methods, and search's, through the TypeScript SDK's client,
// which parses each against the protocol's schemas (and a tool's structured content
// against its output schema): a result that does not conform throws.
//
//   npm install @modelcontextprotocol/sdk      (in a folder DIR; ES modules resolve from the script)
//   cp scripts/ts_client_check.mjs DIR && node DIR/ts_client_check.mjs FOLDER [PYTHON]
//
// FOLDER is a data folder with at least one .md file; PYTHON runs the server
// (default: .venv/bin/python). Prints one line per check and exits 1 on the first failure.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ResourceUpdatedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { appendFileSync, readdirSync } from "node:fs";
import { join } from "node:path";

const [folder, python = ".venv/bin/python"] = process.argv.slice(2);
const transport = new StdioClientTransport({
  command: python,
  args: ["-m", "micro_rag_mcp", "--data-folder", folder, "--title", "Docs", "--inst", "x"],
  stderr: "ignore",
});
const client = new Client({ name: "ts-check", version: "1.0.0" });
const updated = [];
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => updated.push(n.params.uri));
await client.connect(transport);
const ok = (what, detail = "") => console.log(`ok   ${what}${detail ? ": " + detail : ""}`);
try {
  const caps = client.getServerCapabilities();
  ok("capabilities", JSON.stringify(caps.resources));
  const templates = await client.listResourceTemplates();
  ok("resources/templates/list", templates.resourceTemplates[0].uriTemplate);
  let listed = [];
  for (let i = 0; i < 100 && listed.length === 0; i++) {  // the start-up pass indexes first
    listed = (await client.listResources()).resources;
    if (listed.length === 0) await new Promise((r) => setTimeout(r, 300));
  }
  ok("resources/list", `${listed.length} files, first ${listed[0].uri}`);
  const read = await client.readResource({ uri: listed[0].uri });
  ok("resources/read", `${read.contents[0].text.length} chars, _meta keys ${Object.keys(read.contents[0]._meta["micro-rag/read"]).length}`);
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
} catch (e) {
  console.log(`FAIL ${e.stack ?? e}`);
  process.exitCode = 1;
} finally {
  await client.close();
}
