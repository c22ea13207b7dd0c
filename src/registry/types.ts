/** The manifest beside each version's files (`<dir>/<name>/v<N>.json`): what a registry needs without the database. */
export interface ToolManifest {
  name: string;
  version: number;
  contentHash: string;
  description: string;
  /** ISO 8601, when the version was persisted. */
  createdAt: string;
  workflowId: string | null;
  /** The input schema as JSON Schema, when the deployment provided it (the tool's zod schema stays authoritative). */
  inputJsonSchema?: unknown;
}

/** One entry of active.json: which version of a tool registries load. */
export interface ActiveEntry {
  version: number;
  contentHash: string;
}

/** `<dir>/active.json`: the active pointers the worker writes and agent processes read. */
export interface ActiveIndex {
  /** Only ever increases; registries reload when it changes. */
  generation: number;
  /** ISO 8601, when this index was written. */
  updatedAt: string;
  tools: Record<string, ActiveEntry>;
}

/** What a registry tells callers about one loaded tool. */
export interface ToolDescriptor {
  name: string;
  version: number;
  contentHash: string;
  description: string;
  inputJsonSchema?: unknown;
}
