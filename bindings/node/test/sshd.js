'use strict'
// A real OpenSSH sshd on 127.0.0.1 for the sftp:// tests, as
// tests/util/sshd.rs starts one (contract.md §11): generated host and user
// keys, a free port, its own sshd_config (internal-sftp, keys only) and a
// known_hosts naming its host key. A missing sshd fails the tests: it
// never skips them (scripts/test installs openssh-server).

const { execFileSync, spawn } = require('node:child_process')
const fs = require('node:fs')
const net = require('node:net')
const os = require('node:os')
const path = require('node:path')

/** Where Debian's openssh-server puts the daemon. */
const SSHD = '/usr/sbin/sshd'

function keygen(file) {
  try {
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'dsh-search-test', '-f', file], { stdio: 'pipe' })
  } catch (e) {
    throw new Error(`ssh-keygen cannot run (${e.message}): scripts/test installs openssh-client`)
  }
}

/** A port nobody listens on now (the kernel's pick, released). */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

function accepts(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1')
    socket.on('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.on('error', () => resolve(false))
  })
}

/**
 * Start an sshd that lets `root` in with the generated user key. Resolves
 * to the port, the keys, a known_hosts file with the host key, one with
 * another key, and `stop()`.
 */
async function start() {
  if (!fs.existsSync(SSHD)) {
    throw new Error(`${SSHD} is missing: the sftp:// tests need OpenSSH's server (scripts/test installs openssh-server)`)
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dsh-node-sshd-'))
  // sshd reads authorized_keys as the user it logs in.
  fs.chmodSync(dir, 0o755)
  const k = (n) => path.join(dir, n)
  for (const n of ['user_key', 'stranger_key', 'host_key', 'other_host_key']) keygen(k(n))
  fs.copyFileSync(k('user_key.pub'), k('authorized_keys'))
  fs.chmodSync(k('authorized_keys'), 0o644)
  const port = await freePort()
  fs.writeFileSync(k('sshd_config'), [
    `Port ${port}`, 'ListenAddress 127.0.0.1', `HostKey ${k('host_key')}`, 'PidFile none',
    `AuthorizedKeysFile ${k('authorized_keys')}`, 'PubkeyAuthentication yes',
    'PasswordAuthentication no', 'KbdInteractiveAuthentication no', 'UsePAM no',
    'PermitRootLogin yes', 'StrictModes no', 'MaxStartups 64', 'MaxSessions 64',
    'Subsystem sftp internal-sftp', 'LogLevel ERROR', '',
  ].join('\n'))
  const entry = (key) => `[127.0.0.1]:${port} ${fs.readFileSync(k(`${key}.pub`), 'utf8')}`
  fs.writeFileSync(k('known_hosts'), entry('host_key'))
  fs.writeFileSync(k('other_known_hosts'), entry('other_host_key'))
  // sshd refuses to start without its privilege-separation directory.
  fs.mkdirSync('/run/sshd', { recursive: true })
  const log = fs.openSync(k('sshd.log'), 'a')
  // setpriv --pdeathsig: the daemon dies with this process even when it is
  // killed before `stop()` runs.
  const child = spawn('setpriv', ['--pdeathsig', 'KILL', SSHD, '-D', '-e', '-f', k('sshd_config')], {
    stdio: ['ignore', 'ignore', log],
  })
  let exited = null
  child.on('exit', (code, signal) => { exited = { code, signal } })
  const deadline = Date.now() + 10_000
  while (!(await accepts(port))) {
    if (exited || Date.now() > deadline) {
      child.kill('SIGKILL')
      const why = exited ? `exited (${JSON.stringify(exited)})` : 'did not listen within 10 s'
      throw new Error(`${SSHD} ${why}: ${fs.readFileSync(k('sshd.log'), 'utf8')}`)
    }
    await new Promise((r) => setTimeout(r, 20))
  }
  return {
    port,
    userKey: k('user_key'),
    strangerKey: k('stranger_key'),
    knownHosts: k('known_hosts'),
    otherKnownHosts: k('other_known_hosts'),
    stop() {
      child.kill('SIGKILL')
      fs.closeSync(log)
      fs.rmSync(dir, { recursive: true, force: true })
    },
  }
}

module.exports = { start }
