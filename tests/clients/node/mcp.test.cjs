// `dsh-search mcp` driven by the official TypeScript MCP SDK
// (@modelcontextprotocol/sdk 1.x), under node's test runner.
//
// Run by scripts/test, which installs the SDK into
// ${XDG_CACHE_HOME:-$HOME/.cache}/dsh-search/ (NODE_PATH points there, so
// this file is CommonJS: NODE_PATH only serves `require`) and sets
// DSH_SEARCH_BIN to the binary.

"use strict";

const assert = require("node:assert/strict");
const { execFileSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { after, test } = require("node:test");
const { pathToFileURL } = require("node:url");

const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { ListRootsRequestSchema } = require("@modelcontextprotocol/sdk/types.js");

const BIN = process.env.DSH_SEARCH_BIN;
assert.ok(BIN, "DSH_SEARCH_BIN names the dsh-search binary");

const made = [];
const open = [];
// Closed here too, so that a failed assertion cannot leave a server running
// (and the test runner waiting on it).
after(async () => {
  await Promise.allSettled(open.map((client) => client.close()));
  made.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true }));
});

function tempdir(prefix) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/** src/main.rs, src/lib.rs, README.md, notes.txt and a FIFO `pipe`. */
function tree() {
  const root = tempdir("dsh-mcp-node-");
  fs.mkdirSync(path.join(root, "src"));
  fs.writeFileSync(path.join(root, "src/main.rs"), 'fn main() {\n    println!("hello");\n}\n');
  fs.writeFileSync(path.join(root, "src/lib.rs"), "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n");
  fs.writeFileSync(path.join(root, "README.md"), "# demo\nhello from the readme\n");
  fs.writeFileSync(path.join(root, "notes.txt"), "alpha\nbeta\n");
  execFileSync("mkfifo", [path.join(root, "pipe")]);
  return root;
}

/** What `dsh-search --cwd ROOT ARGS` prints (exit 1 and 2 included). */
function cli(root, ...args) {
  try {
    return execFileSync(BIN, ["--cwd", root, ...args], { encoding: "utf8" });
  } catch (e) {
    return e.stdout;
  }
}

/** A connected client on `dsh-search ARGS mcp MCPARGS`, and the server's stderr. */
async function connect(args, { cwd, roots, mcpArgs = [] } = {}) {
  const transport = new StdioClientTransport({
    command: BIN,
    args: [...args, "mcp", ...mcpArgs],
    cwd,
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr.on("data", (chunk) => {
    stderr += chunk;
  });
  const capabilities = roots ? { roots: { listChanged: true } } : {};
  const client = new Client({ name: "dsh-search-node-test", version: "1.0.0" }, { capabilities });
  if (roots) {
    client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots }));
  }
  await client.connect(transport);
  open.push(client);
  return {
    client,
    call: (name, args, options) => client.callTool({ name, arguments: args }, undefined, options),
    /** stderr once it contains `needle` (60 s hang guard). */
    async stderrSays(needle) {
      const deadline = Date.now() + 60_000;
      while (!stderr.includes(needle)) {
        if (Date.now() > deadline) throw new Error(`stderr never said ${needle}:\n${stderr}`);
        await new Promise((r) => setTimeout(r, 20));
      }
      return stderr;
    },
    close: () => client.close(),
  };
}

function text(result) {
  assert.equal(result.content.length, 1, JSON.stringify(result));
  assert.equal(result.content[0].type, "text");
  return result.content[0].text;
}

test("the tools are the definitions", async () => {
  const root = tree();
  const definitions = JSON.parse(cli(root, "definitions"));
  const conn = await connect(["--cwd", root]);
  const { tools } = await conn.client.listTools();
  await conn.close();
  assert.deepEqual(
    tools.map((t) => t.name),
    definitions.map((d) => d.name),
  );
  tools.forEach((tool, i) => {
    assert.equal(tool.description, definitions[i].description);
    assert.deepEqual(tool.inputSchema, definitions[i].parameters);
  });
});

