/**
 * One stage of a built-in promotion (compile, targeted tests, startup smoke) run in a worktree: {@link runStage}. Each
 * of the stage's commands is one {@link runContainedProcess} tree (the sandbox's one containment mechanism), in order,
 * until one does not pass. Plain TypeScript: the promotion activities adapt it to Temporal (heartbeats, cancellation).
 */
import { mkdtemp } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { StageCommandReport, StageReport, StageStatus } from '../contract/promotion-runs';
import type { NetworkPolicy } from '../contract/network-policy';
import type { PlannedStage, StageCommand } from '../git/verify-plan';
import { runContainedProcess, type CapturedOutput, type ContainedProcessResult } from './contained-process';
import { parseLocations } from './stage-locations';
import { sandboxTempRoot } from './paths';
import { removeRunDir } from './remove-run-dir';
import { runDirPrefix } from './run-dirs';

/** What every stage command gets when its plan rule sets no limit of its own. */
export interface StageDefaults {
  /** Wall clock of one command (a rule's `timeoutMs` replaces it). */
  timeoutMs: number;
  /** Memory of one command's whole process tree (a rule's `memoryMb` replaces it). */
  memoryMb: number;
  /** stdout + stderr bytes of one command. */
  outputBytes: number;
}

export interface RunStageOptions {
  /** The worktree's root: every command runs there. */
  worktree: string;
  defaults: StageDefaults;
  /** Added to the commands' environment (and replacing what runStage sets, PATH included). */
  env?: Record<string, string>;
  /** Called about every second while a command runs. */
  onHeartbeat?: () => void;
  /** Aborting kills the running command's tree; the stage ends as `error` (cancelled) and runs nothing more. */
  signal?: AbortSignal;
  /** Where the stage's private directories (HOME, each command's TMPDIR) are made (default: the sandbox's). */
  tmpDir?: string;
  /** What its commands may reach over the network (default: public destinations only). */
  network?: NetworkPolicy;
}

/** How much of each stream's end the report keeps (the primitive keeps 64 KiB of each; locations are parsed from it). */
const STAGE_TAIL_BYTES = 8 * 1024;
const MiB = 1024 * 1024;
const BASE_PATH = '/usr/local/bin:/usr/bin:/bin';

/**
 * Runs the stage's commands in order in the worktree, each bounded (wall clock, memory of its whole tree, output) and
 * contained (no shell, an explicit environment, the whole tree dead when it ends), and stops at the first that does
 * not pass. Fails closed: only a command that exited with code 0 passes; a timeout is `timeout`; a non-zero exit, a
 * signal, the memory or the output limit is `fail` with a `reason` naming it; a cancellation, a command that could not
 * be started or an outcome runStage does not know is `error`. A stage without commands is `skipped`.
 *
 * The environment of each command is exactly: PATH (the directory of the node running Forge first, then
 * /usr/local/bin:/usr/bin:/bin), HOME (a private directory of the stage, removed afterwards), CI=true, NODE_ENV=test,
 * TMPDIR (a private directory of the command), then `env`.
 *
 * `command`, `exitCode`, the tails and `locations` are those of the last command run (the one that decided); `exitCode`
 * is null when the command did not end by itself (Forge killed its tree, or it died of a signal); `commands` has every
 * command run; `resource` is the most memory any command's tree held and the CPU time of them all. Never
 * rejects: a failure of the machinery is an `error` report.
 */
export async function runStage(stage: PlannedStage, options: RunStageOptions): Promise<StageReport> {
  const started = performance.now();
  const { worktree } = options;
  if (stage.commands.length === 0) {
    return {
      name: stage.name,
      status: 'skipped',
      command: [],
      cwd: worktree,
      exitCode: null,
      durationMs: 0,
      stdoutTail: '',
      stderrTail: '',
      resource: { maxRssBytes: 0, cpuUserMicros: 0 },
      commands: [],
      reason: 'no changed path is mapped to this stage',
    };
  }
  let home: string | undefined;
  const ran: { command: StageCommand; result: ContainedProcessResult; verdict: CommandVerdict }[] = [];
  try {
    // Named like the primitive's run directories, so a worker killed meanwhile has it swept by the next one.
    home = await mkdtemp(join(sandboxTempRoot(options.tmpDir), runDirPrefix()));
    const env: Record<string, string> = {
      PATH: `${dirname(process.execPath)}:${BASE_PATH}`,
      HOME: home,
      CI: 'true',
      NODE_ENV: 'test',
      ...options.env,
    };
    for (const command of stage.commands) {
      if (options.signal?.aborted) break;
      const limits = limitsOf(command, options.defaults);
      const result = await runContainedProcess({
        argv: command.argv,
        cwd: worktree,
        env,
        limits: { wallClockMs: limits.timeoutMs, memoryBytes: limits.memoryMb * MiB, outputBytes: limits.outputBytes },
        onHeartbeat: options.onHeartbeat,
        signal: options.signal,
        tmpDir: options.tmpDir,
        network: options.network,
        // The worktree and the stage's HOME are all it writes; it reads the packages the worktree links to, and the
        // Node that runs Forge (first on its PATH).
        writable: [worktree, home],
        readable: [join(worktree, 'node_modules'), dirname(process.execPath)],
      });
      const verdict = verdictOf(result, command.argv, limits);
      ran.push({ command, result, verdict });
      if (verdict.status !== 'pass') break;
    }
  } catch (err) {
    // runContainedProcess never rejects: only the stage's own directory can fail here (ENOSPC, EACCES).
    return errorReport(stage, worktree, started, `the stage could not be prepared: ${(err as Error).message}`);
  } finally {
    if (home) await removeRunDir(home);
  }
  const last = ran.at(-1);
  if (!last) return errorReport(stage, worktree, started, 'cancelled before its first command started');
  const stdout = textOf(last.result.stdout);
  const stderr = textOf(last.result.stderr);
  const status = last.verdict.status;
  const report: StageReport = {
    name: stage.name,
    status,
    command: last.command.argv,
    cwd: worktree,
    exitCode: exitCodeOf(last.result),
    durationMs: Math.round(performance.now() - started),
    stdoutTail: tailOf(stdout, last.result.stdout),
    stderrTail: tailOf(stderr, last.result.stderr),
    resource: {
      maxRssBytes: Math.max(0, ...ran.map((r) => r.result.resource.maxRssBytes ?? 0)),
      cpuUserMicros: ran.reduce((sum, r) => sum + (r.result.resource.cpuUserMicros ?? 0), 0),
    },
    commands: ran.map(({ command, result, verdict }): StageCommandReport => {
      const summary: StageCommandReport = {
        argv: command.argv,
        status: verdict.status,
        exitCode: exitCodeOf(result),
        signal: result.outcome === 'exited' ? result.signal : null,
        durationMs: result.durationMs,
      };
      if (verdict.reason) summary.reason = verdict.reason;
      return summary;
    }),
  };
  if (status !== 'pass') {
    const locations = parseLocations(`${stdout}\n${stderr}`, worktree);
    if (locations.length > 0) report.locations = locations;
    if (last.verdict.reason) report.reason = last.verdict.reason;
  }
  return report;
}

