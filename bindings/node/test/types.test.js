'use strict'
// index.d.ts under the TypeScript compiler (pinned in package.json):
// test/types.ts uses every export as the harness would, with strict
// checks, and marks what the types must refuse with @ts-expect-error (an
// error that does not happen fails the check too).

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const path = require('node:path')

test('the TypeScript declarations type-check the package as it is used', () => {
  const tsc = path.join(__dirname, '..', 'node_modules', 'typescript', 'bin', 'tsc')
  const r = spawnSync(process.execPath, [tsc, '-p', path.join(__dirname, 'tsconfig.json')], { encoding: 'utf8' })
  assert.equal(r.status, 0, `tsc failed:\n${r.stdout}${r.stderr}`)
})
