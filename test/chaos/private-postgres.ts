import { execFile } from 'node:child_process';
import { appendFileSync, chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { findFreePort } from '../../src/process/free-port';

const run = promisify(execFile);

/**
 * The newest Debian PostgreSQL server binaries (/usr/lib/postgresql/<version>/bin), the ones CI installs (.ci/run),
 * or undefined when this machine has none.
 */
export function postgresBinDir(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => /^\d+$/.test(v))
    .sort((a, b) => Number(b) - Number(a));
  for (const version of versions) {
    const bin = path.join(root, version, 'bin');
    if (['initdb', 'pg_ctl', 'postgres'].every((b) => existsSync(path.join(bin, b)))) return bin;
  }
  return undefined;
}

/**
 * A PostgreSQL cluster of this test's own (data directory under /dev/shm, a free port), which the test may really
 * stop and start again: the shared server at DATABASE_URL serves the suites running beside this one, so it must
 * never be the one stopped. Root cannot run the server, so as root the binaries run as the `postgres` OS user.
 *
 * `url` connects as `forge`, an ordinary role that may create databases (as CI's is); `superuserUrl` as `postgres`
 * (trust authentication on 127.0.0.1 only).
 */
export class PrivatePostgres {
  private constructor(
    private readonly bin: string,
    private readonly root: string,
    readonly port: number,
    /** Set in the server's environment (every start): e.g. libfaketime's LD_PRELOAD and FAKETIME for a clock ahead. */
    private readonly serverEnv: Record<string, string> = {},
  ) {}

  private get dataDir(): string {
    return path.join(this.root, 'data');
  }

  get url(): string {
    return `postgres://forge:forge@127.0.0.1:${this.port}/forge`;
  }

  get superuserUrl(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  /** initdb, start, and a `forge` role and database. `serverEnv` goes into the server's environment. */
  static async start(bin = postgresBinDir(), serverEnv: Record<string, string> = {}): Promise<PrivatePostgres> {
    if (!bin) throw new Error('no PostgreSQL server binaries under /usr/lib/postgresql');
    const base = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
    // The root stays this process's, and only `data` and `log` inside it are the server's: the red-team differential
    // test, running beside this one against the shared server, watches what the `postgres` OS user owns in /dev/shm,
    // and a root of the server user's own that appears or vanishes mid-case would read as a file the server wrote.
    const root = mkdtempSync(path.join(base, 'forge-private-pg-'));
    chmodSync(root, 0o755);
    for (const dir of ['data', 'log']) {
      mkdirSync(path.join(root, dir), { mode: 0o700 });
      if (asRoot()) chownSync(path.join(root, dir), ...postgresIds());
    }
    const port = await findFreePort();
    const pg = new PrivatePostgres(bin, root, port, serverEnv);
    try {
      await pg.ctl('initdb', ['-D', pg.dataDir, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--no-sync', '--no-instructions']);
      // TCP on 127.0.0.1 only, no Unix socket (no directory to share with the system cluster), nothing written
      // durably: this cluster lives for one test file.
      appendFileSync(
        path.join(pg.dataDir, 'postgresql.conf'),
        [
          `port = ${port}`,
          "listen_addresses = '127.0.0.1'",
          "unix_socket_directories = ''",
          'fsync = off',
          'synchronous_commit = off',
          'full_page_writes = off',
          'max_connections = 60',
          'shared_buffers = 32MB',
          '',
        ].join('\n'),
      );
      await pg.startServer();
      const admin = new Client({ connectionString: pg.superuserUrl });
      await admin.connect();
      try {
        await admin.query(`CREATE ROLE forge LOGIN CREATEDB PASSWORD 'forge'`);
        await admin.query('CREATE DATABASE forge OWNER forge');
      } finally {
        await admin.end();
      }
      return pg;
    } catch (err) {
      await pg.dispose();
      throw err;
    }
  }

  /** Starts the server (again) on the same port and data directory, and waits until it accepts connections. */
  async startServer(): Promise<void> {
    await this.ctl('pg_ctl', ['start', '-D', this.dataDir, '-l', this.logPath(), '-w', '-t', '60'], this.serverEnv);
  }

  /**
   * Stops the server the way an operator's `pg_ctl stop -m fast` does: every session is terminated (57P01), open
   * transactions roll back, and nothing answers on the port until {@link startServer}.
   */
  async stopServer(): Promise<void> {
    await this.ctl('pg_ctl', ['stop', '-D', this.dataDir, '-m', 'fast', '-w', '-t', '60']);
  }

  /** Stops the server (if it runs) and removes its data directory. Never throws. */
  async dispose(): Promise<void> {
    if (existsSync(path.join(this.dataDir, 'postmaster.pid'))) {
      await this.ctl('pg_ctl', ['stop', '-D', this.dataDir, '-m', 'immediate', '-w', '-t', '30']).catch(() => undefined);
    }
    rmSync(this.root, { recursive: true, force: true });
  }

  /** The server's own log, for a failing test's message. */
  logPath(): string {
    return path.join(this.root, 'log', 'server.log');
  }

  private async ctl(binary: string, args: string[], env: Record<string, string> = {}): Promise<void> {
    // Through env(1), after runuser: pg_ctl and the server it starts get these in their environment, nothing else does.
    const withEnv = Object.keys(env).length > 0 ? ['env', ...Object.entries(env).map(([k, v]) => `${k}=${v}`)] : [];
    const file = path.join(this.bin, binary);
    const [command, argv] = asRoot()
      ? ['runuser', ['-u', 'postgres', '--', ...withEnv, file, ...args]]
      : withEnv.length > 0
        ? [withEnv[0], [...withEnv.slice(1), file, ...args]]
        : [file, args];
    try {
      await run(command, argv, { cwd: this.root, timeout: 90_000 });
    } catch (err) {
      const e = err as { stderr?: string; stdout?: string; message: string };
      throw new Error(`${binary} ${args[0]} failed: ${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}`);
    }
  }
}

function asRoot(): boolean {
  return process.getuid?.() === 0;
}

/** uid and gid of the `postgres` OS user (the Debian package creates it). */
function postgresIds(): [number, number] {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  if (!line) throw new Error('there is no postgres OS user to run the server as (the Debian package creates it)');
  const [, , uid, gid] = line.split(':');
  return [Number(uid), Number(gid)];
}
