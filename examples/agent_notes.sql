-- The agent's own table, an index on it, and a column it adds to a core table (columns it adds must be agent_*).
CREATE TABLE agent_notes (
  id bigserial PRIMARY KEY,
  body text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX agent_notes_created_at_idx ON agent_notes (created_at);
