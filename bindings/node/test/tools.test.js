'use strict'
// new Tools(options): definitions, calls on both backends (byte-identical
// results), sessions (the observation policy), cancellation (the tool's
// aborted error), the workspaces (mem, an overlay), bad options and
// arguments (contract.md §12, "Node").

const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { execFileSync } = require('node:child_process')

const { Tools } = require('..')
const h = require('./helpers.js')

h.rgBinary()
h.controlEnvironment()

const TREE = [
  h.file('src/lib.rs', 'pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n'),
  h.file('src/main.rs', 'fn main() { println!("{}", add(1, 2)); }\n'),
  h.file('README.md', '# demo\nadd numbers\n'),
  h.file('.gitignore', 'target/\n'),
  h.file('target/x.rs', 'fn add() {}\n'),
]

const BACKENDS = ['native', 'rg']

test('definitions: the five tools with their schemas', () => {
  const defs = new Tools().definitions()
  assert.deepEqual(defs.map((d) => d.name).sort(), ['edit', 'glob', 'grep', 'read', 'write'])
  const grep = defs.find((d) => d.name === 'grep')
  assert.equal(grep.parameters.type, 'object')
  assert.deepEqual(grep.parameters.required, ['pattern'])
  assert.ok(grep.description.length > 0)
})

test('definitions follow the config', () => {
  const defs = new Tools({ config: { sampleOverCapGlobResults: false } }).definitions()
  assert.match(defs.find((d) => d.name === 'glob').description, /first 100 paths in modification-time order/)
})

const SEARCHES = [
  ['grep with an include', 'grep', { pattern: 'add', include: '*.rs' }],
  ['grep over a path', 'grep', { pattern: 'a \\+ b', path: 'src' }],
  ['grep with no match', 'grep', { pattern: 'nothing_here' }],
  ['grep with a bad regex', 'grep', { pattern: '(' }],
  ['glob', 'glob', { pattern: '**/*.rs' }],
  ['glob of a missing path', 'glob', { pattern: '*', path: 'missing' }],
]

for (const [name, tool, args] of SEARCHES) {
  test(`both backends give the same result: ${name}`, async () => {
    const tree = h.buildTree(TREE)
    try {
      const results = {}
      for (const backend of BACKENDS) {
        results[backend] = await new Tools({ backend }).call(tool, args, { cwd: tree.root })
      }
      assert.deepEqual(results.native, results.rg)
      assert.equal(typeof results.native.content, 'string')
    } finally {
      tree.cleanup()
    }
  })
}

test('a grep answers what the model reads', async () => {
  const tree = h.buildTree(TREE)
  try {
    const r = await new Tools().call('grep', { pattern: 'a \\+ b' }, { cwd: tree.root })
    // rg prints the walked path with the platform's separator (src\lib.rs
    // on Windows) and the display path keeps a relative path as printed
    // (seed-reference.md §2.3).
    assert.equal(r.content, `Found 1 match\n\n${path.join('src', 'lib.rs')}\nLine 2:     a + b`)
    assert.equal(r.isError, false)
  } finally {
    tree.cleanup()
  }
})

test('a session: edit needs a read first, then applies', async () => {
  const tree = h.buildTree(TREE)
  try {
    const tools = new Tools()
    const ctx = { cwd: tree.root, session: 's1' }
    const edit = { file_path: 'src/lib.rs', old_string: 'a + b', new_string: 'a.wrapping_add(b)' }
    const refused = await tools.call('edit', edit, ctx)
    assert.equal(refused.isError, true, refused.content)
    assert.equal((await tools.call('read', { file_path: 'src/lib.rs' }, ctx)).isError, false)
    const applied = await tools.call('edit', edit, ctx)
    assert.equal(applied.isError, false, applied.content)
    assert.match(fs.readFileSync(path.join(tree.root, 'src/lib.rs'), 'utf8'), /a\.wrapping_add\(b\)/)
    // Another session has read nothing.
    const other = await tools.call('edit', { ...edit, old_string: 'fn add' }, { cwd: tree.root, session: 's2' })
    assert.equal(other.isError, true)
  } finally {
    tree.cleanup()
  }
})

for (const backend of BACKENDS) {
  test(`an AbortSignal ends the call with the tool's aborted error (${backend})`, { skip: h.UNIX_ONLY.fifo }, async () => {
    const large = h.largeTree(1000)
    try {
      // A FIFO nobody writes keeps the search going until the abort, and
      // 300 ms is long after the call's thread started it even on a
      // loaded machine (before dispatch it is ABORTED_BEFORE_DISPATCH).
      execFileSync('mkfifo', [path.join(large.root, 'pipe')])
      const ac = new AbortController()
      const call = new Tools({ backend }).call('grep', { pattern: 'x', path: 'pipe' }, { cwd: large.root, signal: ac.signal })
      setTimeout(() => ac.abort(), 300)
      const r = await call
      assert.equal(r.isError, true)
      assert.equal(r.error.info.code, 'SEARCH_ABORTED', r.content)
      const before = new AbortController()
      before.abort()
      const r2 = await new Tools({ backend }).call('grep', { pattern: 'x' }, { cwd: large.root, signal: before.signal })
      // seed-reference.md §8.1: a call aborted before it starts is never dispatched.
      assert.equal(r2.error.info.code, 'ABORTED_BEFORE_DISPATCH', r2.content)
    } finally {
      large.cleanup()
    }
  })
}

