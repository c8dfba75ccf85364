'use strict'
// The addon as a guest of its host process: its calls run on threads of
// their own, so searches that wait (on a FIFO nobody writes) do not hold
// libuv's thread pool, which the host's own fs calls need (contract.md §12,
// "Node").
//
// A search of a FIFO waits until a writer comes and goes, as rg's does: it
// is a search that lasts exactly as long as a test wants. The tests end
// each one by opening and closing the FIFO's write side.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { execFileSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const { rg, Tools } = require('..')
const h = require('./helpers.js')

h.rgBinary()
h.controlEnvironment()

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
