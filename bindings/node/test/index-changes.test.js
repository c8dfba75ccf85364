'use strict'
// new Tools({ index: true }) under hard links and permission changes, compared call
// by call with the unindexed Tools on the same tree: a hard link made and
// written through its new name, a directory made readable but not
// searchable and back, the root made unreadable, then readable but not
// searchable, then restored. Run in a child process as uid 65534 when the
// tests run as root (for whom no mode bit denies anything). Linux only
// (Unix modes and a uid to run as); tools.test.js compares the index with
// the scan everywhere, watched and validated.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { execFileSync } = require('node:child_process')

const h = require('./helpers.js')

const NOBODY = 65534

// The child: opens both Tools on the root, waits for the mirror, then
// after each step compares every call; prints what it found as JSON.
const CHILD = `
const fs = require('node:fs')
const path = require('node:path')
const { Tools } = require(process.argv[1])
const root = process.argv[2]
const at = (p) => path.join(root, p)
const indexed = new Tools({ index: true, root })
const scan = new Tools()
const ctx = { cwd: root }
const calls = [
  ['grep', { pattern: 'NEWSTUFF' }],
  ['grep', { pattern: 'token' }],
  ['glob', { pattern: '**/*.txt' }],
  ['glob', { pattern: '*' }],
]
const steps = [
  ['nothing yet', () => {}],
  ['ln d/a.txt d/b.txt, appended through d/b.txt', () => {
    fs.linkSync(at('d/a.txt'), at('d/b.txt'))
    fs.appendFileSync(at('d/b.txt'), 'NEWSTUFF token\\n')
  }],
  ['chmod 644 locked', () => fs.chmodSync(at('locked'), 0o644)],
  ['chmod 755 locked', () => fs.chmodSync(at('locked'), 0o755)],
  ['chmod 000 the root', () => fs.chmodSync(root, 0o000)],
  ['chmod 644 the root', () => fs.chmodSync(root, 0o644)],
  ['chmod 755 the root', () => fs.chmodSync(root, 0o755)],
]
;(async () => {
  const report = []
  for (const [step, change] of steps) {
    change()
    // After a change of the root the scan answers until the rebuild is
    // done: asked again (at most 60 s) until the mirror does, where it can.
    const deadline = Date.now() + 60000
    for (;;) {
      const rows = []
      for (const [tool, args] of calls) {
        const a = await indexed.call(tool, args, ctx)
        const b = await scan.call(tool, args, ctx)
        rows.push({ tool, args, same: a.content === b.content, indexed: a.content, scan: b.content, said: a.meta && a.meta.index })
      }
      const mirrored = rows.every((r) => r.said === 'mirror')
      const rootLocked = step.includes('root') && !step.includes('755')
      if (mirrored || rootLocked || Date.now() > deadline) {
        report.push({ step, rows })
        break
      }
      await new Promise((r) => setTimeout(r, 20))
    }
  }
  process.stdout.write(JSON.stringify(report))
})()
`

if (process.platform === 'linux') {
  test('index: true follows hard links and permission changes as the scan answers', () => {
    const tree = h.buildTree([
      h.file('d/a.txt', 'old token\n'),
      h.file('d/x.txt', 'token\n'),
      h.file('locked/b.txt', 'token in locked\n'),
      h.file('locked/sub/c.txt', 'token below locked\n'),
    ])
    const root = process.getuid() === 0
    try {
      if (root) execFileSync('chown', ['-R', `${NOBODY}:${NOBODY}`, tree.root])
      const out = execFileSync(process.execPath, ['-e', CHILD, path.join(__dirname, '..'), tree.root], {
        encoding: 'utf8',
        ...(root ? { uid: NOBODY, gid: NOBODY } : {}),
        env: { ...process.env, HOME: tree.root },
      })
      const report = JSON.parse(out)
      assert.equal(report.length, 7)
      for (const { step, rows } of report) {
        for (const r of rows) {
          assert.ok(r.same, `${step}: ${r.tool} ${JSON.stringify(r.args)}: the index answered\n${r.indexed}\nthe scan\n${r.scan}`)
          if (!step.includes('the root') || step.includes('755')) {
            assert.equal(r.said, 'mirror', `${step}: ${r.tool} ${JSON.stringify(r.args)}`)
          }
        }
      }
      // The steps did what they say: the comparisons are not of empty
      // answers or of answers that never changed.
      const grepOf = (step, pattern) => report.find((s) => s.step === step).rows.find((r) => r.args.pattern === pattern).scan
      assert.match(grepOf('ln d/a.txt d/b.txt, appended through d/b.txt', 'NEWSTUFF'), /^Found 2 matches/)
      assert.match(grepOf('chmod 644 locked', 'token'), /Permission denied \(os error 13\)/)
      assert.match(grepOf('chmod 755 locked', 'token'), /token below locked/)
      assert.match(grepOf('chmod 000 the root', 'token'), /Permission denied \(os error 13\)/)
      assert.match(grepOf('chmod 755 the root', 'token'), /token below locked/)
    } finally {
      fs.chmodSync(tree.root, 0o755)
      tree.cleanup()
    }
  })
}
