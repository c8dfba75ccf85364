'use strict'
// Shared setup of the package's tests: the reference rg binary, fixture
// trees built from specs (as tests/util/tree.rs builds them), the two argv
// vectors, a real spawn of rg, and the raw comparison of contract.md §2
// (level 1: grep's elapsed masked and its per-file blocks sorted, stderr
// as sorted lines).

const assert = require('node:assert/strict')
const { spawn, execFileSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const REFERENCE = 'ripgrep 15.2.0'
const FIXTURES = path.join(__dirname, '..', '..', '..', 'fixtures')
const VCS = ['.git', '.svn', '.hg', '.bzr', '.jj', '.sl']

/** The rg 15.2.0 binary: DSH_SEARCH_RG (scripts/test sets it). Missing is a failure. */
function rgBinary() {
  const bin = process.env.DSH_SEARCH_RG
  if (!bin) {
    throw new Error('DSH_SEARCH_RG is not set: run the tests through scripts/test, which installs ripgrep 15.2.0 and sets it')
  }
  let version
  try {
    version = execFileSync(bin, ['--version'], { encoding: 'utf8' }).split('\n')[0]
  } catch (e) {
    throw new Error(`DSH_SEARCH_RG=${bin} cannot be run: ${e.message}`)
  }
  if (version !== REFERENCE) throw new Error(`DSH_SEARCH_RG=${bin} is ${version}, not ${REFERENCE}`)
  return bin
}

let controlled = false
/**
 * Fix the variables through which rg and the engine find git's global
 * excludes (rg-semantics.md W3), for both at once: the engine reads this
 * process's environment and rg inherits it (as tests/util/rg.rs does).
 */
function controlEnvironment() {
  if (controlled) return
  controlled = true
  const ctl = fs.mkdtempSync(path.join(os.tmpdir(), 'dsh-node-env-'))
  const home = path.join(ctl, 'home')
  fs.mkdirSync(path.join(home, '.config', 'git'), { recursive: true })
  const excludes = path.join(ctl, 'global-excludes')
  fs.writeFileSync(excludes, '*.globalignored\nglobal-dir/\n')
  fs.writeFileSync(path.join(home, '.gitconfig'), `[core]\n\texcludesFile = ${excludes}\n`)
  process.env.HOME = home
  process.env.XDG_CONFIG_HOME = path.join(home, '.config')
  delete process.env.GIT_CONFIG_GLOBAL
  process.env.GIT_CONFIG_SYSTEM = path.join(ctl, 'no-system-gitconfig')
  delete process.env.RIPGREP_CONFIG_PATH
  process.on('exit', () => fs.rmSync(ctl, { recursive: true, force: true }))
}

// Tree specs, as tests/util/tree.rs: paths are relative to the root and
// may be Buffers (non-UTF-8 names).
const file = (p, content) => ({ kind: 'file', p, content })
const fixture = (p, name) => ({ kind: 'fixture', p, name })
const dir = (p) => ({ kind: 'dir', p })
const symlink = (p, target) => ({ kind: 'symlink', p, target })
const mtime = (p, secs) => ({ kind: 'mtime', p, secs })

/** The mtime of a spec'd file: a fixed base plus `secs`, so ties are deliberate. */
const BASE = 1_700_000_000

function join(root, p) {
  return Buffer.concat([Buffer.from(root + '/'), Buffer.isBuffer(p) ? p : Buffer.from(p)])
}

/** Build `specs` in a fresh directory under /tmp; returns its path and a cleanup. */
function buildTree(specs) {
  const root = fs.mkdtempSync('/tmp/dsh-node-conf-')
  const files = []
  const explicit = []
  for (const s of specs) {
    const full = join(root, s.p)
    const parent = full.subarray(0, full.lastIndexOf('/'))
    if (s.kind !== 'mtime') fs.mkdirSync(parent, { recursive: true })
    if (s.kind === 'file') {
      fs.writeFileSync(full, s.content)
      files.push(full)
    } else if (s.kind === 'fixture') {
      fs.copyFileSync(path.join(FIXTURES, s.name), full)
      files.push(full)
    } else if (s.kind === 'dir') {
      fs.mkdirSync(full, { recursive: true })
    } else if (s.kind === 'symlink') {
      fs.symlinkSync(s.target, full)
    } else if (s.kind === 'mtime') {
      explicit.push([full, s.secs])
    }
  }
  files.forEach((f, i) => fs.utimesSync(f, BASE + i, BASE + i))
  for (const [f, secs] of explicit) fs.utimesSync(f, BASE + secs, BASE + secs)
  return { root, cleanup: () => fs.rmSync(root, { recursive: true, force: true }) }
}

/** The glob argv of contract.md §2, without the program name. */
function globArgv(pattern, p) {
  const argv = ['--no-config', '--files', `--glob=${pattern}`, '--sort=modified', '--no-ignore', '--hidden']
  for (const d of VCS) argv.push(`--glob=!**/${d}`, `--glob=!**/${d}/**`)
  if (p !== undefined && p !== null) argv.push('--', p)
  return argv
}

/** The grep argv of contract.md §2, without the program name. */
function grepArgv(pattern, p, include) {
  const argv = ['--no-config', '--json', `--regexp=${pattern}`]
  if (include !== undefined && include !== null) argv.push(`--glob=${include}`)
  if (p !== undefined && p !== null) argv.push('--', p)
  return argv
}

/**
 * Spawn the real rg with `argv` in `cwd` (stdin /dev/null) and collect
 * everything. Under Wine a start now and then fails before the program runs
 * (`spawn UNKNOWN`; README "Platforms"): started again, at most three times.
 */
async function spawnRg(bin, argv, cwd) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await spawnRgOnce(bin, argv, cwd)
    } catch (e) {
      if (process.platform !== 'win32' || e.code !== 'UNKNOWN' || attempt === 3) throw e
    }
  }
}

