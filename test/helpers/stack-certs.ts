import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** docker/temporal-certs.sh: the compose stack's CA and certificates. */
export const STACK_CERTS_SCRIPT = path.resolve(__dirname, '../../docker/temporal-certs.sh');

/** The directories the script fills, one per party (the CA's own, the server's, and one per client). */
export const STACK_CERT_PARTIES = ['ca', 'temporal', 'forge', 'ui', 'operator'] as const;

/** Runs the script as the compose service does (`sh temporal-certs.sh DIR`), with this machine's openssl; its output. */
export async function runStackCertsScript(dir: string, env: NodeJS.ProcessEnv = {}): Promise<string> {
  const { stdout } = await run('sh', [STACK_CERTS_SCRIPT, dir], { env: { PATH: process.env.PATH, ...env } });
  return stdout;
}

/** Runs the script into a fresh `certs` directory under the system's temp dir (the caller removes its parent). */
export async function issueStackCerts(env: NodeJS.ProcessEnv = {}): Promise<{ dir: string; output: string }> {
  const dir = path.join(mkdtempSync(path.join(tmpdir(), 'forge-stack-certs-')), 'certs');
  return { dir, output: await runStackCertsScript(dir, env) };
}

/** `openssl verify` of `cert` against `caFile` for a purpose (`sslserver`, `sslclient`) and, optionally, a host name. */
export async function opensslVerify(
  caFile: string,
  cert: string,
  purpose: 'sslserver' | 'sslclient',
  hostname?: string,
): Promise<{ ok: boolean; output: string }> {
  const args = ['verify', '-CAfile', caFile, '-purpose', purpose, ...(hostname ? ['-verify_hostname', hostname] : []), cert];
  try {
    const { stdout, stderr } = await run('openssl', args);
    return { ok: true, output: stdout + stderr };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    return { ok: false, output: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}
