#!/usr/bin/env node
'use strict'
// `dsh-search` (and `npx dsh-search …`): the platform package's binary,
// run with this process's arguments, standard streams and environment. Its
// exit status is this process's; a signal that ends this process is passed
// on to it first, so that `mcp` and `serve` stop with their client
// (docs/packaging.md, "How the native half is found").

const { spawn } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const { binaryPath } = require('../load.js')

// The signals Node does not die of when it raises one on itself: SIGUSR1
// starts its inspector (a port opened on the machine), SIGPIPE and SIGXFSZ
// it ignores from its start. A child ended by one of them is reported as a
// shell reports it, 128 + the signal's number. (The signals whose default
// is to be ignored, SIGCHLD and the like, end no child.)
const NODE_KEEPS = new Set(['SIGUSR1', 'SIGPIPE', 'SIGXFSZ'])

// Runs the binary ($1) with the arguments after it, each given as a printf
// format of literal characters and octal escapes: the bytes a JavaScript
// string cannot carry (spawn encodes its arguments as UTF-8). `printf x`
// keeps a trailing newline from the command substitution; `exec` leaves
// the binary as the launcher's child, with its own pid.
const EXEC_BYTES = 'bin=$1; shift; for a in "$@"; do shift; a=$(printf "$a"; printf x); set -- "$@" "${a%x}"; done; exec "$bin" "$@"'

function fail(message) {
  process.stderr.write(`dsh-search: ${message}\n`)
  process.exit(2)
}

/**
 * The arguments' own bytes when one of them is not UTF-8, else null (the
 * arguments go on as Node decoded them).
 *
 * Node decodes its arguments with U+FFFD in place of bytes that are not
 * UTF-8, so an argument without U+FFFD is as given. One with it may be
 * genuine (U+FFFD is valid UTF-8, and passes as text) or lossy: on Linux
 * the bytes are the tail of /proc/self/cmdline (node, its options, this
 * script, then the arguments). Elsewhere the arguments go on as Node
 * decoded them (Windows gives Node its arguments in UTF-16).
 */
function argumentBytes(args, bin) {
  if (process.platform !== 'linux' || !args.some((a) => a.includes('\uFFFD'))) return null
  const refuse = (why) =>
    fail(`an argument holds U+FFFD, which may stand for bytes that are not UTF-8, and ${why}: run the binary directly: ${bin}`)
  let cmdline
  try {
    cmdline = fs.readFileSync('/proc/self/cmdline')
  } catch (e) {
    return refuse(`the launcher cannot read its arguments' bytes (${e.message})`)
  }
  const all = []
  for (let start = 0; start < cmdline.length; ) {
    const end = cmdline.indexOf(0, start)
    all.push(cmdline.subarray(start, end < 0 ? cmdline.length : end))
    start = end < 0 ? cmdline.length : end + 1
  }
  const tail = all.slice(all.length - args.length)
  if (all.length < args.length + 2 || tail.some((b, i) => b.toString('utf8') !== args[i])) {
    return refuse("/proc/self/cmdline does not hold the launcher's arguments")
  }
  const utf8 = new TextDecoder('utf-8', { fatal: true })
  const text = (b) => {
    try {
      utf8.decode(b)
      return true
    } catch {
      return false
    }
  }
  return tail.every(text) ? null : tail
}

/** `bytes` as a printf format that prints them (see EXEC_BYTES). */
function printfFormat(bytes) {
  let format = ''
  for (const b of bytes) {
    const c = String.fromCharCode(b)
    // Letters, digits and `/._` as themselves: never `%` or `\`, which
    // printf reads, nor a leading `-`, which it could take for an option.
    format += /[A-Za-z0-9/._]/.test(c) ? c : `\\${b.toString(8).padStart(3, '0')}`
  }
  return format
}

let bin
try {
  bin = binaryPath()
} catch (e) {
  process.stderr.write(`${e.message}\n`)
  process.exit(2)
}
const args = process.argv.slice(2)
const bytes = argumentBytes(args, bin)
const options = { stdio: 'inherit', windowsHide: true }
const child =
  bytes === null
    ? spawn(bin, args, options)
    : spawn('/bin/sh', ['-c', EXEC_BYTES, 'dsh-search', bin, ...bytes.map(printfFormat)], options)
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => child.kill(signal))
}
child.on('error', (e) => {
  if (bytes !== null) fail(`an argument is not UTF-8 and /bin/sh, which passes its bytes on, cannot run (${e.message}): run the binary directly: ${bin}`)
  fail(`cannot run ${bin}: ${e.message}`)
})
child.on('exit', (code, signal) => {
  if (!signal) process.exit(code ?? 2)
  if (!NODE_KEEPS.has(signal)) {
    // Die of the same signal, as a shell would report it.
    process.removeAllListeners(signal)
    process.kill(process.pid, signal)
  }
  // A signal Node keeps: the status a shell gives a child it ended.
  process.exit(128 + os.constants.signals[signal])
})