function spawnRgOnce(bin, argv, cwd) {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, argv, { cwd, stdio: ['ignore', 'pipe', 'pipe'] })
    const out = []
    const err = []
    child.stdout.on('data', (b) => out.push(b))
    child.stderr.on('data', (b) => err.push(b))
    child.on('error', reject)
    child.on('close', (exitCode, signal) => {
      if (signal) reject(new Error(`rg was killed by ${signal}`))
      else resolve({ stdout: Buffer.concat(out), stderr: Buffer.concat(err), exitCode })
    })
  })
}

const ELAPSED = /"(elapsed|elapsed_total)":\{[^{}]*\}/g

/**
 * Level 1 of contract.md §2: glob stdout as bytes; grep stdout with the
 * elapsed objects masked and the begin…end blocks sorted; stderr as a
 * sorted list of lines; the exit code.
 */
function normalize(kind, out) {
  let stdout = out.stdout.toString('latin1')
  if (kind === 'grep') {
    const lines = stdout.replace(ELAPSED, '"$1":"[ELAPSED]"').split('\n')
    const blocks = []
    let block = null
    const rest = []
    for (const line of lines) {
      if (line.startsWith('{"type":"begin"')) block = []
      if (block) block.push(line)
      else rest.push(line)
      if (line.startsWith('{"type":"end"')) {
        blocks.push(block.join('\n'))
        block = null
      }
    }
    if (block) blocks.push(block.join('\n'))
    stdout = [...blocks.sort(), ...rest].join('\n')
  }
  const stderr = out.stderr
    .toString('latin1')
    .split('\n')
    .filter((l) => l !== '')
    .sort()
  return { stdout, stderr, exitCode: out.exitCode }
}

/** Compare one case's two outputs; a failure message, or null. */
function compare(kind, label, actual, expected) {
  try {
    assert.deepStrictEqual(normalize(kind, actual), normalize(kind, expected))
    return null
  } catch (e) {
    return `${label}\n${e.message}`
  }
}

/** A glob case: `{kind, pattern, path?, cwd?}`; a grep case with `include?`. */
const glob = (pattern, p, cwd = '') => ({ kind: 'glob', pattern, p, cwd })
const grep = (pattern, p, include, cwd = '') => ({ kind: 'grep', pattern, p, include, cwd })

function argvOf(c, root) {
  const p = c.p === undefined || c.p === null ? c.p : c.p.replace('{root}', root)
  return c.kind === 'glob' ? globArgv(c.pattern, p) : grepArgv(c.pattern, p, c.include)
}

function label(c) {
  const parts = [c.kind, JSON.stringify(c.pattern)]
  if (c.p != null) parts.push(`path=${JSON.stringify(c.p)}`)
  if (c.include != null) parts.push(`include=${JSON.stringify(c.include)}`)
  if (c.cwd) parts.push(`cwd=${c.cwd}`)
  return parts.join(' ')
}

/** A tree of `n` files in nested directories, for the long searches. */
function largeTree(n) {
  const root = fs.mkdtempSync('/tmp/dsh-node-large-')
  const line = 'lorem ipsum dolor sit amet consectetur adipiscing elit sed do\n'
  const body = line.repeat(200)
  for (let i = 0; i < n; i++) {
    const d = path.join(root, `d${i % 50}`, `e${Math.floor(i / 50) % 20}`)
    fs.mkdirSync(d, { recursive: true })
    fs.writeFileSync(path.join(d, `f${i}.txt`), i % 997 === 0 ? `${body}rare_needle_${i}\n` : body)
  }
  return { root, cleanup: () => fs.rmSync(root, { recursive: true, force: true }) }
}

/**
 * A tree from `largeTree(n)` on which `search(root)` (warmed up once) takes
 * at least `minMs`: a release build of the addon searches 2,000 files in
 * tens of milliseconds, too quickly to be stopped in the middle, so the tree
 * grows fourfold until a search lasts (at most 64,000 files). Returns the
 * tree and the time of one search on it.
 */
async function longTree(n, search, minMs) {
  for (;;) {
    const tree = largeTree(n)
    await search(tree.root)
    const t0 = performance.now()
    await search(tree.root)
    const ms = performance.now() - t0
    if (ms >= minMs || n >= 64000) return { tree, ms }
    tree.cleanup()
    n *= 4
  }
}

/** `text` as a literal inside a RegExp. */
function escapeRegExp(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

/**
 * Why a test cannot run on this platform (a `skip` reason for node:test),
 * or false: what Windows has no such thing as. The Rust suite keeps the
 * same cases `#[cfg(unix)]` (README "Platforms").
 */
const UNIX_ONLY = {
  fifo: process.platform === 'win32' && 'FIFOs (mkfifo) are Unix-only',
  names: process.platform === 'win32' && 'non-UTF-8 names and names with control characters cannot exist on Windows',
}

module.exports = {
  UNIX_ONLY,
  escapeRegExp,
  rgBinary,
  controlEnvironment,
  file,
  fixture,
  dir,
  symlink,
  mtime,
  buildTree,
  globArgv,
  grepArgv,
  spawnRg,
  normalize,
  compare,
  glob,
  grep,
  argvOf,
  label,
  largeTree,
  longTree,
}