if (process.platform === 'win32') {
  // contract.md §10: they hold `/`-separated Unix paths, so Windows refuses them.
  test('fs mem, sftp:// and an overlay are refused on Windows with one clear message', () => {
    const tree = h.buildTree(TREE)
    const overlay = path.join(tree.root, 'ov')
    try {
      const refusal = /Tools: mem, overlay and sftp:\/\/ workspaces are not available on Windows: they hold `\/`-separated Unix paths, not drive paths$/
      assert.throws(() => new Tools({ fs: 'mem', root: tree.root }), refusal)
      assert.throws(() => new Tools({ overlay, root: tree.root }), refusal)
      assert.throws(() => new Tools({ fs: 'sftp://u@127.0.0.1:9', knownHosts: path.join(tree.root, 'kh') }), refusal)
      assert.equal(fs.existsSync(overlay), false)
    } finally {
      tree.cleanup()
    }
  })
} else {
  test('fs mem: the tools on a copy in memory leave the disk alone', async () => {
    const tree = h.buildTree(TREE)
    try {
      const tools = new Tools({ fs: 'mem', root: tree.root })
      fs.writeFileSync(path.join(tree.root, 'later.txt'), 'add later\n')
      const g = await tools.call('grep', { pattern: 'add later' }, { cwd: tree.root })
      assert.equal(g.content, 'No matches found', 'the copy was taken at construction')
      const w = await tools.call('write', { file_path: 'new.txt', content: 'add in memory\n' }, { cwd: tree.root, session: 'm' })
      assert.equal(w.isError, false, w.content)
      assert.equal(fs.existsSync(path.join(tree.root, 'new.txt')), false)
      const found = await tools.call('grep', { pattern: 'in memory' }, { cwd: tree.root })
      assert.match(found.content, /new\.txt/)
    } finally {
      tree.cleanup()
    }
  })

  test('an overlay directory takes the writes; every tool sees the merged view', async () => {
    const tree = h.buildTree(TREE)
    const overlay = fs.mkdtempSync(path.join(os.tmpdir(), 'dsh-node-overlay-'))
    try {
      const tools = new Tools({ overlay, root: tree.root })
      const ctx = { cwd: tree.root, session: 'o' }
      await tools.call('write', { file_path: 'staged.txt', content: 'add staged\n' }, ctx)
      assert.equal(fs.existsSync(path.join(tree.root, 'staged.txt')), false)
      const found = await tools.call('grep', { pattern: 'add staged' }, ctx)
      assert.match(found.content, /staged\.txt/)
    } finally {
      tree.cleanup()
      fs.rmSync(overlay, { recursive: true, force: true })
    }
  })
}

const BAD_OPTIONS = [
  ['options not an object', () => new Tools('mem'), /Tools: options must be an object, got string mem/],
  ['an unknown option', () => new Tools({ speed: 1 }), /Tools: unknown option "speed"/],
  ['an unknown backend', () => new Tools({ backend: 'grep' }), /Tools: backend "grep": use native or rg/],
  ['an unknown filesystem', () => new Tools({ fs: 'zip' }), /unknown filesystem "zip"/],
  // A small root (the tests' own directory), not the temporary directory:
  // refused before loading, but a regression would load it whole.
  ['rg over memory', () => new Tools({ backend: 'rg', fs: 'mem', root: __dirname }), /searches the local disk only/],
  ['a bad config value', () => new Tools({ config: { globMaxResults: 0 } }), /globMaxResults must be a positive integer/],
  ['an unknown config key', () => new Tools({ config: { nope: 1 } }), /nope/],
  ['an unknown index watch', () => new Tools({ index: true, indexWatch: 'inotify' }), /Tools: index watch: unknown index watch "inotify": expected "os" .* or "none"/],
  ['an index watch not a string', () => new Tools({ index: true, indexWatch: false }), /Tools: options\.indexWatch must be a string, got/],
  ['an unknown indexWatch config value', () => new Tools({ config: { indexWatch: 'fsevents' } }), /config: indexWatch must be "os" or "none"/],
  ['a root that does not exist', () => new Tools({ fs: 'mem', root: '/nonexistent/dsh' }), /Tools: root: .*not an existing directory/],
]

for (const [name, make, message] of BAD_OPTIONS) {
  test(`bad options throw a clear error: ${name}`, () => {
    assert.throws(make, message)
  })
}

