'use strict'
// wrapSubprocess(service): the harness's subprocess seam with rg answered
// in-process (contract.md §12, "Node"; the seam as the search tools drive
// it: seed-reference.md §1.4, §2.4 and §2.5).
//
// The seam's spawn spec is {argv, cwd, stdio: {stdin, stdout, stderr},
// graceMs, signal?, env?}: stdin is 'ignore', 'pipe' or {data}; stdout and
// stderr are 'pipe', 'inherit' or a collector {maxBytes, spill?} that keeps
// the stream's last maxBytes bytes. The search tools spawn rg with stdin
// 'ignore' and both streams collected without a spill file (§1.4).
//
// A spawn of that kind whose argv is [<any rg path>, ...one of the two
// invocations of contract.md §2] is recognized by that shape (never by the
// program's path) and answered in-process on a handle of the seam's shape;
// every other spawn goes to the wrapped service untouched: a piped or
// data stdin (the caller means to talk to the process), a stream piped or
// inherited, a spill file asked for, a spec of another shape.

const fs = require('node:fs')
const path = require('node:path')

/** The signal a terminated or aborted search reports, as the seam's SIGTERM to rg's group would. */
const KILLED = { exitCode: null, signal: 'SIGTERM' }

/**
 * The cap of a stream the in-process answer can collect as the seam does:
 * a collector with a non-negative integer `maxBytes` and no spill file;
 * `null` for any other disposition.
 */
function collectorCap(mode) {
  if (mode === null || typeof mode !== 'object' || Array.isArray(mode)) return null
  if (mode.spill !== undefined) return null
  const { maxBytes } = mode
  return Number.isSafeInteger(maxBytes) && maxBytes >= 0 ? maxBytes : null
}

/**
 * One collected stream once the search has ended: its last `maxBytes`
 * bytes and the count of all of them. `readFrom(offset)` reads from a byte
 * offset of the whole stream; `lossy` says bytes from `offset` on were
 * dropped. Before the end it has nothing (the search's output arrives all
 * at once, when `done` settles).
 */
class Collected {
  #tail = Buffer.alloc(0)
  #total = 0

  end(tail, total) {
    this.#tail = tail
    this.#total = total
  }

  readFrom(offset = 0) {
    if (!Number.isInteger(offset) || offset < 0) {
      throw new RangeError(`readFrom: offset must be a non-negative integer, got ${String(offset)}`)
    }
    const dropped = this.#total - this.#tail.length
    const start = Math.min(Math.max(offset, dropped), this.#total)
    // Lossy UTF-8 (invalid bytes become U+FFFD) and a BOM kept, as the
    // seam decodes rg's output (seed-reference.md §1.4).
    const text = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true }).decode(this.#tail.subarray(start - dropped))
    return { text, nextOffset: this.#total, lossy: offset < dropped }
  }
}

function spawnError(argv0, cwd, cause) {
  // What child_process reports for a spawn in a missing directory.
  const err = new Error(`spawn ${argv0} ENOENT`, cause ? { cause } : undefined)
  err.code = 'ENOENT'
  err.errno = -2
  err.syscall = `spawn ${argv0}`
  err.path = argv0
  err.cwd = cwd
  return err
}

function makeWrapSubprocess({ rgTail, Cancel, checkRgArgv, checkSignal, unlisten }) {
  /** The caps of both streams when `spec` is one the in-process answer gives, else null. */
  function answerable(spec) {
    if (spec === null || typeof spec !== 'object') return null
    const { argv, cwd, stdio } = spec
    if (!Array.isArray(argv) || argv.length < 2 || !argv.every((a) => typeof a === 'string')) return null
    if (typeof cwd !== 'string' || stdio === null || typeof stdio !== 'object') return null
    // rg reads standard input when it is given one and no path: only an
    // ignored stdin (/dev/null, which rg does not search) is answered here.
    if (stdio.stdin !== 'ignore') return null
    const stdoutMax = collectorCap(stdio.stdout)
    const stderrMax = collectorCap(stdio.stderr)
    if (stdoutMax === null || stderrMax === null) return null
    if (checkRgArgv(argv.slice(1)) !== null) return null
    return { stdoutMax, stderrMax }
  }

  function inProcess(spec, { stdoutMax, stderrMax }) {
    const signal = checkSignal('spawn', spec.signal, 'spec.signal')
    const stdout = new Collected()
    const stderr = new Collected()
    const cancel = new Cancel()
    let stopped = false
    let onStop
    const stoppedNow = new Promise((resolve) => (onStop = resolve))
    // A stop settles `done` at once, as a killed rg; the search ends at its
    // next check of the flag, on its own thread.
    const stop = () => {
      if (stopped) return
      stopped = true
      cancel.cancel()
      onStop()
    }
    if (signal) {
      if (signal.aborted) stop()
      else signal.addEventListener('abort', stop, { once: true })
    }
    const cwd = path.resolve(spec.cwd)

    const done = (async () => {
      try {
        let isDir = false
        try {
          isDir = (await fs.promises.stat(cwd)).isDirectory()
        } catch (e) {
          throw spawnError(spec.argv[0], cwd, e)
        }
        if (!isDir) throw spawnError(spec.argv[0], cwd)
        if (stopped) return { ...KILLED }
        const search = rgTail(spec.argv.slice(1), cwd, cancel, stdoutMax, stderrMax)
        // Its failure after a stop (cancelled: no exit code) is no one's.
        search.catch(() => {})
        const out = await Promise.race([search, stoppedNow])
        if (stopped) return { ...KILLED }
        stdout.end(out.stdout, out.stdoutTotal)
        stderr.end(out.stderr, out.stderrTotal)
        return { exitCode: out.exitCode, signal: null }
      } finally {
        if (signal) unlisten(signal, stop)
      }
    })()
    // A caller that never looks at `done` must not get an unhandled
    // rejection; one that does still sees it reject.
    done.catch(() => {})
    const ended = done.then(
      () => true,
      () => true,
    )

    return {
      pid: undefined,
      // Collected streams only: nothing to write to, nothing piped.
      stdin: undefined,
      stdout: undefined,
      stderr: undefined,
      collected: { stdout, stderr },
      done,
      terminate() {
        stop()
        return ended.then(() => undefined)
      },
      // The seam's answer: true once the search has ended, false when
      // `waitSignal` aborts first (the search goes on).
      waitForExit(waitSignal) {
        try {
          waitSignal = checkSignal('waitForExit', waitSignal, 'signal')
        } catch (e) {
          return Promise.reject(e)
        }
        if (!waitSignal) return ended
        if (waitSignal.aborted) return Promise.resolve(false)
        return new Promise((resolve) => {
          const onWaitAbort = () => resolve(false)
          waitSignal.addEventListener('abort', onWaitAbort, { once: true })
          ended.then(() => {
            unlisten(waitSignal, onWaitAbort)
            resolve(true)
          })
        })
      },
    }
  }

  return function wrapSubprocess(service) {
    if (service === null || typeof service !== 'object' || typeof service.spawn !== 'function') {
      throw new TypeError('wrapSubprocess: service must be a subprocess service with a spawn(spec) method')
    }
    function spawn(spec) {
      const caps = answerable(spec)
      return caps ? inProcess(spec, caps) : service.spawn(spec)
    }
    // Everything but spawn is the service's own, called on the service.
    return new Proxy(service, {
      get(target, prop) {
        if (prop === 'spawn') return spawn
        const value = Reflect.get(target, prop, target)
        return typeof value === 'function' ? value.bind(target) : value
      },
    })
  }
}

module.exports = { makeWrapSubprocess }
