'use strict'
// The addon as a guest of its host process: its calls run on threads of
// their own, so searches that wait (on a FIFO nobody writes) hold neither
// libuv's thread pool, which the host's own fs calls need, nor the
// process's exit; the end of a Node environment (the process's, a
// worker's) cancels the calls it made (contract.md §12, "Node").
//
// A search of a FIFO waits until a writer comes and goes, as rg's does: it
// is a search that lasts exactly as long as a test wants. The tests end
// each one by opening and closing the FIFO's write side.

const { test } = require('node:test')
const { Worker } = require('node:worker_threads')
const { once } = require('node:events')
const assert = require('node:assert/strict')
const { spawn, execFileSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const { rg, Tools } = require('..')
const h = require('./helpers.js')

h.rgBinary()
h.controlEnvironment()

const PACKAGE = path.join(__dirname, '..')

/** A directory with `n` FIFOs p0…p(n-1); returns it and a cleanup. */
function fifos(n) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dsh-node-fifos-'))
  const names = Array.from({ length: n }, (_, i) => `p${i}`)
  for (const name of names) execFileSync('mkfifo', [path.join(dir, name)])
  return { dir, names, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/**
 * End the search reading FIFO `p`: open its write side and close it (the
 * reader then sees end of file). A non-blocking open fails (ENXIO) until
 * the search has opened the read side: retried, a bounded number of times.
 */
async function release(p) {
  for (let i = 0; i < 500; i++) {
    try {
      fs.closeSync(fs.openSync(p, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK))
      return
    } catch (e) {
      if (e.code !== 'ENXIO') throw e
    }
    await sleep(20)
  }
  throw new Error(`nothing opened ${p} for reading within 10 s`)
}

/** `promise`, or `fallback` once `ms` have passed: a guard against a hang, not a measure of speed. */
function within(ms, promise, fallback) {
  let timer
  const guard = new Promise((r) => {
    timer = setTimeout(() => r(fallback), ms)
  })
  return Promise.race([promise, guard]).finally(() => clearTimeout(timer))
}

test('searches waiting on FIFOs leave libuv’s thread pool to the host: fs.promises.readFile resolves', async () => {
  // Two more waiting searches than libuv has threads (4 unless the
  // environment says otherwise), half of them rg(), half tools, none with
  // a signal: run on the pool, they would hold every thread until a writer
  // came, and the read below would wait with them.
  const poolSize = Number(process.env.UV_THREADPOOL_SIZE) || 4
  const n = poolSize + 2
  const f = fifos(n)
  let released = false
  try {
    const tools = new Tools()
    const calls = f.names.map((name, i) =>
      i % 2 ? rg(h.grepArgv('x', name), { cwd: f.dir }) : tools.call('grep', { pattern: 'x', path: name }, { cwd: f.dir }),
    )
    // Until each search has opened its FIFO, it is not yet waiting.
    await sleep(300)
    const read = fs.promises.readFile(__filename, 'utf8').then((text) => text.length)
    const length = await within(10_000, read, 'still waiting after 10 s')
    assert.equal(length, fs.readFileSync(__filename, 'utf8').length)
    for (const name of f.names) await release(path.join(f.dir, name))
    released = true
    const answers = await within(10_000, Promise.all(calls), 'the searches did not end')
    assert.notEqual(answers, 'the searches did not end')
    answers.forEach((a, i) => {
      // An empty FIFO: no match (exit 1, "No matches found").
      if (i % 2) assert.equal(a.exitCode, 1)
      else assert.equal(a.content, 'No matches found')
    })
  } finally {
    // Whatever failed above, no search may be left waiting.
    if (!released) await Promise.all(f.names.map((name) => release(path.join(f.dir, name)).catch(() => {})))
    f.cleanup()
  }
})

// A child process starts its calls, lets them reach their FIFOs, and calls
// process.exit(). The FIFOs get no writer while it runs, so its searches
// cannot end before it does: a process whose exit joined them would never
// exit. The 10 s are a guard against that hang.
const EXITS = [
  ['rg() on a FIFO', `rg(grepArgv('x', 'p0'), { cwd })`],
  ['Tools.call grep on a FIFO', `new Tools().call('grep', { pattern: 'x', path: 'p0' }, { cwd })`],
  ['rg() and Tools.call on FIFOs, more than libuv has threads', `Promise.all([0, 1, 2, 3, 4, 5].map((i) => i % 2 ? rg(grepArgv('x', 'p' + i), { cwd }) : new Tools().call('grep', { pattern: 'x', path: 'p' + i }, { cwd })))`],
]

for (const [name, call] of EXITS) {
  test(`process.exit() ends the process while calls are in flight: ${name}`, async () => {
    const f = fifos(6)
    const script = `
      const { rg, Tools } = require(${JSON.stringify(PACKAGE)})
      const { grepArgv } = require(${JSON.stringify(path.join(__dirname, 'helpers.js'))})
      const cwd = ${JSON.stringify(f.dir)}
      ${call}.then(() => console.log('a search ended'))
      setTimeout(() => {
        console.log('exiting')
        process.exit(7)
      }, 300)
    `
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    child.stdout.on('data', (b) => (out += b))
    child.stderr.on('data', (b) => (err += b))
    const exited = new Promise((r) => child.on('exit', (code, signal) => r({ code, signal })))
    try {
      const exit = await within(10_000, exited, null)
      assert.ok(exit, `the child had not exited 10 s after process.exit(); its output: ${out}${err}`)
      assert.deepEqual(exit, { code: 7, signal: null }, err)
      assert.equal(out, 'exiting\n')
    } finally {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL')
        await exited
      }
      f.cleanup()
    }
  })
}

/** The processes whose working directory is `dir`. */
function runningIn(dir) {
  const pids = []
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(pid)) continue
    try {
      if (fs.readlinkSync(`/proc/${pid}/cwd`) === dir) pids.push(Number(pid))
    } catch {}
  }
  return pids
}

