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
  const h = s.spawn({ argv: ['rg', '--no-config', '--json', '--regexp=x'], cwd: '/w', stdin: 'ignore', stdout: { maxBytes: 100 }, signal })
  const { text, nextOffset, lossy } = h.collected.stdout.readFrom(0)
  void [text.length, nextOffset + 1, lossy === true]
  await h.terminate()
  await h.waitForExit(signal)
  return h.done
}

export { direct, wrapped }
