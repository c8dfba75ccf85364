'use strict'
// Conformance through the binding: rg() against the real rg 15.2.0 at the
// raw level of contract.md §2, from JavaScript, on a share of the fixture
// tables of tests/conformance.rs (every group but the ones that need
// another user or special files: permissions, FIFOs and sockets stay in the
// Rust suite). Each group builds its tree once and runs its table; every
// case runs before a group fails, and the failure lists each case that
// differs.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')

const { rg } = require('..')
const h = require('./helpers.js')
const { file, fixture, dir, symlink, mtime, glob, grep } = h

const bin = h.rgBinary()
h.controlEnvironment()

async function check(specs, cases) {
  const tree = h.buildTree(specs)
  try {
    const failures = []
    // Four cases at a time: enough to overlap, few enough for 2 cores.
    let next = 0
    const worker = async () => {
      while (next < cases.length) {
        const c = cases[next++]
        const cwd = path.join(tree.root, c.cwd)
        const argv = h.argvOf(c, tree.root)
        const [actual, expected] = await Promise.all([rg(argv, { cwd }), h.spawnRg(bin, argv, cwd)])
        const f = h.compare(c.kind, h.label(c), actual, expected)
        if (f) failures.push(f)
      }
    }
    // Every worker ends before the tree is removed, also when one fails:
    // the others' rg processes still run in it, and Windows does not
    // remove a directory that is a process's working directory (EBUSY,
    // which would then hide the failure).
    const ends = await Promise.allSettled([worker(), worker(), worker(), worker()])
    const failed = ends.find((e) => e.status === 'rejected')
    if (failed) throw failed.reason
    assert.equal(failures.length, 0, `${failures.length} of ${cases.length} cases differ from rg:\n\n${failures.join('\n\n')}`)
  } finally {
    tree.cleanup()
  }
}

const basicTree = () => [
  file('src/a.rs', 'fn main() { needle(); }\n'),
  file('src/b.txt', 'needle in b\nno match here\nneedle again needle\n'),
  file('src/deep/c.rs', '// needle deep\n'),
  file('src/.hidden.rs', 'needle hidden rs\n'),
  file('docs/readme.md', '# needle docs\n'),
  file('notes.md', 'notes needle\n'),
  file('top.txt', 'top needle\nalpha\n'),
  file('alpha.txt', 'alpha\n'),
  file('bravo.rs', 'bravo needle\n'),
  file('.hidden.txt', 'hidden needle\n'),
  file('.hdir/inner.txt', 'needle inner hidden dir\n'),
  file('space name.txt', 'needle with space\n'),
  file('ünï.txt', 'needle ünï ö\n'),
  file('[x].txt', 'needle bracket\n'),
  file('-dash.txt', '-foo needle\n'),
  file('.git/HEAD', 'ref: refs/heads/main needle\n'),
  file('.git/info/exclude', 'excluded.txt\n'),
  file('.gitignore', 'ignored.txt\nbuild/\n'),
  file('ignored.txt', 'needle ignored\n'),
  file('build/out.txt', 'needle build\n'),
  file('.ignore', 'dotignored.txt\nreinc.txt\n'),
  file('dotignored.txt', 'needle dotignored\n'),
  file('.rgignore', 'rgignored.txt\n!reinc.txt\n'),
  file('rgignored.txt', 'needle rgignored\n'),
  file('reinc.txt', 'needle re-included by .rgignore\n'),
  file('excluded.txt', 'needle excluded\n'),
  file('x.globalignored', 'needle global\n'),
  file('global-dir/g.txt', 'needle global dir\n'),
  dir('emptydir'),
  mtime('top.txt', 100),
  mtime('alpha.txt', 100),
  mtime('src/a.rs', 100),
  mtime('src/deep/c.rs', 100),
  mtime('bravo.rs', 50),
]

const PATHS = [undefined, '.', './', 'src', 'src/', '{root}', '{root}/src', 'src/a.rs', 'missing', 'src/a.rs/', '.git', 'ignored.txt', 'emptydir']

