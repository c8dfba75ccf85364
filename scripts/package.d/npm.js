'use strict'
// Stage and pack the npm packages (docs/packaging.md), called by
// scripts/package:
//
//   node scripts/package.d/npm.js OUT KEY=ADDON,BINARY …
//
// For each built platform KEY (a key of bindings/node/platforms.json) a
// package `@dsh-search/KEY` holding the addon ADDON as `dsh-search.node` and
// the binary BINARY as `bin/dsh-search` (`.exe` on Windows), with the
// `os`, `cpu` and `libc` fields npm installs it by; then the main package
// `dsh-search` (bindings/node's files) with one optional dependency on each
// of them, at the same version, and the list of those platforms as its
// platforms.json. Each is staged in OUT/npm/NAME and packed into OUT with
// `npm pack`; the tarballs' names are printed, one a line.

const { execFileSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')

const root = path.join(__dirname, '..', '..')
const nodeDir = path.join(root, 'bindings', 'node')
const main = require(path.join(nodeDir, 'package.json'))
const allPlatforms = require(path.join(nodeDir, 'platforms.json'))

const [out, ...builds] = process.argv.slice(2)
if (!out || builds.length === 0) {
  console.error('usage: node scripts/package.d/npm.js OUT KEY=ADDON,BINARY …')
  process.exit(2)
}

function fresh(dir) {
  fs.rmSync(dir, { recursive: true, force: true })
  fs.mkdirSync(dir, { recursive: true })
  return dir
}

function writeJson(file, value) {
  fs.writeFileSync(file, JSON.stringify(value, null, 2) + '\n')
}

function pack(dir) {
  const cache = process.env.npm_config_cache
  const args = ['pack', '--json', '--pack-destination', path.resolve(out)]
  if (cache) args.push('--cache', cache)
  return JSON.parse(execFileSync('npm', args, { cwd: dir, encoding: 'utf8' }))[0].filename
}

const platforms = {}
const tarballs = []
for (const build of builds) {
  const m = /^([^=]+)=([^,]+),(.+)$/.exec(build)
  if (!m) throw new Error(`not KEY=ADDON,BINARY: ${build}`)
  const [, key, addon, binary] = m
  const p = allPlatforms[key]
  if (!p) throw new Error(`no platform ${key} in bindings/node/platforms.json (${Object.keys(allPlatforms).join(', ')})`)
  platforms[key] = p
  const name = `@dsh-search/${key}`
  const dir = fresh(path.join(out, 'npm', key))
  const exe = p.os === 'win32' ? 'dsh-search.exe' : 'dsh-search'
  fs.mkdirSync(path.join(dir, 'bin'))
  fs.copyFileSync(addon, path.join(dir, 'dsh-search.node'))
  fs.copyFileSync(binary, path.join(dir, 'bin', exe))
  fs.chmodSync(path.join(dir, 'bin', exe), 0o755)
  // The oldest system the build runs on (platforms.json: `macos`, the
  // images' minimum macOS; `glibc`, the newest glibc version they need),
  // which npm has no field for.
  const needs = p.macos ? ` (macOS ${p.macos} or later)` : p.glibc ? ` (glibc ${p.glibc} or later)` : ''
  fs.writeFileSync(
    path.join(dir, 'README.md'),
    `# ${name}\n\nThe ${p.target} build of dsh-search${needs}: its Node addon and its \`dsh-search\` binary. Install \`dsh-search\`, which depends on this package where it fits.\n`,
  )
  const manifest = {
    name,
    version: main.version,
    description: `The ${p.target} build of dsh-search${needs}: the Node addon and the dsh-search binary`,
    license: main.license,
    main: 'dsh-search.node',
    files: ['dsh-search.node', `bin/${exe}`, 'README.md'],
    os: [p.os],
    cpu: [p.cpu],
  }
  if (p.libc) manifest.libc = [p.libc]
  writeJson(path.join(dir, 'package.json'), manifest)
  tarballs.push(pack(dir))
}

const dir = fresh(path.join(out, 'npm', 'dsh-search'))
for (const file of main.files) {
  fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true })
  fs.copyFileSync(path.join(nodeDir, file), path.join(dir, file))
}
fs.chmodSync(path.join(dir, main.bin['dsh-search']), 0o755)
writeJson(path.join(dir, 'platforms.json'), platforms)
const manifest = { ...main }
// What a user installs needs none of the repository's build tooling.
delete manifest.scripts
delete manifest.devDependencies
delete manifest.napi
manifest.optionalDependencies = Object.fromEntries(Object.keys(platforms).map((key) => [`@dsh-search/${key}`, main.version]))
writeJson(path.join(dir, 'package.json'), manifest)
tarballs.push(pack(dir))

for (const t of tarballs) console.log(t)