test("grep and glob print what the CLI prints", async () => {
  const root = tree();
  const searches = [
    ["grep", { pattern: "fn " }, ["grep", "fn "]],
    ["grep", { pattern: "hello", include: "*.md" }, ["grep", "hello", "--include", "*.md"]],
    ["grep", { pattern: "a \\+ b", path: "src/lib.rs" }, ["grep", "a \\+ b", "src/lib.rs"]],
    ["grep", { pattern: "nothing_here" }, ["grep", "nothing_here"]],
    ["grep", { pattern: "fn (" }, ["grep", "fn ("]],
    ["glob", { pattern: "*.rs" }, ["glob", "*.rs"]],
    ["glob", { pattern: "*", path: "src" }, ["glob", "*", "src"]],
    ["glob", { pattern: "*.zip" }, ["glob", "*.zip"]],
  ];
  const conn = await connect(["--cwd", root]);
  for (const [tool, args, argv] of searches) {
    const result = await conn.call(tool, args);
    assert.equal(text(result) + "\n", cli(root, ...argv), `${tool} ${JSON.stringify(args)}`);
    assert.equal(result.isError, text(result).startsWith("Error: "));
    // The text alone: a client that shows the model structuredContent
    // instead would show it nothing else.
    assert.equal(result.structuredContent, undefined);
  }
  await conn.close();
});

test("read then edit in one connection; edit without read is refused", async () => {
  const root = tree();
  const notes = path.join(root, "notes.txt");
  const edit = { file_path: "notes.txt", old_string: "alpha", new_string: "gamma" };
  const conn = await connect(["--cwd", root]);
  const refused = await conn.call("edit", edit);
  assert.equal(refused.isError, true);
  assert.equal(text(refused), `Error: edit requires reading "${notes}" first — read the file, then retry`);
  assert.equal(refused._meta["dsh-search/error"].info.code, "FS_NOT_OBSERVED");
  const read = await conn.call("read", { file_path: "notes.txt" });
  assert.equal(
    text(read),
    `<path>${notes}</path>\n<type>file</type>\n<content>\n1: alpha\n2: beta\n\n(End of file - total 2 lines)\n</content>`,
  );
  const done = await conn.call("edit", edit);
  assert.equal(done.isError, false, JSON.stringify(done));
  assert.equal(text(done), `The file ${notes} has been updated successfully.`);
  assert.equal(fs.readFileSync(notes, "utf8"), "gamma\nbeta\n");
  await conn.close();
});

test("an aborted grep is cancelled on the server", async () => {
  const root = tree();
  const conn = await connect(["--cwd", root]);
  const abort = new AbortController();
  // A grep of a FIFO never ends by itself (until the 30 s timeout).
  const pending = conn.call("grep", { pattern: "x", path: "pipe" }, { signal: abort.signal });
  setTimeout(() => abort.abort("test"), 500);
  await assert.rejects(pending);
  const log = await conn.stderrSays("(grep) cancelled by the client");
  assert.match(log, /ended with SEARCH_ABORTED/);
  const after = await conn.call("grep", { pattern: "println" });
  assert.equal(text(after), 'Found 1 match\n\nsrc/main.rs\nLine 2:     println!("hello");');
  await conn.close();
});

test("the workdir is the client's first file root", async () => {
  const root = tree();
  const elsewhere = tempdir("dsh-mcp-node-cwd-");
  const conn = await connect([], {
    cwd: elsewhere,
    roots: [{ uri: "https://example.com/x" }, { uri: pathToFileURL(root).href }],
  });
  const result = await conn.call("glob", { pattern: "*.rs" });
  await conn.close();
  assert.equal(text(result) + "\n", cli(root, "glob", "*.rs"));
});

