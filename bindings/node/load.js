'use strict'
// Where the native half comes from (docs/packaging.md): the addon and the
// `dsh-search` binary are in one platform package, `@dsh-search/<key>`,
// which npm installs from the main package's optionalDependencies by its
// `os`, `cpu` and `libc` fields. In the repository the addon built by
// `napi build` lies beside this file instead, and is used first.
//
// Refused with a message that names what to do, never a bare
// MODULE_NOT_FOUND: a platform without a package, a platform package that
// is not installed, one of another version than this package (the main and
// the platform package come from one release), and an addon that does not
// load or whose embedded version is not this package's.

const fs = require('node:fs')
const path = require('node:path')

const { version } = require('./package.json')
// The platforms this release has packages for (scripts/package writes the
// list of those it built into the packed copy).
const platforms = require('./platforms.json')

const SCOPE = '@dsh-search'

/** The C library of this Linux: `glibc` or `musl`. */
function libc() {
  // Node's own report names the glibc it runs on, and nothing on musl.
  const report = process.report && typeof process.report.getReport === 'function' ? process.report.getReport() : null
  if (report && report.header && report.header.glibcVersionRuntime) return 'glibc'
  return 'musl'
}

/** This process's platform key (`linux-x64-gnu`, `win32-x64-gnu`, …), or null. */
function platformKey() {
  const libcName = process.platform === 'linux' ? libc() : undefined
  for (const [key, p] of Object.entries(platforms)) {
    if (p.os === process.platform && p.cpu === process.arch && p.libc === libcName) return key
  }
  return null
}

function describePlatform() {
  const libcName = process.platform === 'linux' ? ` (${libc()})` : ''
  return `${process.platform}-${process.arch}${libcName}`
}

function packagingError(message) {
  const err = new Error(`dsh-search: ${message}`)
  err.code = 'DSH_SEARCH_PLATFORM'
  return err
}

/**
 * The installed platform package's directory for this process, checked
 * against this package's version.
 */
function platformDir() {
  const key = platformKey()
  if (key === null) {
    throw packagingError(
      `no prebuilt package for ${describePlatform()}; packages exist for ${Object.keys(platforms).join(', ')}` +
        ' (elsewhere, build from source: cargo install --path cli)',
    )
  }
  const name = `${SCOPE}/${key}`
  let manifest
  try {
    manifest = require.resolve(`${name}/package.json`)
  } catch {
    throw packagingError(
      `the platform package ${name} for ${describePlatform()} is not installed; install it with the same version as dsh-search (${version}), e.g. npm install ${name}@${version} (an install with --no-optional or --omit=optional leaves it out)`,
    )
  }
  const have = JSON.parse(fs.readFileSync(manifest, 'utf8')).version
  if (have !== version) {
    throw packagingError(
      `${name} is version ${have} but dsh-search is ${version}: install both from one release (npm install dsh-search@${version} ${name}@${version})`,
    )
  }
  return path.dirname(manifest)
}

/** Load the addon at `file` and check that it was built for this version. */
function loadAddonFile(file, from) {
  let native
  try {
    native = require(file)
  } catch (e) {
    throw packagingError(`the addon ${file} (${from}) does not load on ${describePlatform()}: ${e.message}`)
  }
  const have = typeof native.version === 'function' ? native.version() : 'unknown'
  if (have !== version) {
    throw packagingError(`the addon ${file} (${from}) was built as version ${have}, but dsh-search is ${version}: reinstall both from one release`)
  }
  return native
}

/** The native addon: the repository's build beside this file, else the platform package's. */
function loadAddon() {
  const local = path.join(__dirname, 'dsh-search.node')
  if (fs.existsSync(local)) return loadAddonFile(local, 'the repository build')
  const dir = platformDir()
  return loadAddonFile(path.join(dir, 'dsh-search.node'), path.basename(dir))
}

/** The platform package's `dsh-search` executable. */
function binaryPath() {
  const dir = platformDir()
  const file = path.join(dir, 'bin', process.platform === 'win32' ? 'dsh-search.exe' : 'dsh-search')
  if (!fs.existsSync(file)) throw packagingError(`the platform package at ${dir} has no ${path.relative(dir, file)}: reinstall it`)
  return file
}

module.exports = { loadAddon, binaryPath, platformKey, platforms }