test('basic glob: patterns (G1–G9, glob errors) × path forms (P1/P2)', async () => {
  const cases = []
  for (const p of ['*', '**', '*.rs', '**/*.rs', 'src/*.rs', '/src/*.rs', 'src/**', '*.{rs,{md,txt}}', '[!a]*', '#*.md', '', '!*.txt', 'src', '.*', '[abc', 'a{b']) {
    for (const path of PATHS) cases.push(glob(p, path))
  }
  for (const p of ['*', 'src/*.rs']) {
    cases.push(glob(p, '..', 'src'), glob(p, undefined, 'src'))
  }
  await check(basicTree(), cases)
})

test('basic grep: regex semantics and errors, includes, path forms', async () => {
  const cases = []
  for (const p of ['needle', '', '$', '^', '(', 'a\nb', '\\x00', '[', '(?i)NEEDLE', 'ö', 'needle|alpha', '-foo', 'x{99999999}', '(a)\\1']) {
    cases.push(grep(p), grep(p, '.'))
  }
  for (const inc of ['*.txt', '*', '!*.txt', '.*', 'src/**', 'ignored.txt', 'build/**', '*.globalignored', '', '*.none', '[abc']) {
    for (const path of [undefined, '.', 'src']) cases.push(grep('needle', path, inc))
  }
  cases.push(grep('(', undefined, '[abc'))
  for (const path of PATHS.filter((p) => p !== undefined)) {
    cases.push(grep('needle', path), grep('needle', path, '*.md'))
  }
  for (const path of ['..', '../src']) cases.push(grep('needle', path, undefined, 'src'))
  cases.push(grep('needle', undefined, 'src/*.rs', 'src'))
  await check(basicTree(), cases)
})

test('ignore files outside a repository (W3)', async () => {
  const specs = [
    file('.gitignore', 'gi.txt\n'),
    file('.ignore', 'ig.txt\n'),
    file('gi.txt', 'needle gi\n'),
    file('ig.txt', 'needle ig\n'),
    file('x.globalignored', 'needle global outside repo\n'),
    file('sub/gi.txt', 'needle sub gi\n'),
    file('sub/keep.txt', 'needle keep\n'),
    file('sub/.rgignore', 'keep.txt\n'),
    file('sub/deeper/ig.txt', 'needle deeper\n'),
  ]
  const cases = []
  for (const cwd of ['', 'sub', 'sub/deeper']) {
    for (const path of [undefined, '.', 'ig.txt']) cases.push(grep('needle', path, undefined, cwd))
    if (cwd) cases.push(grep('needle', '..', undefined, cwd))
    cases.push(grep('needle', undefined, '*.txt', cwd), glob('*', undefined, cwd))
  }
  await check(specs, cases)
})

test('repositories: nested repos, info/exclude, global excludes, .jj, .git files (W3)', async () => {
  const specs = [
    file('repo/.git/HEAD', 'ref: x\n'),
    file('repo/.git/info/exclude', 'excluded.txt\n'),
    file('repo/.gitignore', '*.log\n/build/\n!keep.log\n'),
    file('repo/a.log', 'needle log\n'),
    file('repo/keep.log', 'needle keep log\n'),
    file('repo/excluded.txt', 'needle excluded\n'),
    file('repo/x.globalignored', 'needle global\n'),
    file('repo/global-dir/f.txt', 'needle global dir\n'),
    file('repo/build/out.txt', 'needle build\n'),
    file('repo/sub/build/kept.txt', 'needle sub build (anchored rule)\n'),
    file('repo/nested/.git/HEAD', 'ref: y\n'),
    file('repo/nested/b.log', 'needle nested log\n'),
    file('jj/.jj/repo', 'x\n'),
    file('jj/.gitignore', '*.tmp\n'),
    file('jj/a.tmp', 'needle jj tmp\n'),
    file('wt/.git', 'gitdir: /nonexistent/worktree\n'),
    file('wt/.gitignore', '*.log\n'),
    file('wt/w.log', 'needle worktree log\n'),
    file('outside/.gitignore', '*.log\n'),
    file('outside/o.log', 'needle outside log\n'),
  ]
  const cases = []
  for (const cwd of ['', 'repo', 'repo/sub', 'repo/build', 'repo/nested', 'jj', 'wt', 'outside']) {
    cases.push(grep('needle', undefined, undefined, cwd), grep('needle', '.', undefined, cwd))
    if (cwd) cases.push(grep('needle', '..', undefined, cwd))
    cases.push(glob('*', undefined, cwd))
  }
  for (const p of ['repo', 'repo/build', 'repo/a.log', '{root}/repo', 'wt/w.log']) cases.push(grep('needle', p))
  await check(specs, cases)
})

