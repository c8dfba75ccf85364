'use strict'
// new Tools({fs: 'sftp://…'}): glob, grep and read on a workspace over a
// real sshd on 127.0.0.1, against the same calls on the local disk (the
// server sees the same tree at the same path), and the failures a remote
// workspace adds: a refused login, an unknown host key, a cwd that is not
// a remote directory (contract.md §11, §12 "Node").

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')

const { Tools } = require('..')
const h = require('./helpers.js')
const sshd = require('./sshd.js')

h.controlEnvironment()

// SFTP v3 carries whole seconds: buildTree gives every file its own whole
// second, so glob's mtime order cannot fall back on the server's listing
// order for a tie.
const TREE = [
  h.file('src/lib.rs', 'pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n'),
  h.file('src/main.rs', 'fn main() { println!("{}", add(1, 2)); }\n'),
  h.file('src/deep/more.rs', 'fn more() -> i32 { add(2, 3) }\n'),
  h.file('README.md', '# demo\nadd numbers\nline three\nline four\n'),
  // A repository, so that its .gitignore applies (as rg requires).
  h.dir('.git'),
  h.file('.gitignore', 'target/\n'),
  h.file('target/x.rs', 'fn add() {}\n'),
  h.file('.hidden/h.rs', 'fn add_hidden() {}\n'),
]

const CALLS = [
  ['glob **/*.rs', 'glob', { pattern: '**/*.rs' }],
  ['glob * under src', 'glob', { pattern: '*', path: 'src' }],
  ['glob of a missing path', 'glob', { pattern: '*', path: 'missing' }],
  ['grep with an include', 'grep', { pattern: 'add', include: '*.rs' }],
  ['grep over a path', 'grep', { pattern: 'a \\+ b', path: 'src' }],
  ['grep with no match', 'grep', { pattern: 'nothing_here' }],
  ['grep of a missing path', 'grep', { pattern: 'x', path: 'missing.txt' }],
  ['read a file', 'read', { file_path: 'src/lib.rs' }],
  ['read with offset and limit', 'read', { file_path: 'README.md', offset: 2, limit: 2 }],
  ['read a missing file', 'read', { file_path: 'nope.txt' }],
]

let server
let tree

before(async () => {
  server = await sshd.start()
  tree = h.buildTree(TREE)
})

after(() => {
  if (tree) tree.cleanup()
  if (server) server.stop()
})

function remote(extra = {}) {
  return new Tools({
    fs: `sftp://root@127.0.0.1:${server.port}`,
    identity: server.userKey,
    knownHosts: server.knownHosts,
    ...extra,
  })
}

test('glob, grep and read over sftp:// give what they give on the local disk', async () => {
  const local = new Tools()
  const tools = remote()
  for (const [name, tool, args] of CALLS) {
    const want = await local.call(tool, args, { cwd: tree.root })
    const got = await tools.call(tool, args, { cwd: tree.root })
    assert.deepEqual(got, want, name)
  }
  // The comparison compared something: the searches found what the tree holds.
  const grep = await tools.call('grep', { pattern: 'add', include: '*.rs' }, { cwd: tree.root })
  assert.match(grep.content, /^Found 3 matches/)
  assert.doesNotMatch(grep.content, /target|hidden/)
})

test('a remote cwd is a directory on the host, checked there', async () => {
  const tools = remote()
  await assert.rejects(
    tools.call('glob', { pattern: '*' }, { cwd: path.join(tree.root, 'missing') }),
    /Tools\.call: cwd ".*missing" is not an existing directory on the remote host/,
  )
  await assert.rejects(
    tools.call('glob', { pattern: '*' }, { cwd: path.join(tree.root, 'README.md') }),
    /is not a directory on the remote host/,
  )
  await assert.rejects(tools.call('glob', { pattern: '*' }, { cwd: 'src' }), /Tools\.call: cwd "src" is relative/)
  // The same tools answer once the cwd is right: nothing was left broken.
  const ok = await tools.call('glob', { pattern: '*.md' }, { cwd: tree.root })
  assert.equal(ok.isError, false, ok.content)
})

test('a write over sftp:// lands on the host', async () => {
  const tools = remote()
  const ctx = { cwd: tree.root, session: 'w' }
  const w = await tools.call('write', { file_path: 'made/remote.txt', content: 'written over sftp\n' }, ctx)
  assert.equal(w.isError, false, w.content)
  assert.equal(fs.readFileSync(path.join(tree.root, 'made/remote.txt'), 'utf8'), 'written over sftp\n')
})

test('index: true over sftp:// mirrors root on the host and sees a write at the next call', async () => {
  const indexed = remote({ index: true, root: tree.root })
  const scan = remote()
  const ctx = { cwd: tree.root }
  for (const [name, tool, args] of CALLS) {
    if (tool === 'read') continue
    const a = await indexed.call(tool, args, ctx)
    const b = await scan.call(tool, args, ctx)
    assert.equal(a.content, b.content, name)
  }
  const w = await indexed.call('write', { file_path: 'made/indexed.txt', content: 'add_over_sftp\n' }, ctx)
  assert.equal(w.isError, false, w.content)
  const g = await indexed.call('grep', { pattern: 'add_over_sftp' }, ctx)
  assert.match(g.content, /^Found 1 match/)
  assert.throws(() => remote({ index: true }), /index over sftp:\/\/ needs root/)
  assert.throws(() => remote({ index: true, root: 'rel' }), /root: "rel" is relative/)
})

const REFUSED = [
  ['a key the server does not authorize', () => ({ identity: server.strangerKey }), /the server refused the key .*stranger_key for user root/],
  ['an identity file that does not exist', () => ({ identity: '/nonexistent/dsh-key' }), /cannot load the identity/],
  ['a known-hosts file with another host key', () => ({ knownHosts: server.otherKnownHosts }), /host key changed/],
]

for (const [name, options, message] of REFUSED) {
  test(`bad sftp options reject the call with a clear error: ${name}`, async () => {
    const p = remote(options()).call('glob', { pattern: '*' }, { cwd: tree.root })
    assert.ok(p instanceof Promise)
    await assert.rejects(p, (e) => {
      // The host is named, then why.
      assert.match(e.message, /^Tools\.call: sftp:\/\/root@127\.0\.0\.1:\d+: /)
      assert.match(e.message, message)
      return true
    })
  })
}

const BAD_OPTIONS = [
  ['an address with a path', () => new Tools({ fs: 'sftp://host/dir' }), /invalid sftp:\/\/ address "host\/dir": no path after the host/],
  ['a port out of range', () => new Tools({ fs: 'sftp://host:70000' }), /the port is not a number from 1 to 65535/],
  ['an overlay', () => new Tools({ fs: 'sftp://host', overlay: '/tmp/o', knownHosts: '/dev/null' }), /an overlay cannot be used with an sftp:\/\/ workspace/],
  ['a root', () => new Tools({ fs: 'sftp://host', root: '/tmp', knownHosts: '/dev/null' }), /root names a local directory/],
  ['the rg backend', () => new Tools({ fs: 'sftp://host', backend: 'rg', knownHosts: '/dev/null' }), /searches the local disk only/],
  ['an identity without sftp://', () => new Tools({ identity: '/k' }), /an identity or known-hosts file goes with an sftp:\/\/ workspace/],
  ['knownHosts not a string', () => new Tools({ fs: 'sftp://host', knownHosts: 1 }), /options\.knownHosts must be a string/],
]

for (const [name, make, message] of BAD_OPTIONS) {
  test(`bad sftp options throw a clear error: ${name}`, () => {
    assert.throws(make, message)
  })
}
