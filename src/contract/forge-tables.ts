/**
 * The tables Forge keeps for itself, in the schema it shares with the agent's migrations (FORGE_SCHEMA). One list for
 * the drizzle schema that creates them and the schema policy that keeps every agent migration off them
 * (SCHEMA_POLICY.md "Forge's own objects"). None is in the agent namespace: `forge_migrations` was `agent_migrations`
 * until drizzle/0001 renamed it.
 */
export const FORGE_TABLES = {
  toolVersions: 'tool_versions',
  toolVersionCounters: 'tool_version_counters',
  activeTools: 'active_tools',
  events: 'events',
  agentMigrations: 'forge_migrations',
  reverifyResults: 'reverify_results',
  toolQuarantine: 'tool_quarantine',
} as const;

/** Every name in {@link FORGE_TABLES}. */
export const FORGE_TABLE_NAMES: ReadonlySet<string> = new Set(Object.values(FORGE_TABLES));

/**
 * Names in the agent namespace that Forge itself used before (`agent_migrations` until drizzle/0001): no agent
 * object may take them, so that no operator, older tool or older Forge reads an agent's table as Forge's history.
 */
export const FORGE_LEGACY_NAMES: ReadonlySet<string> = new Set(['agent_migrations', 'agent_migrations_pkey']);
