-- Forge's record of agent migrations leaves the agent namespace (SCHEMA_POLICY.md "Forge's own objects").
ALTER TABLE "agent_migrations" RENAME TO "forge_migrations";--> statement-breakpoint
ALTER INDEX "agent_migrations_pkey" RENAME TO "forge_migrations_pkey";
