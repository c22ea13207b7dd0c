import { randomBytes } from 'node:crypto';
import { chownSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client as PgClient } from 'pg';
import { postgresBinDir, PrivatePostgres } from '../chaos/private-postgres';
import { Canaries } from './canaries';
import { newSecret, VICTIM, VICTIM_INPUT, victimSource, writeTargets, type AttackContext, type Secrets } from './corpus';
import { HarmWatch } from './harm';
import { startHostilePlatform, type HostilePlatform } from './platform';

/** A uid of the sandbox's run range (FORGE_SANDBOX_UID_BASE's default and up) for the stand-in of another run. */
const ANOTHER_RUN_UID = 2_100_000_000 + 4_242;

/** Everything a hostile case needs: the platform, the planted secrets, the canaries, the watch. */
export interface HostileWorld {
  platform: HostilePlatform;
  secrets: Secrets;
  canaries: Canaries;
  watch: HarmWatch;
  postgres?: PrivatePostgres;
  context(ownPrefixes: string[]): AttackContext;
  teardown(): Promise<void>;
}

/**
 * Starts the platform as `user`, plants the secrets (the victim tool's source, an operator's file in FORGE_HOME, a
 * stand-in for another run's private directory, the worker's environment and wallet key), starts the canaries (host
 * listeners, a running workflow, PostgreSQL) and deploys the victim.
 */
export async function startHostileWorld(user: string, env: NodeJS.ProcessEnv = {}): Promise<HostileWorld> {
  const cleanups: (() => Promise<unknown> | void)[] = [];
  const teardown = async () => {
    for (const cleanup of cleanups.reverse()) await Promise.resolve(cleanup()).catch(() => undefined);
  };
  try {
    const platform = await startHostilePlatform(user, env);
    cleanups.push(() => platform.stop());
    const secrets: Secrets = {
      source: newSecret('victim_source'),
      home: newSecret('forge_home'),
      run: newSecret('another_run'),
      env: platform.envSecret,
      walletKey: platform.walletKey.slice(2),
      apiToken: platform.apiToken,
    };

    // An operator's file in FORGE_HOME, as Forge's own files are today (0644, the platform user's).
    const homeSecretFile = path.join(platform.home, 'operator-notes.txt');
    writeFileSync(homeSecretFile, `api_token=${secrets.home}\n`, { mode: 0o644 });
    chownSync(homeSecretFile, platform.uid, platform.gid);

    // Another run's private directory, as the sandbox makes them (0700, the run's user: another uid of the run range
    // when Forge is root, Forge's own user otherwise).
    const otherRunDir = path.join('/dev/shm', `forge-sbx-hostile-canary-${randomBytes(4).toString('hex')}`);
    mkdirSync(otherRunDir, { mode: 0o700 });
    writeFileSync(path.join(otherRunDir, 'tool.mjs'), `// another run's tool\nconst key = '${secrets.run}';\n`, { mode: 0o600 });
    const owner = platform.uid === 0 ? [ANOTHER_RUN_UID, ANOTHER_RUN_UID] : [platform.uid, platform.gid];
    chownSync(otherRunDir, owner[0], owner[1]);
    chownSync(path.join(otherRunDir, 'tool.mjs'), owner[0], owner[1]);
    cleanups.push(() => rmSync(otherRunDir, { recursive: true, force: true }));

    const canaries = await Canaries.start();
    cleanups.push(() => canaries.close());

    // A PostgreSQL of the test's own with CI's passwords (forge/forge, trust for postgres on 127.0.0.1), when this
    // machine has the server; the CI's shared server is never the one attacked.
    let postgres: PrivatePostgres | undefined;
    let pg: PgClient | undefined;
    if (postgresBinDir()) {
      postgres = await PrivatePostgres.start();
      cleanups.push(() => postgres!.dispose());
      pg = new PgClient({ connectionString: postgres.superuserUrl });
      await pg.connect();
      cleanups.push(() => pg!.end());
    }

    const victim = await platform.forge.deployTool({ name: VICTIM, source: victimSource(secrets.source), testInput: VICTIM_INPUT });
    if (victim.status !== 'active') throw new Error(`the victim did not deploy: ${JSON.stringify(victim.diagnostics)}`);

    const marker = randomBytes(6).toString('hex');
    const watch = new HarmWatch({
      platform,
      canaries,
      secrets,
      marker,
      markerDirs: [...writeTargets(platform), otherRunDir],
      pg,
      canaryWorkflowId: `hostile-canary/${marker}`,
    });
    cleanups.push(() => {
      for (const dir of watch.options.markerDirs) rmSync(path.join(dir, `hostile-${marker}`), { force: true });
    });
    await watch.ensureCanaryWorkflow();

    return {
      platform,
      secrets,
      canaries,
      watch,
      postgres,
      context: (ownPrefixes) => ({
        platform,
        canaries,
        postgres: postgres ? { host: '127.0.0.1', port: postgres.port } : undefined,
        otherRunDir,
        homeSecretFile,
        marker,
        ownPrefixes,
      }),
      teardown,
    };
  } catch (err) {
    await teardown();
    throw err;
  }
}