test('VCS directories for glob and grep (W12–W14, G12)', async () => {
  const specs = [
    file('.git/HEAD', 'needle head\n'),
    file('.git/objects/ab/cdef', 'needle object\n'),
    file('.svn/entries', 'needle svn\n'),
    file('.jj/repo', 'needle jj\n'),
    file('.sl/y', 'needle sl\n'),
    file('sub/.git', 'gitdir: ../.git\n'),
    file('sub/file.txt', 'needle sub\n'),
    file('sub/.gitx', 'needle not vcs\n'),
    file('a.txt', 'needle a\n'),
    file('w/in.txt', 'needle w\n'),
    file('w.git/out.txt', 'needle w.git\n'),
  ]
  const cases = []
  for (const p of ['*', '**/*', '.git/**', '.*']) {
    for (const path of [undefined, '.', 'objects']) cases.push(glob(p, path, '.git'))
    for (const path of [undefined, '{root}/w.git', '../w.git']) cases.push(glob(p, path, 'w'))
    for (const path of [undefined, '.git', './.git', '{root}/.git', 'sub', 'sub/.git', '.svn']) cases.push(glob(p, path))
  }
  for (const inc of [undefined, '*', '.*', 'HEAD']) {
    for (const path of [undefined, '.', '.git', 'sub']) cases.push(grep('needle', path, inc))
  }
  await check(specs, cases)
})

function nulLate() {
  // B1: more than 64 KiB of text before the NUL.
  const parts = []
  let len = 0
  for (let i = 0; len < 100 * 1024; i++) {
    const l = `line ${i} needle\n`
    parts.push(l)
    len += l.length
  }
  parts.push('\0 needle after nul\n', 'needle tail\n')
  return parts.join('')
}

test('encodings and binaries (B1/B2/C1/C2/J5–J7)', async () => {
  const names = ['utf16le_bom.txt', 'utf16be_bom.txt', 'utf16le_nobom.txt', 'utf8_bom.txt', 'latin1.txt', 'crlf.txt', 'no_final_newline.txt', 'nul_early.bin', 'controls.txt']
  const specs = [...names.map((n) => fixture(n, n)), file('nul_late.bin', nulLate()), file('empty.txt', ''), file('only_nul.bin', '\0\0'), file('abc.txt', 'abc')]
  const all = [...names, 'nul_late.bin', 'empty.txt', 'only_nul.bin', 'abc.txt']
  const cases = []
  for (const p of ['needle', '$', '', 'ü', '(?-u:\\xff)', '\\r', '\\x01']) {
    cases.push(grep(p))
    for (const n of all) cases.push(grep(p, n))
  }
  cases.push(glob('*'))
  await check(specs, cases)
})

test('haystack edges around the 64 KiB buffer', async () => {
  const over = `${'x'.repeat(99)}\n`.repeat(700) + 'foo at 80k\nfoo\n'
  const exact = 'y'.repeat(65_536 - 11) + '\nfoo bar\n'
  const specs = [
    file('lines.txt', 'bar\nfoo one\nbaz\nfoo two\nfoo'),
    file('first.txt', 'foo first\nbar\n'),
    file('over64k.txt', over),
    file('exact64k.txt', exact),
    file('bom8.txt', '\ufefffoo bom\n'),
    file('nul.txt', 'foo\n\0\nfoo\n'),
    file('d/nested.txt', 'zzz\nfoo nested\n'),
  ]
  const cases = []
  for (const p of ['foo', '\\Afoo', '(?-m)^foo', 'foo\\z', 'bar\\z', '\\z', 'foo$', 'x*']) {
    cases.push(grep(p), grep(p, 'd'), grep(p, undefined, '*.txt'))
  }
  await check(specs, cases)
})

