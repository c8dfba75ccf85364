'use strict'
// rg() as a JavaScript caller sees it: the event loop keeps turning during
// a long search, an AbortSignal settles the call at once and stops the
// search, 100 concurrent calls all answer right, and bad input is a
// rejected promise with a clear message (contract.md §12, "Node").
//
// The long searches run on a generated tree (2,000 files, 25 MB, built
// once): unpacking the Linux tree would take minutes of the test command.

const { test, before, after } = require('node:test')
const assert = require('node:assert/strict')
const { performance } = require('node:perf_hooks')
const { spawnSync } = require('node:child_process')
const path = require('node:path')

const { rg } = require('..')
const h = require('./helpers.js')

const bin = h.rgBinary()
h.controlEnvironment()

let large
let longMs
// A regex every line must be run through, with almost no output: about
// 0.5 s on the debug addon.
const LONG = h.grepArgv('amet\\s+\\w+ X')
before(async () => {
  // Warmed (the page cache, the pool's threads), so the measured search is
  // only a search, and long enough to be stopped in the middle.
  ;({ tree: large, ms: longMs } = await h.longTree(2000, (root) => rg(LONG, { cwd: root }), 300))
})
after(() => large.cleanup())

/** Ticks of a 2 ms timer while `work` runs: the gaps between them, in ms. */
async function tickGaps(work) {
  const gaps = []
  let last = performance.now()
  const timer = setInterval(() => {
    const now = performance.now()
    gaps.push(now - last)
    last = now
  }, 2)
  try {
    const result = await work()
    return { gaps, result }
  } finally {
    clearInterval(timer)
  }
}

test('the event loop keeps turning during a long search (timer gaps of 20 ms at most)', async () => {
  const started = performance.now()
  const { gaps, result } = await tickGaps(() => rg(LONG, { cwd: large.root }))
  const took = performance.now() - started
  assert.equal(result.exitCode, 1)
  // A call that held the JavaScript thread would leave one gap as long as
  // the search; the bound is the (20 ms), kept by all but stray
  // scheduling hiccups of a loaded machine, each still far below the search.
  gaps.sort((a, b) => a - b)
  const p95 = gaps[Math.floor(gaps.length * 0.95)]
  const max = gaps[gaps.length - 1]
  assert.ok(gaps.length >= 10, `the search took ${took.toFixed(0)} ms and the timer ticked ${gaps.length} times`)
  assert.ok(p95 <= 20, `95% of the timer gaps should be ≤ 20 ms; p95 = ${p95.toFixed(1)} ms, max ${max.toFixed(1)} ms over a ${took.toFixed(0)} ms search`)
  assert.ok(max < Math.max(100, took / 2), `the longest gap (${max.toFixed(1)} ms) is a blocked loop: the search took ${took.toFixed(0)} ms`)
})

test('an AbortSignal fired mid-search settles the call within 100 ms with an AbortError', async () => {
  const ac = new AbortController()
  const call = rg(LONG, { cwd: large.root, signal: ac.signal })
  await new Promise((r) => setTimeout(r, 30))
  const fired = performance.now()
  ac.abort()
  const err = await call.then(
    () => null,
    (e) => e,
  )
  const settled = performance.now() - fired
  assert.ok(err, 'the aborted call resolved instead of rejecting')
  assert.equal(err.name, 'AbortError')
  assert.ok(settled < 100, `settled ${settled.toFixed(1)} ms after the abort`)
})

test('aborted searches stop: the engine is free for the next call at once', async () => {
  // Four searches that went on after their abort would share the engine's
  // workers (and the machine's cores) with the next call until they ended:
  // it would take at least a whole search longer. Stopped, they leave it a
  // few of their threads' checks of the flag.
  const controllers = [0, 1, 2, 3].map(() => new AbortController())
  const calls = controllers.map((ac) => rg(LONG, { cwd: large.root, signal: ac.signal }).catch((e) => e))
  await new Promise((r) => setTimeout(r, 30))
  controllers.forEach((ac) => ac.abort())
  await Promise.all(calls)
  const t0 = performance.now()
  const next = await rg(h.grepArgv('rare_needle_0\\b', 'd0/e0'), { cwd: large.root })
  const waited = performance.now() - t0
  assert.equal(next.exitCode, 0)
  assert.ok(waited < longMs, `the next call took ${waited.toFixed(0)} ms; one search takes ${longMs.toFixed(0)} ms`)
})

test('an already-aborted signal rejects without searching', async () => {
  const ac = new AbortController()
  ac.abort(new Error('gone'))
  await assert.rejects(rg(h.grepArgv('x'), { cwd: large.root, signal: ac.signal }), { name: 'AbortError' })
})

