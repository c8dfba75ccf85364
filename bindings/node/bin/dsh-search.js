#!/usr/bin/env node
'use strict'
// `dsh-search` (and `npx dsh-search …`): the platform package's binary,
// run with this process's arguments, standard streams and environment. Its
// exit status is this process's; a signal that ends this process is passed
// on to it first, so that `mcp` and `serve` stop with their client.

const { spawn } = require('node:child_process')
const { binaryPath } = require('../load.js')

let bin
try {
  bin = binaryPath()
} catch (e) {
  process.stderr.write(`${e.message}\n`)
  process.exit(2)
}
const child = spawn(bin, process.argv.slice(2), { stdio: 'inherit', windowsHide: true })
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => child.kill(signal))
}
child.on('error', (e) => {
  process.stderr.write(`dsh-search: cannot run ${bin}: ${e.message}\n`)
  process.exit(2)
})
child.on('exit', (code, signal) => {
  if (signal) {
    // Die of the same signal, as a shell would report it.
    process.removeAllListeners(signal)
    process.kill(process.pid, signal)
  }
  process.exit(code ?? 2)
})
