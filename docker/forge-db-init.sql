-- Runs once, when the forge-db container initialises its data directory (docker-entrypoint-initdb.d), as the
-- image's superuser. Forge connects as `forge`, which is NOT a superuser and holds none of the server-file or
-- signal roles: agent migrations run as it, so PostgreSQL's own privileges are a second wall behind the schema
-- policy (SCHEMA_POLICY.md "How it runs"). It owns the database and its public schema, so the application's tables
-- it creates are ones an agent migration may add columns and indexes to.
CREATE ROLE forge LOGIN PASSWORD 'forge' NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
ALTER DATABASE forge OWNER TO forge;
\connect forge
ALTER SCHEMA public OWNER TO forge;
