-- The agent's own table and an index on it: everything a migration creates is named agent_*. (A column the agent adds
-- to a core table must be agent_* too, e.g. ALTER TABLE users ADD COLUMN agent_tier text; a fresh Forge database has
-- no core table of the agent's to add one to, so this first migration adds none.)
CREATE TABLE agent_notes (
  id bigserial PRIMARY KEY,
  body text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX agent_notes_created_at_idx ON agent_notes (created_at);
