// The npm packages as a user gets them (docs/packaging.md): run by
// scripts/test-packages in a fresh directory where the packed tarballs
// (the main package `dsh-search` and this platform's `@dsh-search/KEY`)
// were installed with an empty npm cache, offline, with no cargo or rustc
// on PATH. Compared with the reference rg 15.2.0 (DSH_SEARCH_RG) and with
// the repository's build of the command line (DSH_SEARCH_BIN), never with
// output of the packages themselves.

"use strict";

const assert = require("node:assert/strict");
const { execFileSync, spawnSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { after, test } = require("node:test");

const RG = process.env.DSH_SEARCH_RG;
const CLI = process.env.DSH_SEARCH_BIN;
assert.ok(RG && CLI, "DSH_SEARCH_RG (rg 15.2.0) and DSH_SEARCH_BIN (the repository's dsh-search) are set");
const APP = process.cwd();
const pkg = require(path.join(APP, "node_modules", "dsh-search", "package.json"));

/**
 * How the package's command starts: npm's `.bin` link on Linux; on Windows
 * its launcher under node (npm's `.cmd` shim needs a shell); where an
 * emulated process cannot start the platform's executables
 * (DSH_SEARCH_PKG_EMULATOR, e.g. qemu-aarch64 without binfmt_misc) the
 * platform package's binary under that emulator, the launcher left out.
 */
function command(args) {
  const emulator = process.env.DSH_SEARCH_PKG_EMULATOR;
  if (emulator) {
    const [cmd, ...pre] = emulator.split(" ");
    const { binaryPath } = require(path.join(APP, "node_modules", "dsh-search", "load.js"));
    return [cmd, [...pre, binaryPath(), ...args]];
  }
  if (process.platform === "win32") {
    return [process.execPath, [path.join(APP, "node_modules", "dsh-search", "bin", "dsh-search.js"), ...args]];
  }
  return [path.join(APP, "node_modules", ".bin", "dsh-search"), args];
}

const made = [];
after(() => made.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));
function tempdir(prefix) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/** A tree with distinct mtimes (glob sorts by them), a binary file, CRLF, a .git to leave out. */
function tree() {
  const root = tempdir("dsh-pkg-node-");
  const files = [
    ["src/main.rs", 'fn main() {\n    println!("hello");\n}\n'],
    ["src/lib.rs", "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n"],
    ["README.md", "# demo\nhello from the readme\n"],
    ["docs/guide.md", "TODO: write\r\nhello\r\n"],
    ["data.bin", "hello\0binary\n"],
    [".hidden/notes.txt", "hello hidden\n"],
    [".git/config", "hello git\n"],
  ];
  files.forEach(([name, text], i) => {
    const file = path.join(root, name);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, text);
    fs.utimesSync(file, 1_600_000_000 + i, 1_600_000_000 + i);
  });
  return root;
}

const VCS = [".git", ".svn", ".hg", ".bzr", ".jj", ".sl"];
function globArgv(pattern, p) {
  const argv = ["--no-config", "--files", `--glob=${pattern}`, "--sort=modified", "--no-ignore", "--hidden"];
  for (const d of VCS) argv.push(`--glob=!**/${d}`, `--glob=!**/${d}/**`);
  return p === undefined ? argv : [...argv, "--", p];
}
function grepArgv(pattern, p, include) {
  const argv = ["--no-config", "--json", `--regexp=${pattern}`];
  if (include !== undefined) argv.push(`--glob=${include}`);
  return p === undefined ? argv : [...argv, "--", p];
}

/** rg's output with grep's timings masked and its per-file blocks in path order (rg's own is its threads'). */
function normalize(out) {
  const lines = out.stdout.toString("latin1").replace(/"(elapsed|elapsed_total)":\{[^{}]*\}/g, '"$1":"[ELAPSED]"').split("\n");
  const blocks = [];
  const rest = [];
  let block = null;
  for (const line of lines) {
    if (line.startsWith('{"type":"begin"')) block = [];
    (block || rest).push(line);
    if (line.startsWith('{"type":"end"')) {
      blocks.push(block.join("\n"));
      block = null;
    }
  }
  return { stdout: [...blocks.sort(), ...rest].join("\n"), stderr: out.stderr.toString("latin1"), exitCode: out.exitCode };
}