/** The command's own exit code: none when Forge ended its tree (timeout, memory, output, cancellation). */
function exitCodeOf(result: ContainedProcessResult): number | null {
  return result.outcome === 'exited' ? result.exitCode : null;
}

interface CommandLimits {
  timeoutMs: number;
  memoryMb: number;
  outputBytes: number;
}

function limitsOf(command: StageCommand, defaults: StageDefaults): CommandLimits {
  return {
    timeoutMs: command.timeoutMs ?? defaults.timeoutMs,
    memoryMb: command.memoryMb ?? defaults.memoryMb,
    outputBytes: defaults.outputBytes,
  };
}

interface CommandVerdict {
  status: Exclude<StageStatus, 'skipped'>;
  reason?: string;
}

/** The one place a contained outcome becomes a stage status. Only an exit with code 0 passes. */
export function verdictOf(
  result: Pick<ContainedProcessResult, 'outcome' | 'exitCode' | 'signal' | 'error'>,
  argv: string[],
  limits: CommandLimits,
): CommandVerdict {
  const cmd = `\`${argv.join(' ')}\``;
  const why = result.error ? `: ${result.error}` : '';
  switch (result.outcome) {
    case 'exited':
      if (result.exitCode === 0) return { status: 'pass' };
      if (result.exitCode !== null) return { status: 'fail', reason: `${cmd} exited with code ${result.exitCode}` };
      if (result.signal !== null) return { status: 'fail', reason: `${cmd} was killed by ${result.signal} (a crash or a signal from its own tree)` };
      return { status: 'error', reason: `${cmd} ended with neither an exit code nor a signal; an unknown outcome never passes` };
    case 'timeout':
      return { status: 'timeout', reason: `${cmd} was still running at its time limit of ${limits.timeoutMs} ms (timeoutMs); its process tree was killed` };
    case 'oom':
      return { status: 'fail', reason: `${cmd} passed its memory limit of ${limits.memoryMb} MiB (memoryMb) for its whole process tree; the tree was killed` };
    case 'output-limit':
      return {
        status: 'fail',
        reason: `${cmd} wrote more than its output limit of ${limits.outputBytes} bytes (stdout and stderr together); its process tree was killed`,
      };
    case 'killed':
      return { status: 'error', reason: `${cmd} was stopped because the stage was cancelled${why}` };
    case 'spawn-error':
      return { status: 'error', reason: `${cmd} could not be started${why}` };
    default:
      return { status: 'error', reason: `${cmd} ended in an outcome the stage runner does not know (${String(result.outcome)}); it never passes` };
  }
}

/** What the parent kept of a stream as one text; a line marks where bytes were dropped. */
function textOf(out: CapturedOutput): string {
  if (!out.truncated) return out.head + out.tail;
  const dropped = out.totalBytes - Buffer.byteLength(out.head) - Buffer.byteLength(out.tail);
  return `${out.head}\n[... ${dropped} bytes not kept ...]\n${out.tail}`;
}

/** The last {@link STAGE_TAIL_BYTES} of a stream (by characters: near enough, and never splits one). */
function tailOf(text: string, out: CapturedOutput): string {
  if (text.length <= STAGE_TAIL_BYTES) return text;
  return `[... ${out.totalBytes} bytes in all; the last of them follow ...]\n${text.slice(-STAGE_TAIL_BYTES)}`;
}

function errorReport(stage: PlannedStage, worktree: string, started: number, reason: string): StageReport {
  return {
    name: stage.name,
    status: 'error',
    command: stage.commands[0]?.argv ?? [],
    cwd: worktree,
    exitCode: null,
    durationMs: Math.round(performance.now() - started),
    stdoutTail: '',
    stderrTail: '',
    resource: { maxRssBytes: 0, cpuUserMicros: 0 },
    commands: [],
    reason,
  };
}
