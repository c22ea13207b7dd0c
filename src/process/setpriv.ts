import { spawnSync } from 'node:child_process';

let works: boolean | undefined;

/** Whether util-linux `setpriv --pdeathsig KILL` works here (probed once per process). */
function setprivWorks(): boolean {
  works ??= spawnSync('setpriv', ['--pdeathsig', 'KILL', '--', 'true'], { stdio: 'ignore', timeout: 5_000 }).status === 0;
  return works;
}

/**
 * `command args`, started through `setpriv --pdeathsig KILL` where that works: setpriv execs the command in place with
 * SIGKILL as its parent-death signal, so a parent killed with SIGKILL leaves nothing of it behind. The signal comes
 * when the thread that spawned it exits: spawn from the main thread. `TERM` instead, for a child that must save its state
 * on the way out (the durable dev chain) and does promptly on SIGTERM.
 */
export function withParentDeathSignal(command: string, args: readonly string[], signal: 'KILL' | 'TERM' = 'KILL'): [string, string[]] {
  return setprivWorks() ? ['setpriv', ['--pdeathsig', signal, '--', command, ...args]] : [command, [...args]];
}