test('100 concurrent calls from JavaScript all answer correctly', async () => {
  const tree = h.buildTree(
    Array.from({ length: 60 }, (_, i) => h.file(`d${i % 6}/f${i}.txt`, `needle ${i}\nline ${i % 7}\n`)),
  )
  try {
    const cases = []
    for (let i = 0; i < 100; i++) {
      cases.push(i % 2 ? h.grep(`line ${i % 7}`, i % 3 ? undefined : `d${i % 6}`) : h.glob(`**/f${i % 60}*.txt`))
    }
    const actual = await Promise.all(cases.map((c) => rg(h.argvOf(c, tree.root), { cwd: tree.root })))
    const failures = []
    for (let i = 0; i < cases.length; i++) {
      const expected = await h.spawnRg(bin, h.argvOf(cases[i], tree.root), tree.root)
      const f = h.compare(cases[i].kind, h.label(cases[i]), actual[i], expected)
      if (f) failures.push(f)
    }
    assert.deepEqual(failures, [])
  } finally {
    tree.cleanup()
  }
})

const GOOD = h.grepArgv('x')
const BAD_INPUT = [
  ['argv not an array', () => rg('--json', { cwd: '/' }), /rg: argv must be an array of strings, got string --json/],
  ['argv with a number', () => rg(['--no-config', '--json', 7], { cwd: '/' }), /rg: argv\[2\] must be a string, got number 7/],
  ['options missing', () => rg(GOOD), /rg: options must be an object with cwd, got nothing/],
  ['cwd missing', () => rg(GOOD, {}), /rg: cwd must be a non-empty string/],
  ['cwd a number', () => rg(GOOD, { cwd: 3 }), /rg: cwd must be a non-empty string .*number 3/],
  // Named as the platform resolves it (Z:\nonexistent\dsh on a Windows drive Z:).
  ['cwd does not exist', () => rg(GOOD, { cwd: '/nonexistent/dsh' }), new RegExp(`rg: cwd ${h.escapeRegExp(JSON.stringify(path.resolve('/nonexistent/dsh')))} is not an existing directory`)],
  ['cwd a file', () => rg(GOOD, { cwd: __filename }), /is not a directory/],
  ['NUL in argv', () => rg(h.grepArgv('a\0b'), { cwd: '/' }), /argument 2: it contains a NUL byte/],
  ['NUL in cwd', () => rg(GOOD, { cwd: '/tmp\0x' }), /rg: cwd contains a NUL byte/],
  ['another rg invocation', () => rg(['--no-config', '--count', 'x'], { cwd: '/' }), /unsupported rg argv: argument 1: .*expected the glob invocation/],
  ['the program name left in', () => rg(['rg', ...GOOD], { cwd: '/' }), /the first argument must be `--no-config`, not `rg`/],
  ['an extra flag', () => rg([...GOOD, '--hidden'], { cwd: '/' }), /argument 3: .*not `--hidden`/],
  ['signal not an AbortSignal', () => rg(GOOD, { cwd: '/', signal: 'stop' }), /rg: options.signal must be an AbortSignal, got string stop/],
]

// Objects that are not AbortSignals: a TypeError with the code Node's own
// APIs give a bad signal option (fs.promises.readFile(f, {signal: {}})
// rejects with ERR_INVALID_ARG_TYPE), before any search starts.
const NOT_SIGNALS = [
  ['an empty object', {}, 'an object without a boolean aborted'],
  ['no addEventListener', { aborted: false, removeEventListener() {} }, 'an object without addEventListener'],
  ['no removeEventListener', { aborted: false, addEventListener() {} }, 'an object without removeEventListener'],
]

for (const [name, signal, got] of NOT_SIGNALS) {
  test(`a signal that is not an AbortSignal rejects with ERR_INVALID_ARG_TYPE: ${name}`, async () => {
    await assert.rejects(rg(GOOD, { cwd: '/', signal }), (e) => {
      assert.ok(e instanceof TypeError)
      assert.equal(e.code, 'ERR_INVALID_ARG_TYPE')
      assert.equal(e.message, `rg: options.signal must be an AbortSignal, got ${got}`)
      return true
    })
  })
}

test('a signal-like object without removeEventListener never kills the process', () => {
  // Accepted, it made the call's cleanup throw in a promise nobody held:
  // an unhandled rejection, which ends a Node process. A child process
  // shows it: it must live on to print its last line.
  const script = `
    const { rg, Tools } = require(${JSON.stringify(path.join(__dirname, '..'))})
    const signal = { aborted: false, addEventListener() {} }
    const argv = ${JSON.stringify(h.grepArgv('x'))}
    ;(async () => {
      const a = await rg(argv, { cwd: ${JSON.stringify(__dirname)}, signal }).then(() => 'resolved', (e) => e.code)
      const b = await new Tools().call('grep', { pattern: 'x' }, { cwd: ${JSON.stringify(__dirname)}, signal }).then(() => 'resolved', (e) => e.code)
      await new Promise((r) => setTimeout(r, 50))
      console.log(JSON.stringify([a, b, 'alive']))
    })()
  `
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 30_000 })
  assert.equal(r.status, 0, `the child died: ${r.stderr}`)
  assert.deepEqual(JSON.parse(r.stdout), ['ERR_INVALID_ARG_TYPE', 'ERR_INVALID_ARG_TYPE', 'alive'])
})

for (const [name, call, message] of BAD_INPUT) {
  test(`bad input is a rejected promise with a clear message: ${name}`, async () => {
    const p = call()
    assert.ok(p instanceof Promise, 'rg() must return a promise, not throw')
    await assert.rejects(p, message)
  })
}
