/** The kinds of run Forge starts; the `ForgeKind` search attribute of every run, and `forge runs --kind`. */
export const FORGE_KINDS = ['deploy', 'rollback', 'delete', 'query', 'migrate', 'promote', 'reverify'] as const;
export type ForgeKind = (typeof FORGE_KINDS)[number];
