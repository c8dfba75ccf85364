'use strict'
// The packaged loader (the main npm package's load.js) on a Mac, with
// process.platform and process.arch made to look like one's: it picks the
// darwin platform package of the process's architecture, finds its binary,
// and refuses what it cannot load with its own error. The packages are the
// artifacts (DSH_SEARCH_ARTIFACTS) of the darwin targets in
// DSH_SEARCH_TARGETS, unpacked where npm puts them (node_modules/dsh-search,
// node_modules/@dsh-search/KEY). The addon itself, a Mach-O image, cannot
// load here: its refusal names the package's file, which shows the loader
// reached it. Run by scripts/inspect-packages.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { execFileSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const ART = process.env.DSH_SEARCH_ARTIFACTS
const VERSION = process.env.DSH_SEARCH_VERSION
const TARGETS = process.env.DSH_SEARCH_TARGETS.split(/\s+/)
const platforms = require(path.join(process.env.DSH_SEARCH_REPO, 'bindings', 'node', 'platforms.json'))
const darwin = Object.keys(platforms).filter((k) => platforms[k].os === 'darwin' && TARGETS.includes(platforms[k].target))

function unpack(tgz, dest) {
  fs.mkdirSync(dest, { recursive: true })
  execFileSync('tar', ['xzf', path.join(ART, tgz), '-C', dest, '--strip-components=1'])
}

/** An app with the main package and every darwin platform package built. */
function app() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dsh-darwin-'))
  unpack(`dsh-search-${VERSION}.tgz`, path.join(dir, 'node_modules', 'dsh-search'))
  for (const key of darwin) unpack(`dsh-search-${key}-${VERSION}.tgz`, path.join(dir, 'node_modules', '@dsh-search', key))
  return dir
}

/** What the loader says in `dir` on `platform`/`arch`, in a node of its own. */
function load(dir, platform, arch) {
  const script = `
    Object.defineProperty(process, 'platform', { value: ${JSON.stringify(platform)} })
    Object.defineProperty(process, 'arch', { value: ${JSON.stringify(arch)} })
    const l = require('dsh-search/load.js')
    const out = { key: l.platformKey() }
    for (const f of ['binaryPath', 'loadAddon']) {
      try { out[f] = String(l[f]()) } catch (e) { out[f] = { code: e.code, message: e.message } }
    }
    console.log(JSON.stringify(out))`
  return JSON.parse(execFileSync(process.execPath, ['-e', script], { cwd: dir, encoding: 'utf8' }))
}

test('every darwin target under test is in the packaged platforms, with its minimum macOS', () => {
  assert.ok(darwin.length > 0, `no darwin target in ${TARGETS.join(' ')}`)
  const dir = app()
  const packaged = require(path.join(dir, 'node_modules', 'dsh-search', 'platforms.json'))
  const main = require(path.join(dir, 'node_modules', 'dsh-search', 'package.json'))
  for (const key of darwin) {
    assert.deepEqual(packaged[key], platforms[key])
    assert.equal(main.optionalDependencies[`@dsh-search/${key}`], VERSION)
  }
  fs.rmSync(dir, { recursive: true })
})

test('the loader picks the darwin package of the architecture', () => {
  const cases = [
    ...darwin.map((key) => [`${key}, installed`, key, null]),
    ...darwin.map((key) => [`${key}, its package removed`, key, 'remove']),
    ['darwin-ia32: no package', 'darwin-ia32', null],
  ]
  for (const [name, key, change] of cases) {
    const [, arch] = key.split('-')
    const dir = app()
    const pkg = path.join(dir, 'node_modules', '@dsh-search', key)
    if (change === 'remove') fs.rmSync(pkg, { recursive: true })
    const got = load(dir, 'darwin', arch)
    const where = `${name}: ${JSON.stringify(got)}`
    if (!platforms[key]) {
      assert.equal(got.key, null, where)
      for (const f of ['binaryPath', 'loadAddon']) {
        assert.equal(got[f].code, 'DSH_SEARCH_PLATFORM', where)
        assert.match(got[f].message, /no prebuilt package for darwin-ia32; packages exist for .*darwin-/, where)
      }
    } else if (change === 'remove') {
      assert.equal(got.key, key, where)
      const want = `the platform package @dsh-search/${key} for darwin-${arch} is not installed`
      for (const f of ['binaryPath', 'loadAddon']) assert.ok(got[f].message.includes(want), where)
    } else {
      assert.equal(got.key, key, where)
      // The package's binary, under its Unix name (no .exe).
      assert.equal(got.binaryPath, path.join(fs.realpathSync(pkg), 'bin', 'dsh-search'), where)
      assert.equal(got.loadAddon.code, 'DSH_SEARCH_PLATFORM', where)
      assert.ok(
        got.loadAddon.message.includes(`the addon ${path.join(fs.realpathSync(pkg), 'dsh-search.node')} (${key}) does not load on darwin-${arch}`),
        where,
      )
    }
    fs.rmSync(dir, { recursive: true })
  }
})
