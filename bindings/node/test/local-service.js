'use strict'
// A local subprocess service with the seam's shape (seed-reference.md
// §1.4; the spec type of test/types.ts): it really spawns, in its own
// process group; stdin is 'ignore', 'pipe' (handle.stdin) or {data};
// stdout and stderr are 'pipe' (handle.stdout / handle.stderr), 'inherit',
// or a collector {maxBytes} that keeps the stream's last maxBytes bytes
// (a spill file it does not write); terminate() and spec.signal send
// SIGTERM to the group, SIGKILL after graceMs; waitForExit(signal?) is true
// once the process has exited, false when the signal aborts first. The
// tests wrap it, and compare what the wrapper answers in-process with what
// it answers by spawning.

const { spawn } = require('node:child_process')

class Tail {
  #max
  #kept = Buffer.alloc(0)
  #total = 0

  constructor(max) {
    this.#max = max
  }

  push(chunk) {
    this.#total += chunk.length
    const joined = Buffer.concat([this.#kept, chunk])
    this.#kept = joined.length > this.#max ? joined.subarray(joined.length - this.#max) : joined
  }

  readFrom(offset) {
    const dropped = this.#total - this.#kept.length
    const start = Math.min(Math.max(offset, dropped), this.#total)
    const text = new TextDecoder('utf-8', { ignoreBOM: true }).decode(this.#kept.subarray(start - dropped))
    return { text, nextOffset: this.#total, lossy: offset < dropped }
  }
}

const isCollector = (mode) => mode !== null && typeof mode === 'object'

function localService() {
  return {
    spawn(spec) {
      const [program, ...args] = spec.argv
      const { stdin, stdout: out, stderr: err } = spec.stdio
      const child = spawn(program, args, {
        cwd: spec.cwd,
        stdio: [isCollector(stdin) ? 'pipe' : stdin, isCollector(out) ? 'pipe' : out, isCollector(err) ? 'pipe' : err],
        detached: true,
      })
      if (isCollector(stdin)) child.stdin.end(stdin.data)
      const collected = {}
      for (const [name, mode] of [
        ['stdout', out],
        ['stderr', err],
      ]) {
        if (!isCollector(mode)) continue
        const tail = new Tail(mode.maxBytes)
        child[name].on('data', (b) => tail.push(b))
        collected[name] = tail
      }
      let killTimer
      const terminate = () => {
        if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return
        try {
          process.kill(-child.pid, 'SIGTERM')
        } catch {}
        killTimer = setTimeout(() => {
          try {
            process.kill(-child.pid, 'SIGKILL')
          } catch {}
        }, spec.graceMs)
      }
      if (spec.signal) {
        if (spec.signal.aborted) terminate()
        else spec.signal.addEventListener('abort', terminate, { once: true })
      }
      const done = new Promise((resolve, reject) => {
        child.on('error', reject)
        child.on('close', (exitCode, signal) => {
          clearTimeout(killTimer)
          if (spec.signal) spec.signal.removeEventListener('abort', terminate)
          resolve({ exitCode, signal })
        })
      })
      done.catch(() => {})
      const ended = done.then(
        () => true,
        () => true,
      )
      return {
        pid: child.pid,
        stdin: isCollector(stdin) ? undefined : (child.stdin ?? undefined),
        stdout: isCollector(out) ? undefined : (child.stdout ?? undefined),
        stderr: isCollector(err) ? undefined : (child.stderr ?? undefined),
        collected,
        done,
        terminate() {
          terminate()
          return ended.then(() => undefined)
        },
        waitForExit(signal) {
          if (!signal) return ended
          if (signal.aborted) return Promise.resolve(false)
          return Promise.race([ended, new Promise((r) => signal.addEventListener('abort', () => r(false), { once: true }))])
        },
      }
    },
  }
}

module.exports = { localService }
