// Type-checked by test/types.test.js (tsc --strict --noEmit): the
// declarations of index.d.ts describe the package as the harness uses it,
// and refuse what the package rejects.
import { rg, Tools, wrapSubprocess, type RgOutput, type ToolResult, type SubprocessHandle, type SpawnSpec, type Exit } from '..'

async function direct(cwd: string, signal: AbortSignal): Promise<number> {
  const out: RgOutput = await rg(['--no-config', '--json', '--regexp=x'], { cwd, signal })
  const bytes: Buffer = out.stdout
  const tools = new Tools({ config: { globMaxResults: 10 }, backend: 'rg', fs: 'mem:/w', overlay: '/o', root: '/w' })
  const r: ToolResult = await tools.call('grep', { pattern: 'x' }, { cwd, session: 's', signal })
  const code: string | undefined = r.error?.info?.code
  const names: string[] = tools.definitions().map((d) => d.name)
  // @ts-expect-error cwd is required
  await rg(['--no-config'], {})
  // @ts-expect-error argv is an array of strings
  await rg('--json', { cwd })
  // @ts-expect-error only native or rg
  new Tools({ backend: 'grep' })
  new Tools({ fs: 'sftp://me@host:2222', identity: '/k', knownHosts: '/kh' })
  // @ts-expect-error only local, mem, mem:ROOT or sftp://…
  new Tools({ fs: 'ssh://host' })
  // @ts-expect-error knownHosts is a path
  new Tools({ fs: 'sftp://host', knownHosts: true })
  // @ts-expect-error call options need cwd
  await tools.call('grep', {}, { session: 's' })
  return bytes.length + names.length + (code ? 1 : 0) + out.exitCode
}

interface HarnessHandle extends SubprocessHandle {
  extra?: true
}

async function wrapped(service: { spawn(spec: SpawnSpec): HarnessHandle; close(): void }, signal: AbortSignal): Promise<Exit> {
  const s = wrapSubprocess(service)
  s.close()
  // As the search tools spawn rg (seed-reference.md §1.4).
  const h = s.spawn({
    argv: ['rg', '--no-config', '--json', '--regexp=x'],
    cwd: '/w',
    stdio: { stdin: 'ignore', stdout: { maxBytes: 20_000_000 }, stderr: { maxBytes: 65_536 } },
    graceMs: 3000,
    signal,
  })
  const read = h.collected.stdout?.readFrom(0)
  void [read?.text.length, (read?.nextOffset ?? 0) + 1, read?.lossy === true]
  await h.terminate()
  const exited: boolean = await h.waitForExit(signal)
  s.spawn({ argv: ['rg'], cwd: '/w', stdio: { stdin: { data: 'x' }, stdout: 'pipe', stderr: 'inherit' }, graceMs: 1, env: { A: undefined } })
  s.spawn({ argv: ['rg'], cwd: '/w', stdio: { stdin: 'pipe', stdout: { maxBytes: 1, spill: { maxBytes: 2 } }, stderr: { maxBytes: 1 } }, graceMs: 1 })
  // @ts-expect-error the streams are under stdio
  s.spawn({ argv: ['rg'], cwd: '/w', stdin: 'ignore', stdout: { maxBytes: 100 }, graceMs: 1 })
  // @ts-expect-error stdin is never collected
  s.spawn({ argv: ['rg'], cwd: '/w', stdio: { stdin: { maxBytes: 1 }, stdout: 'pipe', stderr: 'pipe' }, graceMs: 1 })
  // @ts-expect-error cwd, stdio and graceMs are required: the seam applies no defaults
  s.spawn({ argv: ['rg'] })
  void exited
  return h.done
}

export { direct, wrapped }
