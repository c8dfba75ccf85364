'use strict'
// The Node rows of BENCHMARKS.md: rg() through the addon against
// child_process.spawn of the rg binary with its output collected, measured
// in the same run, and the addon's per-call overhead over the same call made
// in-process from Rust (the addon's timeInProcess, same build).
//
//   node bench/bench.js [--calls N] [--linux-iterations N] [--small DIR] [--linux DIR]
//
// Needs DSH_SEARCH_RG (rg 15.2.0), a release addon (npm run build) and, when
// the 100-file workspace is missing, cargo (`cargo test --bench search --
// corpus small DIR` writes it). Not part of the tests.

const { execFileSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { performance } = require('node:perf_hooks')

const { rg } = require('..')
const h = require('../test/helpers.js')
const native = require('../dsh-search.node')

const args = process.argv.slice(2)
const opt = (name, def) => {
  const i = args.indexOf(`--${name}`)
  return i >= 0 ? args[i + 1] : def
}
const cache = path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'dsh-search')
const small = opt('small', path.join(cache, 'bench', 'small'))
const linux = opt('linux', path.join(cache, 'linux-6.1', 'linux-source-6.1'))
const calls = Number(opt('calls', 400))
const linuxIterations = Number(opt('linux-iterations', 7))
const bin = process.env.DSH_SEARCH_RG
if (!bin) throw new Error('set DSH_SEARCH_RG to the rg 15.2.0 binary')
const repo = path.join(__dirname, '..', '..', '..')

const grepArgv = (pattern) => h.grepArgv(pattern)

// The spawn the tests compare with (test/helpers.js), here as the other side.
const spawnRg = (argv, cwd) => h.spawnRg(bin, argv, cwd)

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const fmt = (ms) => (ms < 1 ? `${(ms * 1000).toFixed(0)} µs` : `${ms.toFixed(1)} ms`)

/** Both sides, interleaved call by call, so load drifts hit both alike. */
async function pair(argv, cwd, n) {
  const addon = []
  const spawned = []
  let last
  for (let i = 0; i < n; i++) {
    let t = performance.now()
    last = await rg(argv, { cwd })
    addon.push(performance.now() - t)
    t = performance.now()
    const want = await spawnRg(argv, cwd)
    spawned.push(performance.now() - t)
    if (want.exitCode !== last.exitCode) throw new Error(`exit codes differ: ${last.exitCode} vs ${want.exitCode}`)
  }
  return { addon: median(addon), spawned: median(spawned), exitCode: last.exitCode, bytes: last.stdout.length }
}

function cargoSearchBench(rest) {
  return execFileSync('cargo', ['test', '--quiet', '--bench', 'search', '--', ...rest], { cwd: repo, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })
}

async function main() {
  if (!fs.existsSync(small)) cargoSearchBench(['corpus', 'small', small])
  const rows = []
  // Warm both sides (page cache, pool threads).
  await pair(grepArgv('device_state'), small, 20)
  const tiny = await pair(grepArgv('device_state'), small, calls)
  rows.push(['generated small (100 files)', 'grep device_state, rg() vs spawn', fmt(tiny.addon), fmt(tiny.spawned), (tiny.addon / tiny.spawned).toFixed(2), `exit ${tiny.exitCode}, ${tiny.bytes} B`])
  // The per-call overhead: rg() back to back against the same call made
  // in-process from Rust back to back (the addon's timeInProcess, same
  // build), in alternating rounds (the engine's threads are as warm on both
  // sides; the interleaved spawns above leave them cold for each rg()).
  const rounds = []
  for (let r = 0; r < 5; r++) {
    const addon = []
    for (let i = 0; i < calls; i++) {
      const t = performance.now()
      await rg(grepArgv('device_state'), { cwd: small })
      addon.push(performance.now() - t)
    }
    const rust = native.timeInProcess(grepArgv('device_state'), small, calls) / 1000
    rounds.push({ addon: median(addon), rust })
  }
  rounds.sort((a, b) => a.addon - a.rust - (b.addon - b.rust))
  const mid = rounds[Math.floor(rounds.length / 2)]
  const spread = rounds.map((r) => fmt(r.addon - r.rust)).join(', ')
  rows.push(['generated small (100 files)', 'per-call overhead of rg() over the Rust call', fmt(mid.addon), fmt(mid.rust), '', `overhead ${fmt(mid.addon - mid.rust)} (rounds: ${spread})`])
  if (fs.existsSync(linux)) {
    await pair(grepArgv('zq_unique_sentinel_42'), linux, 1)
    const rare = await pair(grepArgv('zq_unique_sentinel_42'), linux, linuxIterations)
    rows.push(['linux-source-6.1', 'grep rare literal, rg() vs spawn', fmt(rare.addon), fmt(rare.spawned), (rare.addon / rare.spawned).toFixed(2), `exit ${rare.exitCode}`])
  } else {
    console.error(`no Linux tree at ${linux} (pass --linux DIR with an unpacked linux-source-6.1 tree); its row is left out`)
  }
  console.log('| tree | workload | addon (median) | other side (median) | ratio | note |')
  console.log('|---|---|---:|---:|---:|---|')
  for (const r of rows) console.log(`| ${r.join(' | ')} |`)
}

main().catch((e) => {
  console.error(e)
  process.exit(1)
})
