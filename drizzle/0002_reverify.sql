CREATE TABLE "reverify_results" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"run_key" text NOT NULL,
	"name" text NOT NULL,
	"version" integer NOT NULL,
	"attempt" integer DEFAULT 1 NOT NULL,
	"role" text NOT NULL,
	"verdict" text NOT NULL,
	"duration_ms" integer NOT NULL,
	"error" text,
	"action" text,
	"workflow_id" text,
	"at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "reverify_results_run_tool_version_attempt_key" UNIQUE("run_key","name","version","attempt")
);
--> statement-breakpoint
CREATE TABLE "tool_quarantine" (
	"name" text PRIMARY KEY NOT NULL,
	"state" text NOT NULL,
	"failed_version" integer NOT NULL,
	"active_version" integer,
	"reason" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"run_key" text NOT NULL,
	"workflow_id" text,
	"at" timestamp with time zone DEFAULT now() NOT NULL
);
