import { connect as tcpConnect } from 'node:net';
import type { ForgeClient } from '../client';
import { PlatformUnreachableError } from '../contract/errors';
import { clientModule, temporalConnectionModule } from './deferred';

/**
 * How long a command waits for a run's result before it checks that a Forge worker polls, and gives up (exit 3) when
 * none does: a run that answers sooner costs no check at all.
 */
const NO_WORKER_CHECK_AFTER_MS = 2_500;

/** The help of `--wait`, the flag of every command that waits on a run a worker must take. */
export const WAIT_HELP = 'when no Forge worker polls, wait for one however long it takes (default: say so within a few seconds, exit 3)';

/**
 * Connects the SDK for one CLI command and closes it afterwards, whatever happens. Unless `wait`, a run that no
 * worker takes ends the command with a NoWorkerError within a few seconds, instead of a silent wait.
 */
export async function withForgeClient<T>(fn: (client: ForgeClient) => Promise<T>, options: { wait?: boolean } = {}): Promise<T> {
  // Loaded here, not at the top: the SDK and gRPC are ~0.4 s of start-up that --help, --version, lint-sql and
  // sandbox never need.
  const { ForgeClient } = clientModule();
  await failFastWhenRefused();
  let said = 0;
  const client = await ForgeClient.connect({
    failWithoutWorkerAfterMs: options.wait ? undefined : NO_WORKER_CHECK_AFTER_MS,
    // A run outlives a Temporal restart; the CLI waits through it and says so, at most every 10 s.
    onOutage: ({ address, workflowId, unreachableMs, giveUpAfterMs }) => {
      if (said > 0 && unreachableMs - said < 10_000) return;
      said = Math.max(unreachableMs, 1);
      process.stderr.write(
        `forge: Temporal at ${address} is unreachable (${Math.round(unreachableMs / 1000)} s); still waiting for ` +
          `${workflowId}, which goes on by itself (giving up after ${Math.round(giveUpAfterMs / 1000)} s)\n`,
      );
    },
  });
  try {
    return await fn(client);
  } finally {
    await client.close().catch(() => undefined);
  }
}

/**
 * The gRPC client keeps retrying a refused connection until its 5 s deadline; when the address's port plainly
 * refuses TCP, say so at once (exit 3). Anything else (a slow or remote host, DNS, a proxy) is left to the client.
 */
async function failFastWhenRefused(): Promise<void> {
  // Through a proxy the direct port says nothing about reachability.
  if (['grpc_proxy', 'https_proxy', 'HTTPS_PROXY', 'http_proxy', 'HTTP_PROXY'].some((v) => process.env[v])) return;
  const { resolveTemporalConnection, toPlatformError } = temporalConnectionModule();
  const { address } = resolveTemporalConnection();
  const match = /^\[?([^\]]+?)\]?:(\d+)$/.exec(address);
  if (!match) return;
  const refused = await new Promise<Error | undefined>((resolve) => {
    const socket = tcpConnect({ host: match[1], port: Number(match[2]) });
    const done = (err?: Error) => {
      socket.destroy();
      resolve(err);
    };
    socket.setTimeout(1_000, () => done());
    socket.once('connect', () => done());
    socket.once('error', (err: NodeJS.ErrnoException) => done(err.code === 'ECONNREFUSED' ? err : undefined));
  });
  if (refused) {
    const err = toPlatformError(refused, address);
    if (err instanceof PlatformUnreachableError) throw err;
  }
}
