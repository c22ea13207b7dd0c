/** A migration name: readable in a workflow ID (`schema-migrate/<name>`), e.g. `0003_user_stars` or `stars.v2`. */
export const MIGRATION_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
