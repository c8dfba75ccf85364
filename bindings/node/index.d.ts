/// <reference types="node" />
// Types of the npm package dsh-search (contract.md §12, "Node").

/** What the rg binary printed and exited with. */
export interface RgOutput {
  /** rg's stdout bytes. */
  stdout: Buffer
  /** rg's stderr bytes, each line with its `\n`. */
  stderr: Buffer
  /** rg's exit code: 0 (found), 1 (nothing found), 2 (an error). */
  exitCode: number
}

export interface RgOptions {
  /** The directory rg runs in (relative: against `process.cwd()`); must exist. */
  cwd: string
  /** Aborting rejects the call with an `AbortError` and stops the search. */
  signal?: AbortSignal
}

/**
 * rg's answer to `argv` (its arguments without the program name), computed
 * in-process, byte for byte as rg 15.2.0 prints it. `argv` must be one of
 * the two invocations:
 *
 * - glob: `--no-config --files --glob=<pattern> --sort=modified --no-ignore --hidden`,
 *   the twelve `--glob=!**\/<vcs>` and `--glob=!**\/<vcs>/**` excludes, `[-- <path>]`;
 * - grep: `--no-config --json --regexp=<pattern> [--glob=<include>] [-- <path>]`.
 *
 * Any other argv, a missing or non-directory `cwd`, or a NUL byte rejects
 * with an error that says what was expected.
 */
export function rg(argv: readonly string[], options: RgOptions): Promise<RgOutput>

/** The configuration keys of `docs/contract.md` §3 and §6 (e.g. `globMaxResults`). */
export type Config = Record<string, unknown>

export interface ToolsOptions {
  /** The tools' and the guard's configuration keys. */
  config?: Config
  /** The search backend: the in-process engine (default) or a real `rg` on the PATH or `DSH_SEARCH_RG`. */
  backend?: 'native' | 'rg'
  /**
   * The workspace's filesystem: the local disk (default); `mem` / `mem:ROOT`,
   * a copy in memory of ROOT (default: `root`) at the same path; or
   * `sftp://[USER@]HOST[:PORT]`, a host over SSH (login default: `$USER`),
   * whose calls' `cwd` are absolute directories on that host, checked there.
   */
  fs?: 'local' | 'mem' | `mem:${string}` | `sftp://${string}`
  /** An overlay directory: write and edit change only it; every tool sees the merged view. Not with `sftp://`. */
  overlay?: string
  /**
   * The directory `mem` loads, the overlay covers and the index mirrors
   * (default: `process.cwd()`). With `sftp://`, only with `index`: the
   * remote directory the index mirrors (an absolute path on the host).
   */
  root?: string
  /**
   * Keep a live index of `root` (docs/index.md): glob from a mirror of the
   * tree, grep opening only the files that can match, every result the
   * scan's byte for byte. Built in the background (the scan answers until
   * it is ready). Kept current by a watcher on the local disk (inotify on
   * Linux; elsewhere, and past the watch limit or on a network filesystem,
   * the mirror is validated at each call: see `indexWatch`), by the tree's
   * own journal in memory, by both layers through an overlay, and over
   * `sftp://` by listing the tree again before each call. Not with the rg
   * backend (default: off).
   */
  index?: boolean
  /**
   * With `index`: how it learns of changes. `'os'`: the system's watcher
   * where there is one, else the mirror validated at each call; `'none'`:
   * validated at each call (the tree's metadata walked in parallel, only
   * the changed files read again). Anything else is refused (default: the
   * configuration's `indexWatch`, else `'os'`).
   */
  indexWatch?: 'os' | 'none'
  /** With `sftp://`: the private key to log in with (default: the SSH agent at `SSH_AUTH_SOCK`). */
  identity?: string
  /**
   * With `sftp://`: the known-hosts file the host key must be in (default:
   * `~/.ssh/known_hosts`); an unknown or changed key is refused.
   */
  knownHosts?: string
}

export interface CallOptions {
  /**
   * The session's working directory: the base of relative paths; must exist
   * (with `sftp://`: an absolute directory on the remote host; a failed
   * login or host-key check rejects the call).
   */
  cwd: string
  /** The session id: owner of read observations, guard counters and spills. */
  session?: string
  /** Aborting ends the call with the tool's aborted error. */
  signal?: AbortSignal
}

