'use strict'
// The public surface of the package (contract.md §12, "Node"): rg(),
// Tools and wrapSubprocess(), on the addon's primitives (src/lib.rs).
// Everything JavaScript hands in is checked here first, so that bad input
// is a rejected promise with a message that names the argument, never an
// exception from a type conversion deep in the addon.

const path = require('node:path')
// The addon: the platform package's, checked (load.js).
const native = require('./load.js').loadAddon()

// process.exit() ends the process without tearing its environment down
// (no cleanup hook runs): the calls in flight are cancelled here, so that
// a real rg the tools started (backend 'rg') is stopped, not left running
// without its parent.
process.once('exit', () => native.stopCalls())

/** An AbortError like the one Node's own APIs reject with. */
function abortError(signal) {
  const reason = signal && signal.reason
  if (reason instanceof Error && reason.name === 'AbortError') return reason
  const err = new Error('The operation was aborted', reason === undefined ? undefined : { cause: reason })
  err.name = 'AbortError'
  err.code = 'ABORT_ERR'
  return err
}

function describe(value) {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  return typeof value === 'object' ? 'an object' : `${typeof value} ${String(value)}`
}

/**
 * `signal` when it is an AbortSignal, else a TypeError with the code Node's
 * own APIs give a bad `signal` option (ERR_INVALID_ARG_TYPE). Beyond Node's
 * own check (`aborted`), the listener methods the call uses are required:
 * an object without them would fail only later, inside the call.
 */
function checkSignal(who, signal, name = 'options.signal') {
  if (signal === undefined || signal === null) return undefined
  if (typeof AbortSignal === 'function' && signal instanceof AbortSignal) return signal
  let got = describe(signal)
  if (typeof signal === 'object') {
    if (typeof signal.aborted !== 'boolean') got = 'an object without a boolean aborted'
    else if (typeof signal.addEventListener !== 'function') got = 'an object without addEventListener'
    else if (typeof signal.removeEventListener !== 'function') got = 'an object without removeEventListener'
    else return signal
  }
  const err = new TypeError(`${who}: ${name} must be an AbortSignal, got ${got}`)
  err.code = 'ERR_INVALID_ARG_TYPE'
  throw err
}

/** Remove `listener`; a signal that throws there must not fail the call it served. */
function unlisten(signal, listener) {
  try {
    signal.removeEventListener('abort', listener)
  } catch {}
}

function checkCwd(who, cwd) {
  if (typeof cwd !== 'string' || cwd.length === 0) {
    throw new TypeError(`${who}: cwd must be a non-empty string (the directory to run in), got ${cwd === undefined ? 'nothing' : describe(cwd)}`)
  }
  if (cwd.includes('\0')) throw new TypeError(`${who}: cwd contains a NUL byte`)
  // The addon never uses the process's current directory; a relative cwd
  // means what it means to child_process: relative to it.
  return path.resolve(cwd)
}

function checkRemoteCwd(who, cwd) {
  if (typeof cwd !== 'string' || cwd.length === 0) {
    throw new TypeError(`${who}: cwd must be a non-empty string (an absolute directory on the remote host), got ${cwd === undefined ? 'nothing' : describe(cwd)}`)
  }
  if (cwd.includes('\0')) throw new TypeError(`${who}: cwd contains a NUL byte`)
  return cwd
}

function checkArgv(who, argv) {
  if (!Array.isArray(argv)) throw new TypeError(`${who}: argv must be an array of strings, got ${describe(argv)}`)
  argv.forEach((a, i) => {
    if (typeof a !== 'string') throw new TypeError(`${who}: argv[${i}] must be a string, got ${describe(a)}`)
  })
  return argv
}

/**
 * Run `start(cancel)` (a native promise) so that `signal` cancels it: the
 * native work is told to stop, and the returned promise rejects with an
 * AbortError at once (the search stops at its next check, on its thread).
 */
function cancellable(signal, start) {
  if (signal && signal.aborted) return Promise.reject(abortError(signal))
  const cancel = new native.Cancel()
  const work = start(cancel)
  if (!signal) return work
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      cancel.cancel()
      reject(abortError(signal))
    }
    signal.addEventListener('abort', onAbort, { once: true })
    work.then(
      (value) => {
        unlisten(signal, onAbort)
        resolve(value)
      },
      (err) => {
        unlisten(signal, onAbort)
        reject(err)
      },
    )
  })
}