test('process.exit() with a tool call on the rg backend in flight leaves no rg process behind', async () => {
  // process.exit() runs no environment cleanup hook; the package's exit
  // listener cancels the call, and the rg backend stops its rg. Before,
  // the rg waiting on the FIFO outlived the process, without a parent.
  const f = fifos(1)
  const script = `
    const { Tools } = require(${JSON.stringify(PACKAGE)})
    new Tools({ backend: 'rg' }).call('grep', { pattern: 'x', path: 'p0' }, { cwd: ${JSON.stringify(f.dir)} })
    setTimeout(() => process.exit(7), 300)
  `
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'pipe'] })
  let err = ''
  child.stderr.on('data', (b) => (err += b))
  const exited = new Promise((r) => child.on('exit', (code, signal) => r({ code, signal })))
  try {
    const exit = await within(10_000, exited, null)
    assert.deepEqual(exit, { code: 7, signal: null }, err)
    assert.deepEqual(runningIn(f.dir), [], 'an rg still runs in the FIFO’s directory')
  } finally {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL')
      await exited
    }
    // An rg left behind ends when its FIFO gets a writer.
    if (runningIn(f.dir).length > 0) await release(path.join(f.dir, 'p0')).catch(() => {})
    f.cleanup()
  }
})

/** How many of this process's descriptors are open on `p`. */
function openOn(p) {
  let n = 0
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try {
      if (fs.readlinkSync(`/proc/self/fd/${fd}`) === p) n++
    } catch {}
  }
  return n
}

/** Wait (a bounded number of times) until `check()`; whether it came true. */
async function until(check) {
  for (let i = 0; i < 500; i++) {
    if (check()) return true
    await sleep(20)
  }
  return false
}

test('a worker’s calls are cancelled when the worker is terminated', async () => {
  // The worker's searches wait on FIFOs nobody writes. A worker's end
  // tears its environment down without waiting for them; cancelled, they
  // stop and close their FIFOs. Left running, nothing would ever end them:
  // the FIFOs would stay open in this process for ever.
  const f = fifos(2)
  const [p0, p1] = f.names.map((name) => path.join(f.dir, name))
  const worker = new Worker(
    `
      const { parentPort, workerData } = require('node:worker_threads')
      const { rg, Tools } = require(workerData.pkg)
      const { grepArgv } = require(workerData.helpers)
      rg(grepArgv('x', 'p0'), { cwd: workerData.dir })
      new Tools().call('grep', { pattern: 'x', path: 'p1' }, { cwd: workerData.dir })
      parentPort.postMessage('started')
    `,
    { eval: true, workerData: { pkg: PACKAGE, helpers: path.join(__dirname, 'helpers.js'), dir: f.dir } },
  )
  try {
    await once(worker, 'message')
    assert.ok(await until(() => openOn(p0) > 0 && openOn(p1) > 0), 'the searches never opened their FIFOs')
    await worker.terminate()
    const closed = await until(() => openOn(p0) === 0 && openOn(p1) === 0)
    assert.ok(closed, `10 s after the worker ended, its searches still hold ${openOn(p0)} + ${openOn(p1)} FIFO descriptors`)
  } finally {
    await worker.terminate()
    for (const p of [p0, p1]) if (openOn(p) > 0) await release(p).catch(() => {})
    f.cleanup()
  }
})
