'use strict'
// wrapSubprocess(service), driven the way the harness's search code drives
// the seam (seed-reference.md §1.4, §2.4, §2.5): spawn, await done, read
// the collected stdout from offset 0; a maxBytes smaller than the output
// (the tail kept, lossy set); abort through spec.signal; terminate()
// mid-search; a cwd that does not exist; spawns that are not rg's two
// invocations passed through to the wrapped service untouched. The wrapped
// service is a local one that really spawns (test/local-service.js), so
// every in-process answer is compared with the real rg's through the same
// seam.

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { performance } = require('node:perf_hooks')
const { execFileSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const { wrapSubprocess } = require('..')
const h = require('./helpers.js')
const { localService } = require('./local-service.js')

const bin = h.rgBinary()
h.controlEnvironment()

// A regex every line must be run through, with almost no output.
const LONG = h.grepArgv('amet\\s+\\w+ X')
let tree
let large
before(async () => {
  tree = h.buildTree(Array.from({ length: 40 }, (_, i) => h.file(`d${i % 4}/f${i}.txt`, `needle ${i}\n${'x'.repeat(i)}\n`)))
  // Still searching 30 ms in, whatever the addon's build.
  const search = (root) => require('..').rg(LONG, { cwd: root })
  ;({ tree: large } = await h.longTree(1000, search, 200))
})
after(() => {
  tree.cleanup()
  large.cleanup()
})

/** A local service that records what reaches it. */
function recording() {
  const service = localService()
  const spawned = []
  return {
    spawned,
    service: {
      spawn(spec) {
        const handle = service.spawn(spec)
        spawned.push({ spec, handle })
        return handle
      },
      describe() {
        return `local service with ${spawned.length} spawns`
      },
    },
  }
}

const spec = (argv, extra = {}) => ({
  argv: [bin, ...argv],
  cwd: tree.root,
  stdin: 'ignore',
  stdout: { maxBytes: 20_000_000 },
  stderr: { maxBytes: 65_536 },
  graceMs: 3000,
  ...extra,
})

/** What the harness does: await done, then read both streams from 0. */
async function drive(handle) {
  const exit = await handle.done
  return { exit, stdout: handle.collected.stdout.readFrom(0), stderr: handle.collected.stderr.readFrom(0) }
}

const SPAWNS = [
  ['grep', h.grepArgv('needle'), 'grep'],
  ['grep with include and path', h.grepArgv('needle [0-9]$', 'd1', '*.txt'), 'grep'],
  ['grep with a bad regex (exit 2)', h.grepArgv('('), 'grep'],
  ['glob', h.globArgv('**/*.txt'), 'glob'],
  ['glob of a missing path (exit 2)', h.globArgv('*', 'missing'), 'glob'],
  ['glob with no match (exit 1)', h.globArgv('*.none'), 'glob'],
]

for (const [name, argv, kind] of SPAWNS) {
  test(`an rg spawn is answered in-process, as the real rg answers it: ${name}`, async () => {
    const { service, spawned } = recording()
    const wrapped = wrapSubprocess(service)
    const got = await drive(wrapped.spawn(spec(argv)))
    assert.equal(spawned.length, 0, 'the wrapped service must not see an rg spawn')
    const want = await drive(localService().spawn(spec(argv)))
    assert.deepEqual(got.exit, want.exit)
    const asBytes = (r) => ({ stdout: Buffer.from(r.stdout.text, 'utf8'), stderr: Buffer.from(r.stderr.text, 'utf8'), exitCode: r.exit.exitCode })
    assert.deepEqual(h.normalize(kind, asBytes(got)), h.normalize(kind, asBytes(want)))
    assert.equal(got.stdout.lossy, false)
    assert.equal(got.stdout.nextOffset, Buffer.byteLength(got.stdout.text))
  })
}

test('maxBytes smaller than the output: the tail is kept and lossy is set', async () => {
  const argv = h.globArgv('**/*.txt')
  const full = await drive(wrapSubprocess(localService()).spawn(spec(argv)))
  const cut = await drive(wrapSubprocess(localService()).spawn(spec(argv, { stdout: { maxBytes: 50 } })))
  const bytes = Buffer.from(full.stdout.text)
  assert.ok(bytes.length > 50)
  assert.deepEqual(cut.stdout, { text: bytes.subarray(bytes.length - 50).toString(), nextOffset: bytes.length, lossy: true })
  // The real seam gives the same.
  const real = await drive(localService().spawn(spec(argv, { stdout: { maxBytes: 50 } })))
  assert.deepEqual(cut.stdout, real.stdout)
  // Reading on from nextOffset: nothing new, nothing lost.
  const handle = wrapSubprocess(localService()).spawn(spec(argv, { stdout: { maxBytes: 50 } }))
  await handle.done
  assert.deepEqual(handle.collected.stdout.readFrom(bytes.length), { text: '', nextOffset: bytes.length, lossy: false })
  assert.deepEqual(handle.collected.stdout.readFrom(bytes.length - 10).lossy, false)
  assert.equal(handle.collected.stdout.readFrom(bytes.length - 60).lossy, true)
})

test('maxBytes 0 keeps nothing and reports the loss', async () => {
  const r = await drive(wrapSubprocess(localService()).spawn(spec(h.grepArgv('needle'), { stdout: { maxBytes: 0 } })))
  assert.equal(r.stdout.text, '')
  assert.equal(r.stdout.lossy, true)
  assert.ok(r.stdout.nextOffset > 0)
})


test('spec.signal aborted mid-search: done settles within 100 ms as a killed rg', async () => {
  const ac = new AbortController()
  const handle = wrapSubprocess(localService()).spawn(spec(LONG, { cwd: large.root, signal: ac.signal }))
  await new Promise((r) => setTimeout(r, 30))
  const fired = performance.now()
  ac.abort()
  const exit = await handle.done
  const settled = performance.now() - fired
  assert.deepEqual(exit, { exitCode: null, signal: 'SIGTERM' })
  assert.ok(settled < 100, `settled ${settled.toFixed(1)} ms after the abort`)
  // As the real seam reports a killed rg. The real rg (a release build)
  // can finish the large tree within 30 ms, so it searches a FIFO nobody
  // writes: it is still running whenever the abort comes.
  const fifoDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dsh-node-fifo-'))
  try {
    execFileSync('mkfifo', [path.join(fifoDir, 'p')])
    const ac2 = new AbortController()
    const real = localService().spawn(spec(h.grepArgv('x', 'p'), { cwd: fifoDir, signal: ac2.signal }))
    setTimeout(() => ac2.abort(), 30)
    assert.deepEqual(await real.done, exit)
  } finally {
    fs.rmSync(fifoDir, { recursive: true, force: true })
  }
})

test('terminate() mid-search ends it as a killed rg', async () => {
  const handle = wrapSubprocess(localService()).spawn(spec(LONG, { cwd: large.root }))
  await new Promise((r) => setTimeout(r, 30))
  await handle.terminate()
  assert.deepEqual(await handle.done, { exitCode: null, signal: 'SIGTERM' })
  assert.deepEqual(await handle.waitForExit(), { exitCode: null, signal: 'SIGTERM' })
  // terminate() after the end changes nothing.
  const quick = wrapSubprocess(localService()).spawn(spec(h.grepArgv('needle')))
  const exit = await quick.done
  await quick.terminate()
  assert.deepEqual(await quick.done, exit)
  assert.equal(exit.exitCode, 0)
})

test('waitForExit(signal): its own signal stops the wait, not the search', async () => {
  const handle = wrapSubprocess(localService()).spawn(spec(LONG, { cwd: large.root }))
  const ac = new AbortController()
  const wait = handle.waitForExit(ac.signal)
  ac.abort()
  await assert.rejects(wait, { name: 'AbortError' })
  assert.deepEqual(await handle.waitForExit(), { exitCode: 1, signal: null })
})

test('a spec.signal or a waitForExit signal that is not an AbortSignal is a TypeError (ERR_INVALID_ARG_TYPE)', async () => {
  const notSignal = { aborted: false, addEventListener() {} }
  assert.throws(() => wrapSubprocess(localService()).spawn(spec(h.grepArgv('needle'), { signal: notSignal })), {
    name: 'TypeError',
    code: 'ERR_INVALID_ARG_TYPE',
    message: 'spawn: spec.signal must be an AbortSignal, got an object without removeEventListener',
  })
  const handle = wrapSubprocess(localService()).spawn(spec(h.grepArgv('needle')))
  await assert.rejects(handle.waitForExit(notSignal), { code: 'ERR_INVALID_ARG_TYPE' })
  assert.equal((await handle.done).exitCode, 0)
})

test('a spec whose cwd is not an existing directory fails at spawn level: done rejects', async () => {
  const handle = wrapSubprocess(localService()).spawn(spec(h.grepArgv('x'), { cwd: '/nonexistent/dsh' }))
  const real = localService().spawn(spec(h.grepArgv('x'), { cwd: '/nonexistent/dsh' }))
  const [got, want] = await Promise.all([handle.done.catch((e) => e), real.done.catch((e) => e)])
  assert.ok(got instanceof Error && want instanceof Error)
  assert.equal(got.code, want.code)
  assert.equal(got.code, 'ENOENT')
})

const PASSED_THROUGH = [
  ['another program', () => spec([], { argv: ['/bin/echo', 'hello'] })],
  ['rg with other flags', () => spec(['--version'])],
  ['rg without --no-config', () => spec(h.grepArgv('needle').slice(1))],
  ['rg reading a piped stdin', () => spec(h.grepArgv('needle'), { stdin: 'pipe' })],
  ['a NUL in the argv', () => spec(h.grepArgv('a\0b'))],
]

for (const [name, make] of PASSED_THROUGH) {
  test(`a spawn that is not one of the two invocations reaches the service untouched: ${name}`, () => {
    const { service, spawned } = recording()
    const s = make()
    let handle
    let thrown
    try {
      handle = wrapSubprocess(service).spawn(s)
    } catch (e) {
      thrown = e
    }
    assert.equal(spawned.length + (thrown ? 1 : 0), 1)
    if (!thrown) {
      assert.equal(spawned[0].spec, s, 'the very spec object')
      assert.equal(handle, spawned[0].handle, 'the service’s own handle')
      handle.terminate()
    } else {
      // The service's own synchronous failure (Node's spawn refuses a NUL).
      assert.equal(thrown.code, 'ERR_INVALID_ARG_VALUE')
    }
  })
}

test('the rest of the service is the service’s own', () => {
  const { service } = recording()
  assert.equal(wrapSubprocess(service).describe(), 'local service with 0 spawns')
  assert.throws(() => wrapSubprocess({}), /wrapSubprocess: service must be a subprocess service/)
})
