import { sql } from 'drizzle-orm';
import type { PoolClient } from 'pg';
import { MigrationStatementError } from './errors';
import { quoteIdent } from './quote-ident';
import type { ForgeTx } from './types';

/**
 * The role agent migrations run under on PostgreSQL when Forge itself connects as a superuser (SCHEMA_POLICY.md "How
 * it runs": the database's own privileges are a second wall behind the parse tree). It can log in nowhere, owns
 * nothing at first, and is given only USAGE and CREATE on the configured schema: what the agent creates it owns.
 */
export const AGENT_ROLE = 'forge_agent';

/**
 * Predefined roles that reach outside the database: server files, server programs, signalling other sessions. The
 * role a migration runs as must hold none of them (a superuser holds them all).
 */
const PRIVILEGED_ROLES = ['pg_read_server_files', 'pg_write_server_files', 'pg_execute_server_program', 'pg_signal_backend'] as const;

/**
 * Creates {@link AGENT_ROLE} when Forge connects as a superuser and it does not exist yet, and grants it the
 * configured schema. Run at start under Forge's migration lock; idempotent (a role another database of the cluster
 * created in the meantime is fine). As any other role, Forge cannot create roles, and needs none: it runs agent
 * migrations as itself, which must then hold no {@link PRIVILEGED_ROLES}.
 */
export async function ensureAgentRole(client: PoolClient, schema: string): Promise<void> {
  const { rows } = await client.query<{ rolsuper: boolean }>('SELECT rolsuper FROM pg_roles WHERE rolname = current_user');
  if (!rows[0]?.rolsuper) return;
  const role = quoteIdent(AGENT_ROLE);
  const exists = await client.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [AGENT_ROLE]);
  if (exists.rowCount === 0) {
    try {
      await client.query(`CREATE ROLE ${role} NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS`);
    } catch (err) {
      if ((err as { code?: string }).code !== '42710') throw err; // duplicate_object: created meanwhile
    }
  }
  await client.query(`GRANT USAGE, CREATE ON SCHEMA ${quoteIdent(schema)} TO ${role}`);
}

/**
 * Inside an agent migration's transaction, before its statements: on PostgreSQL, switches to {@link AGENT_ROLE}
 * (`SET LOCAL ROLE`, so it ends with the transaction; `SET ROLE` in a session of its own for an online index build) when Forge is a superuser, then checks that the role the
 * statements will run as is no superuser and holds no {@link PRIVILEGED_ROLES}. The caller's `RESET ROLE` after the
 * statements brings Forge's own role back.
 * @throws MigrationStatementError (42501) when no such role can be had: the operator must change the connection.
 */
export async function enterAgentRole(tx: Pick<ForgeTx, 'execute'>, scope: 'transaction' | 'session' = 'transaction'): Promise<void> {
  const [me] = await rows<{ rolsuper: boolean; agent: boolean }>(
    tx,
    sql`SELECT rolsuper, EXISTS (SELECT 1 FROM pg_roles WHERE rolname = ${AGENT_ROLE}) AS agent FROM pg_roles WHERE rolname = current_user`,
  );
  if (me?.rolsuper && me.agent) await tx.execute(sql.raw(`SET ${scope === 'transaction' ? 'LOCAL ' : ''}ROLE ${quoteIdent(AGENT_ROLE)}`));
  const [now] = await rows<{ role: string; rolsuper: boolean; held: string[] | null }>(
    tx,
    sql`SELECT current_user AS role, r.rolsuper,
          (SELECT array_agg(p) FROM unnest(${`{${PRIVILEGED_ROLES.join(',')}}`}::text[]) AS p
            WHERE pg_has_role(current_user, p, 'USAGE')) AS held
        FROM pg_roles r WHERE r.rolname = current_user`,
  );
  if (now?.rolsuper || (now?.held?.length ?? 0) > 0) {
    const what = now?.rolsuper ? 'is a superuser' : `holds ${(now?.held ?? []).join(', ')}`;
    throw new MigrationStatementError(
      `Forge will not run an agent migration as role ${now?.role ?? '?'}: it ${what}, so the database would not be a ` +
        'second wall behind the schema policy. Connect Forge as a role that is not a superuser and holds none of ' +
        `${PRIVILEGED_ROLES.join(', ')} (docker-compose.yml does), or as a superuser that can create role ` +
        `${AGENT_ROLE} (Forge then runs agent migrations under it). Nothing ran.`,
      { code: '42501', enforcedBy: 'forge' },
    );
  }
}

async function rows<T>(tx: Pick<ForgeTx, 'execute'>, query: ReturnType<typeof sql>): Promise<T[]> {
  return ((await tx.execute(query)) as unknown as { rows: T[] }).rows;
}