test("bad calls get clear errors and the connection goes on", async () => {
  const root = tree();
  const conn = await connect(["--cwd", root]);
  const nul = await conn.call("grep", { pattern: "a\u0000b" });
  assert.equal(nul.isError, true);
  assert.match(text(nul), /^Error: /);
  const wrong = await conn.call("grep", { pattern: 5 });
  assert.equal(text(wrong), 'Error: invalid arguments: "pattern" must be a string');
  let nested = "x";
  for (let i = 0; i < 300; i++) nested = { a: nested };
  await assert.rejects(conn.call("grep", { pattern: nested }), /recursion limit exceeded/);
  await assert.rejects(conn.call("nope", {}), /unknown tool "nope"/);
  const ok = await conn.call("glob", { pattern: "lib.rs" });
  assert.equal(text(ok), "src/lib.rs");
  await conn.close();
});

const LARGE_FILES = 10_000;
const TEXT_CAP = 50_000; // maxInlineBytes
const META_CAP = 65_536; // searchMetaMaxBytes

/** 10,000 files in 100 directories, three lines with `needle` each:
 * canonical values of hundreds of kilobytes, far past every cap. */
let largeTree;
function large() {
  if (largeTree) return largeTree;
  largeTree = tempdir("dsh-mcp-node-large-");
  for (let k = 0; k < 100; k++) {
    const sub = path.join(largeTree, `d${String(k).padStart(2, "0")}`);
    fs.mkdirSync(sub);
    for (let f = 0; f < LARGE_FILES / 100; f++) {
      const name = `file-${String(f).padStart(3, "0")}.txt`;
      fs.writeFileSync(path.join(sub, name), `needle ${k} ${f}\nsecond needle\nthird needle, the last\n`);
    }
  }
  return largeTree;
}

const bytes = (value) => Buffer.byteLength(JSON.stringify(value));

const largeCalls = [
  ["glob", { pattern: "*" }, { shape: "paths", total: LARGE_FILES, truncated: true }],
  ["grep", { pattern: "needle" }, { shape: "matches", total: 3 * LARGE_FILES, truncated: true }],
];

/** The bound of contract.md §12 on structuredContent and _meta: beside its text, a result
 * carries at most 1 KiB (every field serialized), plus `page` bytes
 * (searchMetaMaxBytes with --meta-page). */
function assertBounded(tool, result, page = 0) {
  assert.ok(Buffer.byteLength(text(result)) <= TEXT_CAP, tool);
  const whole = bytes(result);
  assert.ok(whole <= bytes(text(result)) + page + 1024, `${tool}: a result of ${whole} bytes`);
}

test("a result is its text and little else", async () => {
  const root = large();
  const conn = await connect(["--cwd", root]);
  for (const [tool, args, counts] of largeCalls) {
    const result = await conn.call(tool, args);
    assert.equal(result.isError, false);
    assertBounded(tool, result);
    assert.equal(result.structuredContent, undefined, tool);
    assert.deepEqual(result._meta["dsh-search/meta"], counts, tool);
  }
  await conn.close();
});

test("--structured-content meta gives the counts, full the whole value; --meta-page the page", async () => {
  const root = large();
  let conn = await connect(["--cwd", root], { mcpArgs: ["--structured-content", "meta"] });
  for (const [tool, args, counts] of largeCalls) {
    const result = await conn.call(tool, args);
    assertBounded(tool, result);
    assert.deepEqual(result.structuredContent, counts, tool);
  }
  await conn.close();
  conn = await connect(["--cwd", root], { mcpArgs: ["--meta-page"] });
  for (const [tool, args, counts] of largeCalls) {
    const result = await conn.call(tool, args);
    assertBounded(tool, result, META_CAP);
    assert.equal(result.structuredContent, undefined, tool);
    const page = result._meta["dsh-search/meta"];
    assert.deepEqual({ shape: page.shape, total: page.total, truncated: page.truncated }, counts);
    assert.ok(page[tool === "glob" ? "paths" : "files"].length > 0, tool);
  }
  await conn.close();
  conn = await connect(["--cwd", root], { mcpArgs: ["--structured-content", "full"] });
  const glob = await conn.call("glob", { pattern: "*" });
  assert.equal(glob.structuredContent.paths.length, LARGE_FILES);
  const grep = await conn.call("grep", { pattern: "needle" });
  assert.equal(grep.structuredContent.matches.length, 3 * LARGE_FILES);
  await conn.close();
});