test('odd names: non-UTF-8, newlines, quotes, controls (P3/J5)', { skip: h.UNIX_ONLY.names }, async () => {
  const specs = [
    file(Buffer.from('bad\xffname.txt', 'latin1'), 'needle nonutf8 name\n'),
    file('nl\nname.txt', 'needle newline name\n'),
    file('q"uote.txt', 'needle quote name\n'),
    file('back\\slash.txt', 'needle backslash name\n'),
    file('ctl\x01name.txt', 'needle control name\n'),
    file('sp ace/ünï cödé.txt', 'needle unicode dir\n'),
    file(Buffer.from('dir\xfe/inner.txt', 'latin1'), 'needle in non-utf8 dir\n'),
    file('lat.txt', Buffer.from('needle \xe9t\xe9\n', 'latin1')),
    file('mixed.txt', Buffer.from('needle ok\n\xff needle bad\n', 'latin1')),
  ]
  const cases = []
  for (const p of ['*', '*name*', '**/inner.txt']) cases.push(glob(p), glob(p, '.'))
  for (const p of ['needle', '(?-u:\\xff)', 'é']) cases.push(grep(p), grep(p, '.'))
  await check(specs, cases)
})

test('symlinks, loops, broken links, missing paths (W4–W7)', async () => {
  const specs = [
    file('real/f.txt', 'needle real\n'),
    file('file.txt', 'needle file\n'),
    symlink('linkdir', 'real'),
    symlink('linkfile', 'file.txt'),
    symlink('broken', 'nowhere'),
    symlink('loop1', 'loop2'),
    symlink('loop2', 'loop1'),
    symlink('real/up', '..'),
  ]
  const cases = []
  for (const p of [undefined, '.', 'linkdir', 'linkdir/', 'linkfile', 'broken', 'loop1', 'missing', 'file.txt/', 'real/up', '{root}/linkdir']) {
    cases.push(glob('*', p), grep('needle', p))
  }
  await check(specs, cases)
})

test('mtime order and its ties (S2/S3)', async () => {
  const specs = []
  for (let d = 0; d < 8; d++) {
    for (let f = 0; f < 6; f++) {
      const p = `d${d}/f${f}.txt`
      specs.push(file(p, `needle ${d} ${f}\n`), mtime(p, (d * 7 + f * 3) % 4))
    }
    specs.push(file(`top${d}.txt`, 'top\n'), mtime(`top${d}.txt`, d % 3))
  }
  const cases = []
  for (const p of [undefined, '.', '{root}', 'd3']) cases.push(glob('*', p), glob('**/f1.txt', p))
  await check(specs, cases)
})

test('nothing searched: "No files were searched" vs exit 1 (X2)', async () => {
  const cases = [
    grep('needle'),
    grep('needle', '.'),
    grep('needle', undefined, '*.none'),
    grep('needle', undefined, '*'),
    glob('*'),
    glob('*', '.'),
    glob('*.none'),
    grep('needle', 'a.txt'),
  ]
  await check([file('.ignore', '*\n'), file('a.txt', 'needle\n'), file('d/b.txt', 'needle\n')], cases)
  await check([], cases.slice(0, 7))
})

test('ignore file errors and ./ path forms', async () => {
  const specs = [
    file('.git/HEAD', 'x\n'),
    file('.git/info/exclude', 'a{b\nexc.txt\n'),
    file('.gitignore', 'a{b\nok1.txt\na\\\n'),
    file('.ignore', Buffer.from('lat\xe9.txt\nok2.txt\n', 'latin1')),
    file('.rgignore', 'x{\n'),
    file('sub/.gitignore', '{z\nok3.txt\n/ig.txt\n'),
    file('sub/ok3.txt', 'needle\n'),
    file('sub/ig.txt', 'needle\n'),
    file('ok1.txt', 'needle\n'),
    file('ok2.txt', 'needle\n'),
    file('exc.txt', 'needle\n'),
    file('sub/deeper/.ignore', Buffer.from('\xef\xbb\xbfok4.txt\r\n\\\r\n', 'latin1')),
    file('sub/deeper/ok4.txt', 'needle\n'),
  ]
  const cases = []
  for (const p of [undefined, '.', 'sub', 'sub/deeper', './.', '././sub', '././/sub']) {
    cases.push(grep('needle', p), grep('needle', p, '*.txt'))
  }
  cases.push(grep('needle', undefined, undefined, 'sub'), grep('needle', '..', '*.txt', 'sub/deeper'))
  await check(specs, cases)
})