/**
 * rg's own answer to `argv` (its arguments without the program name, one of
 * the two invocations of contract.md §2), computed in-process.
 */
async function rg(argv, options) {
  checkArgv('rg', argv)
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`rg: options must be an object with cwd, got ${options === undefined ? 'nothing' : describe(options)}`)
  }
  const cwd = checkCwd('rg', options.cwd)
  const signal = checkSignal('rg', options.signal)
  return cancellable(signal, (cancel) => native.rg(argv, cwd, cancel))
}

/** The model-facing tools (glob, grep, read, write, edit) over one workspace. */
class Tools {
  #native
  #remote

  constructor(options = {}) {
    if (options === null || typeof options !== 'object' || Array.isArray(options)) {
      throw new TypeError(`Tools: options must be an object, got ${describe(options)}`)
    }
    const o = { ...options }
    for (const key of ['backend', 'fs', 'overlay', 'root', 'identity', 'knownHosts', 'indexWatch']) {
      if (o[key] !== undefined && typeof o[key] !== 'string') {
        throw new TypeError(`Tools: options.${key} must be a string, got ${describe(o[key])}`)
      }
    }
    // A remote workspace's root (the index's) is a path on the host: never
    // resolved against this process's directory.
    const remote = (o.fs || '').startsWith('sftp://')
    for (const key of ['overlay', 'root', 'identity', 'knownHosts']) {
      if (o[key] !== undefined && !(remote && key === 'root')) o[key] = path.resolve(o[key])
    }
    if (o.index !== undefined && typeof o.index !== 'boolean') {
      throw new TypeError(`Tools: options.index must be a boolean, got ${describe(o.index)}`)
    }
    // mem, an overlay and the index cover a directory: the root, else the
    // current one (a remote workspace has none: its calls' cwds name remote
    // directories).
    if (o.root === undefined && !remote && (o.overlay !== undefined || o.index === true || (o.fs || '').startsWith('mem'))) {
      o.root = process.cwd()
    }
    let json
    try {
      json = JSON.stringify(o)
    } catch (e) {
      throw new TypeError(`Tools: options must be JSON-serializable: ${e.message}`)
    }
    this.#native = new native.NativeTools(json)
    // A remote workspace's cwd is a path on the host: never resolved
    // against this process's directory, and checked there by the call.
    this.#remote = remote
  }

  /** The tool definitions: name, description, input schema, prompt. */
  definitions() {
    return JSON.parse(this.#native.definitionsJson())
  }

  /** Call tool `name`; resolves to the `--format json` result object. */
  async call(name, args, options) {
    if (typeof name !== 'string') throw new TypeError(`Tools.call: name must be a string, got ${describe(name)}`)
    if (args === null || typeof args !== 'object' || Array.isArray(args)) {
      throw new TypeError(`Tools.call: args must be an object, got ${args === undefined ? 'nothing' : describe(args)}`)
    }
    if (options === null || typeof options !== 'object') {
      throw new TypeError(`Tools.call: options must be an object with cwd, got ${options === undefined ? 'nothing' : describe(options)}`)
    }
    const cwd = this.#remote ? checkRemoteCwd('Tools.call', options.cwd) : checkCwd('Tools.call', options.cwd)
    const { session } = options
    if (session !== undefined && session !== null && typeof session !== 'string') {
      throw new TypeError(`Tools.call: session must be a string, got ${describe(session)}`)
    }
    const signal = checkSignal('Tools.call', options.signal)
    let json
    try {
      json = JSON.stringify(args)
    } catch (e) {
      throw new TypeError(`Tools.call: args must be JSON-serializable: ${e.message}`)
    }
    // A cancelled call resolves with the tool's aborted error (as the
    // servers answer a cancelled call), so the native call is awaited; a
    // signal aborted already gets that answer without a search.
    const cancel = new native.Cancel()
    const onAbort = () => cancel.cancel()
    if (signal && signal.aborted) cancel.cancel()
    else if (signal) signal.addEventListener('abort', onAbort, { once: true })
    try {
      return JSON.parse(await this.#native.call(name, json, cwd, session ?? null, cancel))
    } finally {
      if (signal) unlisten(signal, onAbort)
    }
  }
}

const wrapSubprocess = require('./subprocess.js').makeWrapSubprocess({
  rgTail: native.rgTail,
  Cancel: native.Cancel,
  checkRgArgv: native.checkRgArgv,
  checkSignal,
  unlisten,
})

module.exports = { rg, Tools, wrapSubprocess }
