import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');

/**
 * Starts the real `forge worker` (dist/, built by `npm test` before jest) in a process group of its own, with `env`,
 * and resolves once it says its workers are running.
 */
export function startForgeWorker(env: NodeJS.ProcessEnv): Promise<ChildProcess> {
  const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'forge.js'), 'worker'], { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`worker did not start:\n${output}`)), 60_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Forge workers are running')) {
        clearTimeout(timer);
        resolve(child);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`worker exited (${code}) before it was ready:\n${output}`)));
  });
}

/** SIGKILLs the worker's whole process group, as a crash or an OOM killer would, and resolves once it exited. */
export function killWorkerHard(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    process.kill(-child.pid!, 'SIGKILL');
  });
}

/** Resolves with the signal (or exit code) once the worker process has ended, however it ended. */
export function workerExit(child: ChildProcess): Promise<NodeJS.Signals | number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.signalCode ?? child.exitCode);
  return new Promise((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code)));
}

/** Stops the worker as an operator's Ctrl-C would (SIGTERM: running tasks finish, the database closes). */
export async function stopWorker(child: ChildProcess): Promise<void> {
  const ended = workerExit(child);
  if (child.exitCode === null && child.signalCode === null) process.kill(child.pid!, 'SIGTERM');
  const timer = setTimeout(() => void killWorkerHard(child), 30_000);
  await ended;
  clearTimeout(timer);
}
