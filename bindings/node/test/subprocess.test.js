'use strict'
// wrapSubprocess(service), driven the way the harness's search code drives
// the seam (seed-reference.md §1.4, §2.4, §2.5), with the seam's own spawn
// spec (stdio: {stdin: 'ignore', stdout: {maxBytes}, stderr: {maxBytes}};
// test/types.ts): spawn, await done, read the collected stdout from offset
// 0; a maxBytes smaller than the output (the tail kept, lossy set), also
// on an output fifty times the cap, in memory bounded by the cap; abort
// through spec.signal; terminate() mid-search; a cwd that does not exist;
// spawns the in-process answer cannot give (stdin piped, streams piped or
// inherited, a spill file, another argv) passed through to the wrapped
// service untouched. The wrapped service is a local one that really spawns
// (test/local-service.js), so every in-process answer is compared with the
// real rg's through the same seam.

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { performance } = require('node:perf_hooks')
const { execFile, execFileSync } = require('node:child_process')
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
        const record = { spec }
        spawned.push(record)
        record.handle = service.spawn(spec)
        return record.handle
      },
      describe() {
        return `local service with ${spawned.length} spawns`
      },
    },
  }
}

/**
 * A spawn spec as the search tools build it (seed-reference.md §1.4):
 * `stdio` in `extra` replaces streams of the default one.
 */
const spec = (argv, { stdio, ...extra } = {}) => ({
  argv: [bin, ...argv],
  cwd: tree.root,
  stdio: { stdin: 'ignore', stdout: { maxBytes: 20_000_000 }, stderr: { maxBytes: 65_536 }, ...stdio },
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
  const cut = await drive(wrapSubprocess(localService()).spawn(spec(argv, { stdio: { stdout: { maxBytes: 50 } } })))
  const bytes = Buffer.from(full.stdout.text)
  assert.ok(bytes.length > 50)
  assert.deepEqual(cut.stdout, { text: bytes.subarray(bytes.length - 50).toString(), nextOffset: bytes.length, lossy: true })
  // The real seam gives the same.
  const real = await drive(localService().spawn(spec(argv, { stdio: { stdout: { maxBytes: 50 } } })))
  assert.deepEqual(cut.stdout, real.stdout)
  // Reading on from nextOffset: nothing new, nothing lost.
  const handle = wrapSubprocess(localService()).spawn(spec(argv, { stdio: { stdout: { maxBytes: 50 } } }))
  await handle.done
  assert.deepEqual(handle.collected.stdout.readFrom(bytes.length), { text: '', nextOffset: bytes.length, lossy: false })
  assert.deepEqual(handle.collected.stdout.readFrom(bytes.length - 10).lossy, false)
  assert.equal(handle.collected.stdout.readFrom(bytes.length - 60).lossy, true)
})

/** A tree whose grep for `e` prints about 11 MB: 200 files of 20 lines of 60 `e`s. */
function manyMatches() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'dsh-node-many-'))
  const body = `${'e'.repeat(60)}\n`.repeat(20)
  for (let i = 0; i < 200; i++) {
    const d = path.join(root, `d${i % 20}`)
    fs.mkdirSync(d, { recursive: true })
    fs.writeFileSync(path.join(d, `f${i}.txt`), body)
  }
  return { root, cleanup: () => fs.rmSync(root, { recursive: true, force: true }) }
}

/** `"elapsed…":{…}` objects, whose digits differ from run to run. */
const ELAPSED = /"(elapsed|elapsed_total)":\{[^{}]*\}/g