const RG_CASES = [
  ["glob all", globArgv("*")],
  ["glob *.md", globArgv("*.md")],
  ["glob under a path", globArgv("**/*.rs", "src")],
  ["glob nothing", globArgv("*.zig")],
  ["glob a missing path", globArgv("*", "nope")],
  ["grep hello", grepArgv("hello")],
  ["grep with include", grepArgv("fn \\w+", undefined, "*.rs")],
  ["grep CRLF", grepArgv("^hello$", "docs")],
  ["grep nothing", grepArgv("zzz_absent")],
  ["grep a bad regex", grepArgv("fn (")],
];

test("rg() answers as rg 15.2.0 does", async () => {
  const { rg } = require("dsh-search");
  const root = tree();
  const failures = [];
  for (const [name, argv] of RG_CASES) {
    const got = await rg(argv, { cwd: root });
    // stdin at /dev/null, as a harness spawns rg: a pipe would be searched.
    const r = spawnSync(RG, argv, { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    const want = { stdout: r.stdout, stderr: r.stderr, exitCode: r.status };
    try {
      assert.deepEqual(normalize(got), normalize(want));
    } catch (e) {
      failures.push(`${name}: ${e.message}`);
    }
  }
  assert.deepEqual(failures, []);
  // Every case checked something: rg itself found files and matches.
  assert.ok(spawnSync(RG, RG_CASES[5][1], { cwd: root, stdio: ["ignore", "pipe", "pipe"] }).stdout.includes('"type":"match"'));
});

/** What the repository's `dsh-search --cwd ROOT --session S ARGS` prints. */
function cli(root, session, ...args) {
  const r = spawnSync(CLI, ["--cwd", root, "--session", session, ...args], { encoding: "utf8" });
  return r.stdout.replace(/\n$/, "");
}

test("Tools glob, grep, read and edit give the command line's texts", async () => {
  const { Tools } = require("dsh-search");
  const tools = new Tools();
  const root = tree();
  const mirror = tree();
  const call = async (name, args) => (await tools.call(name, args, { cwd: root, session: "s" })).content;
  const cases = [
    ["glob", { pattern: "**/*.md" }, ["glob", "**/*.md"]],
    ["grep", { pattern: "hello", include: "*.md" }, ["grep", "hello", "--include", "*.md"]],
    ["grep", { pattern: "zzz_absent" }, ["grep", "zzz_absent"]],
    ["read", { file_path: "src/lib.rs" }, ["read", "src/lib.rs"]],
    ["edit", { file_path: "src/lib.rs", old_string: "a + b", new_string: "a - b" }, ["edit", "src/lib.rs", "--old", "a + b", "--new", "a - b"]],
  ];
  for (const [name, args, argv] of cases) {
    const got = (await call(name, args)).replaceAll(root, "[ROOT]");
    const want = cli(mirror, "s", ...argv).replaceAll(mirror, "[ROOT]");
    assert.equal(got, want, `${name} ${JSON.stringify(args)}`);
  }
  assert.equal(fs.readFileSync(path.join(root, "src/lib.rs"), "utf8"), "pub fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n");
});

test("the package's dsh-search command is the platform binary, with the package's version", () => {
  const run = (...args) => spawnSync(...command(args), { encoding: "utf8" });
  assert.equal(run("--version").stdout.trim(), `dsh-search ${pkg.version}`);
  const root = tree();
  const cases = [
    ["a match", ["grep", "hello"], 0],
    ["no match", ["grep", "zzz_absent"], 1],
    ["an error", ["grep", "fn ("], 2],
  ];
  for (const [name, args, status] of cases) {
    const got = run("--cwd", root, ...args);
    const want = spawnSync(CLI, ["--cwd", root, ...args], { encoding: "utf8" });
    assert.deepEqual([got.stdout, got.status], [want.stdout, want.status], name);
    assert.equal(got.status, status, name);
  }
});

test("npx dsh-search mcp answers tools/list and a grep from the TypeScript MCP SDK", async () => {
  const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
  const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
  const root = tree();
  // npx where it runs as a user runs it; elsewhere the command as above.
  const native = process.platform !== "win32" && !process.env.DSH_SEARCH_PKG_EMULATOR;
  const [cmd, args] = native ? ["npx", ["-y", "dsh-search", "--cwd", root, "mcp"]] : command(["--cwd", root, "mcp"]);
  const transport = new StdioClientTransport({
    command: cmd,
    args,
    cwd: APP,
    // npm may not reach a registry: what npx runs is what was installed.
    env: { ...process.env, npm_config_offline: "true" },
    stderr: "pipe",
  });
  const client = new Client({ name: "dsh-search-package-test", version: "1.0.0" });
  await client.connect(transport);
  try {
    const { tools } = await client.listTools();
    const want = JSON.parse(execFileSync(CLI, ["definitions"], { encoding: "utf8" })).map((d) => d.name);
    assert.deepEqual(tools.map((t) => t.name).sort(), [...want].sort());
    const result = await client.callTool({ name: "grep", arguments: { pattern: "fn \\w+", include: "*.rs" } });
    assert.equal(result.isError ?? false, false);
    assert.equal(result.content[0].text, cli(root, "s", "grep", "fn \\w+", "--include", "*.rs"));
  } finally {
    await client.close();
  }
});

/** A copy of the installed app, for a test that breaks it. */
function appCopy() {
  const dir = tempdir("dsh-pkg-app-");
  fs.cpSync(path.join(APP, "node_modules"), path.join(dir, "node_modules"), { recursive: true });
  return dir;
}

/** What `require('dsh-search')` throws in `dir`, run by node with `preload` first. */
function loadError(dir, preload = "") {
  const script = `${preload}; try { require('dsh-search'); console.log('loaded') } catch (e) { console.log(e.message) }`;
  // Under an emulator, node itself is one of the platform's executables.
  const emulator = process.env.DSH_SEARCH_PKG_EMULATOR;
  const [cmd, ...pre] = emulator ? emulator.split(" ") : [process.execPath];
  const args = [...pre, ...(emulator ? [process.execPath] : []), "-e", script];
  return execFileSync(cmd, args, { cwd: dir, encoding: "utf8" }).trim();
}

const platformDir = (dir) => {
  const scope = path.join(dir, "node_modules", "@dsh-search");
  const [key] = fs.readdirSync(scope);
  return { key, dir: path.join(scope, key) };
};

test("refused with a message: another platform, a missing, mismatched or corrupt platform package", () => {
  const platforms = Object.keys(require(path.join(APP, "node_modules", "dsh-search", "platforms.json")));
  const cases = [
    [
      "an unsupported platform",
      () => {
        const dir = appCopy();
        return [dir, "Object.defineProperty(process, 'platform', { value: 'aix' })"];
      },
      (msg) => msg.includes("no prebuilt package for aix-") && msg.includes(`packages exist for ${platforms.join(", ")}`),
    ],
    [
      "the platform package missing",
      () => {
        const dir = appCopy();
        fs.rmSync(platformDir(dir).dir, { recursive: true });
        return [dir, ""];
      },
      (msg) => /the platform package @dsh-search\/[\w-]+ for .* is not installed/.test(msg),
    ],
    [
      "a platform package of another version",
      () => {
        const dir = appCopy();
        const manifest = path.join(platformDir(dir).dir, "package.json");
        const m = JSON.parse(fs.readFileSync(manifest, "utf8"));
        m.version = "0.0.0-other";
        fs.writeFileSync(manifest, JSON.stringify(m));
        return [dir, ""];
      },
      (msg) => msg.includes(`is version 0.0.0-other but dsh-search is ${pkg.version}`),
    ],
    [
      "a corrupt addon",
      () => {
        const dir = appCopy();
        fs.writeFileSync(path.join(platformDir(dir).dir, "dsh-search.node"), "not an addon");
        return [dir, ""];
      },
      (msg) => msg.includes("dsh-search.node") && msg.includes("does not load on"),
    ],
  ];
  for (const [name, make, ok] of cases) {
    const msg = loadError(...make());
    assert.ok(ok(msg), `${name}: ${msg}`);
  }
  assert.equal(loadError(APP), "loaded");
});

/** The launcher started by node (under the emulator where there is one), with `env` added. */
function launch(app, args, env = {}) {
  const launcher = path.join(app, "node_modules", "dsh-search", "bin", "dsh-search.js");
  const emulator = process.env.DSH_SEARCH_PKG_EMULATOR;
  const [cmd, ...pre] = emulator ? emulator.split(" ") : [process.execPath];
  const argv = [...pre, ...(emulator ? [process.execPath] : []), launcher, ...args];
  return spawnSync(cmd, argv, { cwd: tempdir("dsh-pkg-cwd-"), env: { ...process.env, ...env }, encoding: "utf8" });
}

// The launcher passes signals on (a child killed by SIGUSR1 made node start its
// inspector and exit 2). The platform binary is replaced by a script that
// kills itself with the signal it is given.
test(
  "the launcher passes on a child's death by a signal: 128+n for those node keeps",
  { skip: process.platform === "win32" && "Windows has no signals to die of" },
  () => {
    const dir = appCopy();
    const bin = path.join(platformDir(dir).dir, "bin", "dsh-search");
    fs.writeFileSync(bin, '#!/bin/sh\nkill -s "$1" $$\n');
    fs.chmodSync(bin, 0o755);
    const cases = [
      // node starts its inspector at SIGUSR1 and ignores SIGPIPE and SIGXFSZ.
      ["USR1", 128 + os.constants.signals.SIGUSR1, null],
      ["PIPE", 128 + os.constants.signals.SIGPIPE, null],
      ["XFSZ", 128 + os.constants.signals.SIGXFSZ, null],
      // Any other: the launcher dies of it, as its child did.
      ["TERM", null, "SIGTERM"],
      ["USR2", null, "SIGUSR2"],
    ];
    for (const [signal, status, died] of cases) {
      const r = launch(dir, [signal]);
      assert.deepEqual([r.status, r.signal], [status, died], `SIG${signal}: ${r.stderr}`);
      assert.doesNotMatch(r.stderr, /Debugger listening/, `SIG${signal}`);
    }
  },
);

/** `cmd` run with `args` given as bytes: sh builds each with printf, since spawn encodes its arguments as UTF-8. */
function runBytes(cmd, args) {
  const octal = (b) => [...b].map((c) => `\\${c.toString(8).padStart(3, "0")}`).join("");
  const script = `exec "$0" ${args.map((a) => `"$(printf '${octal(a)}')"`).join(" ")}`;
  const r = spawnSync("/bin/sh", ["-c", script, cmd]);
  return { stdout: r.stdout.toString("latin1"), stderr: r.stderr.toString("latin1"), status: r.status };
}

// The launcher passes argument bytes on (node decodes its arguments with U+FFFD in place of
// bytes that are not UTF-8: `glob $'\xe9*'` answered "No files found"
// where the binary refuses the argument).
test(
  "an argument that is not UTF-8 reaches the binary as its bytes; a genuine U+FFFD as text",
  {
    skip:
      (process.platform === "win32" && "Windows gives node its arguments in UTF-16") ||
      (process.env.DSH_SEARCH_PKG_EMULATOR && "the launcher cannot start the binary under the emulator (see command())"),
  },
  () => {
    const root = tree();
    const latin1 = Buffer.concat([Buffer.from(`${root}/`), Buffer.from([0xe9]), Buffer.from("dir")]);
    fs.mkdirSync(latin1);
    fs.writeFileSync(Buffer.concat([latin1, Buffer.from("/notes.txt")]), "hello from a latin-1 directory\n");
    fs.writeFileSync(path.join(root, "replacement.txt"), "a \uFFFD here\n");
    const [cmd, pre] = command([]);
    const b = (...parts) => Buffer.concat(parts.map((p) => (typeof p === "string" ? Buffer.from(p) : p)));
    const cases = [
      ["a glob that is not UTF-8", [b("--cwd"), b(root), b("glob"), b(Buffer.from([0xe9]), "*")], 2],
      ["a --cwd that is not UTF-8", [b("--cwd"), latin1, b("grep"), b("hello")], 0],
      ["a pattern with a genuine U+FFFD", [b("--cwd"), b(root), b("grep"), b("a \uFFFD")], 0],
    ];
    for (const [name, args, status] of cases) {
      const got = runBytes(cmd, [...pre.map((a) => Buffer.from(a)), ...args]);
      const want = runBytes(CLI, args);
      assert.deepEqual(got, want, name);
      assert.equal(got.status, status, `${name}: ${got.stderr}`);
    }
  },
);