const BAD_CALLS = [
  ['name not a string', (t) => t.call(1, {}, { cwd: '/' }), /Tools.call: name must be a string/],
  ['args missing', (t) => t.call('grep', undefined, { cwd: '/' }), /Tools.call: args must be an object, got nothing/],
  ['args an array', (t) => t.call('grep', [], { cwd: '/' }), /Tools.call: args must be an object, got an array/],
  ['options missing', (t) => t.call('grep', {}), /Tools.call: options must be an object with cwd/],
  ['cwd missing', (t) => t.call('grep', { pattern: 'x' }, {}), /Tools.call: cwd must be a non-empty string/],
  ['cwd does not exist', (t) => t.call('grep', { pattern: 'x' }, { cwd: '/nonexistent/dsh' }), /not an existing directory/],
  ['session a number', (t) => t.call('grep', { pattern: 'x' }, { cwd: '/', session: 5 }), /session must be a string/],
  ['args not serializable', (t) => t.call('grep', { pattern: 1n }, { cwd: '/' }), /args must be JSON-serializable/],
  ['signal a string', (t) => t.call('grep', { pattern: 'x' }, { cwd: '/', signal: 'stop' }), { code: 'ERR_INVALID_ARG_TYPE', message: 'Tools.call: options.signal must be an AbortSignal, got string stop' }],
  [
    'signal without removeEventListener',
    (t) => t.call('grep', { pattern: 'x' }, { cwd: '/', signal: { aborted: false, addEventListener() {} } }),
    { name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE', message: 'Tools.call: options.signal must be an AbortSignal, got an object without removeEventListener' },
  ],
]

for (const [name, call, message] of BAD_CALLS) {
  test(`bad call input is a rejected promise: ${name}`, async () => {
    const p = call(new Tools())
    assert.ok(p instanceof Promise)
    await assert.rejects(p, message)
  })
}

test('a tool-level mistake is a tool result, not a rejection', async () => {
  const tools = new Tools()
  const unknown = await tools.call('grepp', { pattern: 'x' }, { cwd: os.tmpdir() })
  assert.equal(unknown.isError, true)
  const missing = await tools.call('grep', {}, { cwd: os.tmpdir() })
  assert.equal(missing.isError, true)
  assert.match(missing.content, /pattern/)
})

test('index: true answers as the scan does, and sees a write at the next call', async () => {
  const tree = h.buildTree(TREE)
  try {
    // Kept current by the watcher, and validated at each call.
    const indexed = new Tools({ index: true, root: tree.root })
    const validated = new Tools({ index: true, indexWatch: 'none', root: tree.root })
    const scan = new Tools()
    const ctx = { cwd: tree.root }
    const calls = [
      ['grep', { pattern: 'add' }],
      ['grep', { pattern: 'a \\+ b' }],
      ['glob', { pattern: '**/*.rs' }],
    ]
    for (let round = 0; round < 3; round++) {
      for (const [tool, args] of calls) {
        const a = await indexed.call(tool, args, ctx)
        const b = await scan.call(tool, args, ctx)
        const c = await validated.call(tool, args, ctx)
        assert.equal(a.content, b.content, `${tool} ${JSON.stringify(args)}`)
        assert.equal(c.content, b.content, `validated: ${tool} ${JSON.stringify(args)}`)
      }
      const w = await indexed.call('write', { file_path: `src/new${round}.rs`, content: `fn add${round}() {}\n` }, ctx)
      assert.equal(w.isError, false, w.content)
      const r = await indexed.call('grep', { pattern: `add${round}\\(` }, ctx)
      assert.match(r.content, /^Found 1 match/)
      const v = await validated.call('grep', { pattern: `add${round}\\(` }, ctx)
      assert.match(v.content, /^Found 1 match/)
    }
    assert.throws(() => new Tools({ index: 'yes' }), /options\.index must be a boolean/)
    assert.throws(() => new Tools({ index: true, backend: 'rg', root: tree.root }), /index is not available for the rg backend/)
    // In memory, the tree's own journal keeps it current: a write through
    // the tools is in the next call's answer, as in the unindexed copy.
    // Not on Windows, where workspaces in memory are refused (README
    // "Platforms"); that refusal is what this checks there.
    if (process.platform === 'win32') {
      assert.throws(() => new Tools({ index: true, fs: 'mem', root: tree.root }), /not available on Windows/)
      return
    }
    const mem = new Tools({ index: true, fs: 'mem', root: tree.root })
    const memScan = new Tools({ fs: 'mem', root: tree.root })
    for (const t of [mem, memScan]) {
      const w = await t.call('write', { file_path: 'src/in_memory.rs', content: 'fn add_in_memory() {}\n' }, ctx)
      assert.equal(w.isError, false, w.content)
    }
    for (const [tool, args] of [...calls, ['grep', { pattern: 'add_in_memory' }]]) {
      const a = await mem.call(tool, args, ctx)
      const b = await memScan.call(tool, args, ctx)
      assert.equal(a.content, b.content, `mem: ${tool} ${JSON.stringify(args)}`)
    }
    assert.equal(fs.existsSync(path.join(tree.root, 'src/in_memory.rs')), false)
  } finally {
    tree.cleanup()
  }
})
