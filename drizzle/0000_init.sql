CREATE TABLE "active_tools" (
	"name" text PRIMARY KEY NOT NULL,
	"version" integer NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "agent_migrations" (
	"name" text PRIMARY KEY NOT NULL,
	"checksum" text NOT NULL,
	"sql" text NOT NULL,
	"applied_at" timestamp with time zone DEFAULT now() NOT NULL,
	"workflow_id" text,
	"run_id" text
);
--> statement-breakpoint
CREATE TABLE "events" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"at" timestamp with time zone DEFAULT now() NOT NULL,
	"kind" text NOT NULL,
	"subject" text NOT NULL,
	"detail" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"workflow_id" text
);
--> statement-breakpoint
CREATE TABLE "tool_version_counters" (
	"name" text PRIMARY KEY NOT NULL,
	"last_version" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tool_versions" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"version" integer NOT NULL,
	"content_hash" text NOT NULL,
	"source_ts" text NOT NULL,
	"compiled_js" text NOT NULL,
	"test_input" jsonb,
	"description" text DEFAULT '' NOT NULL,
	"verdict" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"workflow_id" text,
	CONSTRAINT "tool_versions_name_version_key" UNIQUE("name","version"),
	CONSTRAINT "tool_versions_name_content_hash_key" UNIQUE("name","content_hash")
);
--> statement-breakpoint
CREATE INDEX "events_subject_id_idx" ON "events" USING btree ("subject","id");