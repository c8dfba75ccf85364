'use strict'
// A local subprocess service with the seam's shape (seed-reference.md
// §1.4): it really spawns, collects each stream's last maxBytes bytes,
// and stops the process group with SIGTERM (SIGKILL after graceMs) on
// terminate() or spec.signal. The tests wrap it, and compare what the
// wrapper answers in-process with what it answers by spawning.

const { spawn } = require('node:child_process')

class Tail {
  #max
  #kept = Buffer.alloc(0)
  #total = 0

  constructor(max) {
    this.#max = max ?? Infinity
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

function localService() {
  return {
    spawn(spec) {
      const [program, ...args] = spec.argv
      const child = spawn(program, args, {
        cwd: spec.cwd,
        stdio: [spec.stdin ?? 'ignore', 'pipe', 'pipe'],
        detached: true,
      })
      const stdout = new Tail(spec.stdout && spec.stdout.maxBytes)
      const stderr = new Tail(spec.stderr && spec.stderr.maxBytes)
      child.stdout.on('data', (b) => stdout.push(b))
      child.stderr.on('data', (b) => stderr.push(b))
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
        }, spec.graceMs ?? 3000)
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
      return {
        pid: child.pid,
        collected: { stdout, stderr },
        done,
        terminate() {
          terminate()
          return done.then(
            () => undefined,
            () => undefined,
          )
        },
        waitForExit: () => done,
      }
    },
  }
}

module.exports = { localService }