test('an output fifty times maxBytes: the tail and lossy, in memory bounded by maxBytes, not by the output', async () => {
  // A child process of its own, so that its peak RSS (maxRSS) is this
  // spawn's: before, the wrapper kept the whole output (and rg() a copy
  // of it), 31 MB more for 22 MB of output.
  const MAX = 128 * 1024
  const many = manyMatches()
  try {
    const script = `
      const { wrapSubprocess } = require(${JSON.stringify(path.join(__dirname, '..'))})
      const { grepArgv } = require(${JSON.stringify(path.join(__dirname, 'helpers.js'))})
      const wrapped = wrapSubprocess({ spawn() { throw new Error('the wrapper must answer this spawn') } })
      const spec = (argv, maxBytes) => ({
        argv: [${JSON.stringify(bin)}, ...argv],
        cwd: ${JSON.stringify(many.root)},
        stdio: { stdin: 'ignore', stdout: { maxBytes }, stderr: { maxBytes: 65536 } },
        graceMs: 3000,
      })
      ;(async () => {
        // Warm: the engine's workers, the addon's first call.
        await wrapped.spawn(spec(grepArgv('e', 'd0'), 1024)).done
        const before = process.resourceUsage().maxRSS
        const handle = wrapped.spawn(spec(grepArgv('e'), ${MAX}))
        const exit = await handle.done
        const read = handle.collected.stdout.readFrom(0)
        const growthKiB = process.resourceUsage().maxRSS - before
        const end = handle.collected.stdout.readFrom(read.nextOffset)
        console.log(JSON.stringify({ exit, read, end, growthKiB }))
      })()
    `
    const child = await new Promise((resolve, reject) => {
      execFile(process.execPath, ['-e', script], { maxBuffer: 8 << 20 }, (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout)))
    })
    const { exit, read, end, growthKiB } = JSON.parse(child)
    const real = await h.spawnRg(bin, h.grepArgv('e'), many.root)
    const realText = real.stdout.toString('latin1')
    assert.deepEqual(exit, { exitCode: 0, signal: null })
    // seed-reference.md §1.4 and §2.5: the tail is kept, lossy reported;
    // nextOffset counts every byte; reading on from it, nothing is lost.
    assert.equal(read.lossy, true)
    assert.equal(Buffer.byteLength(read.text), MAX, 'the text is the last maxBytes bytes')
    assert.ok(read.nextOffset >= 50 * MAX, `the output (${read.nextOffset} bytes) must be at least 50 × maxBytes`)
    assert.deepEqual(end, { text: '', nextOffset: read.nextOffset, lossy: false })
    // Every byte counted: the real rg's output, but for the digits of
    // the elapsed times (one per file with a match and the summary's,
    // each 30 to 50 bytes).
    const masked = realText.replace(ELAPSED, '"$1":{}')
    const timings = (realText.match(ELAPSED) || []).length
    const extra = read.nextOffset - masked.length
    assert.ok(extra >= 30 * timings && extra <= 50 * timings, `nextOffset ${read.nextOffset}: ${extra} bytes of times beyond rg's ${masked.length} for ${timings} of them`)
    // The tail's whole lines are rg's events, the summary last, with the
    // real rg's statistics (bytes_printed counts no times).
    const lines = read.text.split('\n').slice(1, -1).map((l) => JSON.parse(l))
    assert.ok(lines.every((e) => ['begin', 'match', 'end', 'summary'].includes(e.type)))
    const stats = (s) => ({ ...s.data.stats, elapsed: undefined })
    const realSummary = JSON.parse(realText.trimEnd().split('\n').pop())
    assert.deepEqual(stats(lines[lines.length - 1]), stats(realSummary))
    // Memory: what a cap of maxBytes costs (the kept tail, its copy and
    // its decoded text, the files being searched), not the output: 24 ×
    // maxBytes is 3 MiB here, for 11 MB of output.
    assert.ok(growthKiB * 1024 <= 24 * MAX, `peak RSS grew by ${growthKiB} KiB for a ${MAX / 1024} KiB cap (output: ${read.nextOffset} bytes)`)
  } finally {
    many.cleanup()
  }
})

test('maxBytes 0 keeps nothing and reports the loss', async () => {
  const r = await drive(wrapSubprocess(localService()).spawn(spec(h.grepArgv('needle'), { stdio: { stdout: { maxBytes: 0 } } })))
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
  // (Windows has no FIFOs: there the comparison with the real seam is
  // the terminate() case below.)
  if (h.UNIX_ONLY.fifo) return
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
  assert.equal(await handle.waitForExit(), true)
  // terminate() after the end changes nothing.
  const quick = wrapSubprocess(localService()).spawn(spec(h.grepArgv('needle')))
  const exit = await quick.done
  await quick.terminate()
  assert.deepEqual(await quick.done, exit)
  assert.equal(exit.exitCode, 0)
})

