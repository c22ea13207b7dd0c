/** The kinds of run Forge starts; the `ForgeKind` search attribute of every run, and `forge runs --kind`. */
export const FORGE_KINDS = ['deploy', 'rollback', 'delete', 'query', 'migrate', 'promote', 'reverify', 'pay', 'sell'] as const;
export type ForgeKind = (typeof FORGE_KINDS)[number];

/** The statuses `forge runs --status` filters on (Temporal's execution statuses, lower case). */
export const RUN_STATUSES = ['running', 'completed', 'failed', 'canceled', 'terminated', 'timed_out'] as const;
