'use strict'
// wrapSubprocess(service): the harness's subprocess seam with rg answered
// in-process (contract.md §12, "Node"; the seam as the search tools drive
// it: seed-reference.md §1.4, §2.4 and §2.5).
//
// A spawn whose argv is [<any rg path>, ...one of the two invocations of
// contract.md §2] with stdin ignored is recognized by that shape (never by
// the program's path) and answered by rg() on a handle of the seam's shape;
// every other spawn goes to the wrapped service untouched.

const fs = require('node:fs')
const path = require('node:path')

/** The signal a terminated or aborted search reports, as the seam's SIGTERM to rg's group would. */
const KILLED = { exitCode: null, signal: 'SIGTERM' }

function checkMaxBytes(which, stream) {
  if (stream === undefined || stream === null) return Infinity
  if (typeof stream !== 'object') throw new TypeError(`spawn: spec.${which} must be an object, got ${typeof stream}`)
  const { maxBytes } = stream
  if (maxBytes === undefined) return Infinity
  if (!Number.isInteger(maxBytes) || maxBytes < 0) throw new RangeError('maxBytes must be a non-negative integer')
  return maxBytes
}

/**
 * One collected stream: the last `maxBytes` bytes of what was written, and
 * the count of all of them. `readFrom(offset)` reads from a byte offset of
 * the whole stream; `lossy` says bytes from `offset` on were dropped.
 */
class Collected {
  #max
  #tail = Buffer.alloc(0)
  #total = 0

  constructor(maxBytes) {
    this.#max = maxBytes
  }

  push(bytes) {
    this.#total += bytes.length
    if (bytes.length >= this.#max) {
      this.#tail = Buffer.from(bytes.subarray(bytes.length - this.#max))
    } else {
      const joined = Buffer.concat([this.#tail, bytes])
      this.#tail = joined.length > this.#max ? joined.subarray(joined.length - this.#max) : joined
    }
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

function abortError(signal) {
  const err = new Error('The operation was aborted', signal && signal.reason !== undefined ? { cause: signal.reason } : undefined)
  err.name = 'AbortError'
  err.code = 'ABORT_ERR'
  return err
}

function makeWrapSubprocess({ rg, checkRgArgv, checkSignal, unlisten }) {
  function isRgSpawn(spec) {
    if (spec === null || typeof spec !== 'object' || !Array.isArray(spec.argv) || spec.argv.length < 2) return false
    if (!spec.argv.every((a) => typeof a === 'string')) return false
    // rg reads standard input when it is given one and no path; the
    // harness's spawns ignore it, and only those are answered here.
    if (spec.stdin !== undefined && spec.stdin !== null && spec.stdin !== 'ignore') return false
    return checkRgArgv(spec.argv.slice(1)) === null
  }

  function inProcess(spec) {
    const stdoutMax = checkMaxBytes('stdout', spec.stdout)
    const stderrMax = checkMaxBytes('stderr', spec.stderr)
    const signal = checkSignal('spawn', spec.signal, 'spec.signal')
    const stdout = new Collected(stdoutMax)
    const stderr = new Collected(stderrMax)
    const stop = new AbortController()
    const onAbort = () => stop.abort()
    if (signal) {
      if (signal.aborted) stop.abort()
      else signal.addEventListener('abort', onAbort, { once: true })
    }
    const cwd = path.resolve(typeof spec.cwd === 'string' ? spec.cwd : process.cwd())

    const done = (async () => {
      try {
        let isDir = false
        try {
          isDir = (await fs.promises.stat(cwd)).isDirectory()
        } catch (e) {
          throw spawnError(spec.argv[0], cwd, e)
        }
        if (!isDir) throw spawnError(spec.argv[0], cwd)
        if (stop.signal.aborted) return { ...KILLED }
        const out = await rg(spec.argv.slice(1), { cwd, signal: stop.signal })
        stdout.push(out.stdout)
        stderr.push(out.stderr)
        return { exitCode: out.exitCode, signal: null }
      } catch (e) {
        if (e && e.name === 'AbortError' && stop.signal.aborted) return { ...KILLED }
        throw e
      } finally {
        if (signal) unlisten(signal, onAbort)
      }
    })()
    // A caller that never looks at `done` must not get an unhandled
    // rejection; one that does still sees it reject.
    done.catch(() => {})

    return {
      pid: undefined,
      collected: { stdout, stderr },
      done,
      terminate() {
        stop.abort()
        return done.then(
          () => undefined,
          () => undefined,
        )
      },
      waitForExit(waitSignal) {
        try {
          waitSignal = checkSignal('waitForExit', waitSignal, 'signal')
        } catch (e) {
          return Promise.reject(e)
        }
        if (!waitSignal) return done
        if (waitSignal.aborted) return Promise.reject(abortError(waitSignal))
        return new Promise((resolve, reject) => {
          const onWaitAbort = () => reject(abortError(waitSignal))
          waitSignal.addEventListener('abort', onWaitAbort, { once: true })
          const settle = (f) => (v) => {
            unlisten(waitSignal, onWaitAbort)
            f(v)
          }
          done.then(settle(resolve), settle(reject))
        })
      },
    }
  }

  return function wrapSubprocess(service) {
    if (service === null || typeof service !== 'object' || typeof service.spawn !== 'function') {
      throw new TypeError('wrapSubprocess: service must be a subprocess service with a spawn(spec) method')
    }
    function spawn(spec) {
      return isRgSpawn(spec) ? inProcess(spec) : service.spawn(spec)
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