/** The `--format json` object of a tool call. */
export interface ToolResult {
  /** What the model reads. */
  content: string
  isError: boolean
  /** The error, when the call failed; `info` for the harness's coded errors. */
  error?: { message: string; info?: { name: string; code: string } }
  value?: unknown
  meta?: unknown
}

/** A tool definition, as `dsh-search definitions` prints it. */
export interface ToolDefinition {
  name: string
  description: string
  /** The input schema (a JSON Schema object). */
  parameters: Record<string, unknown>
  /** The tool timeout the definition declares (glob and grep). */
  timeoutMs?: number
  /** The system-prompt section. */
  prompt: { [key: string]: unknown }
}

/** The model-facing tools glob, grep, read, write and edit over one workspace. */
export class Tools {
  constructor(options?: ToolsOptions)
  definitions(): ToolDefinition[]
  call(name: string, args: Record<string, unknown>, options: CallOptions): Promise<ToolResult>
}

/** What a collected stream's reader returns. */
export interface ReadResult {
  /** The bytes from the offset on (or from the oldest one kept), as lossy UTF-8. */
  text: string
  /** The byte offset after everything the stream produced. */
  nextOffset: number
  /** Whether bytes at or after the offset were dropped (the stream kept its last `maxBytes`). */
  lossy: boolean
  spillPath?: string
}

export interface CollectedReader {
  readFrom(offset: number): ReadResult
}

export interface Exit {
  exitCode: number | null
  signal: string | null
}

/** A spawned process as the subprocess seam hands it out. */
export interface SubprocessHandle {
  /** The process id; `undefined` for a spawn answered in-process (no process is started). */
  pid: number | undefined
  /** The child's stdin, with `stdin: 'pipe'` only. */
  stdin?: import('node:stream').Writable
  /** The child's stdout, with `stdout: 'pipe'` only. */
  stdout?: import('node:stream').Readable
  /** The child's stderr, with `stderr: 'pipe'` only. */
  stderr?: import('node:stream').Readable
  /** A reader per collected stream. */
  collected: { stdout?: CollectedReader; stderr?: CollectedReader }
  done: Promise<Exit>
  terminate(): Promise<void> | void
  /** True once the process has exited; false when `signal` aborts first. */
  waitForExit(signal?: AbortSignal): Promise<boolean>
}

/**
 * A collected stream: its last `maxBytes` bytes are kept in memory;
 * `spill` asks for a file holding the whole stream.
 */
export interface SubprocessCollect {
  maxBytes: number
  spill?: { maxBytes: number }
}

/** stdin: `/dev/null`, a pipe the caller writes, or data written then closed. */
export type SubprocessStdinMode = 'ignore' | 'pipe' | { readonly data: string }

/** stdout or stderr: a pipe the caller reads, the parent's own, or collected. */
export type SubprocessOutputMode = 'pipe' | 'inherit' | SubprocessCollect

/** Each stream's disposition, all explicit. */
export interface SubprocessStdio {
  stdin: SubprocessStdinMode
  stdout: SubprocessOutputMode
  stderr: SubprocessOutputMode
}

/**
 * The seam's spawn spec (the search tools spawn rg with
 * `stdio: {stdin: 'ignore', stdout: {maxBytes}, stderr: {maxBytes}}`).
 */
export interface SpawnSpec {
  /** The program first, then its arguments. */
  argv: readonly string[]
  /** The directory the process runs in. */
  cwd: string
  stdio: SubprocessStdio
  /** SIGTERM to SIGKILL, after a stop. */
  graceMs: number
  /** Aborting stops the process (a search answered in-process: at once). */
  signal?: AbortSignal
  /** Entries merged over the seam's environment (not read by the in-process answer). */
  env?: Record<string, string | undefined>
}

export interface SubprocessService<H = SubprocessHandle> {
  spawn(spec: SpawnSpec): H
}

/**
 * The same service, except that a spawn of rg with one of the two
 * invocations (recognized by the argv's shape, never by the program's path),
 * stdin ignored and both streams collected without a spill file, is
 * answered in-process on a handle of the seam's shape.
 */
export function wrapSubprocess<S extends SubprocessService<any>>(service: S): S
