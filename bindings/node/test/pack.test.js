'use strict'
// `npm pack` makes an installable package: packed, installed from the
// tarball into a fresh directory, required by name, and used there.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { execFileSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')

const pkgDir = path.join(__dirname, '..')
const pkg = require('../package.json')

function npm(args, cwd) {
  // The npm cache stays outside the repository and the temp directories.
  const cache = path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'dsh-search', 'npm-cache')
  return execFileSync('npm', [...args, '--cache', cache, '--no-audit', '--no-fund'], { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
}

test('npm pack → npm install of the tarball → require by name works', () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'dsh-node-pack-'))
  try {
    const packed = JSON.parse(npm(['pack', '--json', '--pack-destination', tmp], pkgDir))[0]
    const names = packed.files.map((f) => f.path).sort()
    assert.deepEqual(names, ['README.md', 'dsh-search.node', 'index.d.ts', 'index.js', 'package.json', 'subprocess.js'])
    const app = path.join(tmp, 'app')
    fs.mkdirSync(app)
    fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true }))
    npm(['install', '--ignore-scripts', path.join(tmp, packed.filename)], app)
    fs.writeFileSync(path.join(app, 'a.txt'), 'one\nTODO: two\n')
    const script = `
      const { rg, Tools, wrapSubprocess } = require(${JSON.stringify(pkg.name)})
      ;(async () => {
        const out = await rg(['--no-config', '--json', '--regexp=TODO', '--', 'a.txt'], { cwd: process.cwd() })
        const r = await new Tools().call('grep', { pattern: 'TODO', path: 'a.txt' }, { cwd: process.cwd() })
        console.log(JSON.stringify({ exitCode: out.exitCode, begins: out.stdout.toString().startsWith('{"type":"begin"'), content: r.content, wrap: typeof wrapSubprocess }))
      })()`
    const result = JSON.parse(execFileSync(process.execPath, ['-e', script], { cwd: app, encoding: 'utf8' }))
    assert.deepEqual(result, { exitCode: 0, begins: true, content: 'Found 1 match\n\na.txt\nLine 2: TODO: two', wrap: 'function' })
    assert.ok(fs.existsSync(path.join(app, 'node_modules', ...pkg.name.split('/'), 'index.d.ts')))
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true })
  }
})