test('waitForExit(signal): false when its own signal aborts first (the search goes on), true once it ended', async () => {
  const handle = wrapSubprocess(localService()).spawn(spec(LONG, { cwd: large.root }))
  const ac = new AbortController()
  const wait = handle.waitForExit(ac.signal)
  ac.abort()
  assert.equal(await wait, false)
  assert.equal(await handle.waitForExit(), true)
  assert.equal(await handle.waitForExit(AbortSignal.abort()), false, 'an aborted signal answers false, as the seam does')
  assert.deepEqual(await handle.done, { exitCode: 1, signal: null })
  // The real seam answers the same.
  const real = localService().spawn(spec(h.grepArgv('needle')))
  const ac2 = new AbortController()
  const realWait = real.waitForExit(ac2.signal)
  ac2.abort()
  assert.equal(await realWait, false)
  assert.equal(await real.waitForExit(), true)
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

// What the in-process answer cannot give as the seam gives it goes to the
// wrapped service, which answers it (or throws) as it would unwrapped.
const PASSED_THROUGH = [
  ['another program', () => spec([], { argv: ['/bin/echo', 'hello'] })],
  ['rg with other flags', () => spec(['--version'])],
  ['rg without --no-config', () => spec(h.grepArgv('needle').slice(1))],
  // A piped stdin: the caller means to talk to the process.
  ['rg with stdin piped', () => spec(h.grepArgv('needle'), { stdio: { stdin: 'pipe' } })],
  ['rg with stdin data', () => spec(h.grepArgv('needle'), { stdio: { stdin: { data: 'needle\n' } } })],
  ['rg with stdout piped', () => spec(h.grepArgv('needle'), { stdio: { stdout: 'pipe' } })],
  ['rg with stdout inherited', () => spec(h.globArgv('*.none'), { stdio: { stdout: 'inherit' } })],
  ['rg with stderr inherited', () => spec(h.grepArgv('needle'), { stdio: { stderr: 'inherit' } })],
  ['rg with a spill file', () => spec(h.grepArgv('needle'), { stdio: { stdout: { maxBytes: 100, spill: { maxBytes: 1000 } } } })],
  ['a NUL in the argv', () => spec(h.grepArgv('a\0b'))],
  // Not the seam's spec: the streams at the top level, no stdio.
  ['the streams beside stdio, not in it', () => ({ argv: [bin, ...h.grepArgv('needle')], cwd: tree.root, stdin: 'ignore', stdout: { maxBytes: 100 }, graceMs: 3000 })],
]

for (const [name, make] of PASSED_THROUGH) {
  test(`a spawn the in-process answer cannot give reaches the service untouched: ${name}`, async () => {
    const { service, spawned } = recording()
    const s = make()
    let handle
    let thrown
    try {
      handle = wrapSubprocess(service).spawn(s)
    } catch (e) {
      thrown = e
    }
    assert.equal(spawned.length, 1, 'the service must see the spawn')
    assert.equal(spawned[0].spec, s, 'the very spec object')
    if (!thrown) {
      assert.equal(handle, spawned[0].handle, 'the service’s own handle')
      if (handle.stdin) handle.stdin.end()
      if (handle.stdout) handle.stdout.resume()
      await handle.terminate()
    } else {
      // The service's own synchronous failure: Node's spawn refuses a NUL;
      // the local service reads the seam's stdio, which the spec lacks.
      assert.ok(thrown.code === 'ERR_INVALID_ARG_VALUE' || thrown instanceof TypeError, thrown.stack)
    }
  })
}

test('the rest of the service is the service’s own', () => {
  const { service } = recording()
  assert.equal(wrapSubprocess(service).describe(), 'local service with 0 spawns')
  assert.throws(() => wrapSubprocess({}), /wrapSubprocess: service must be a subprocess service/)
})
