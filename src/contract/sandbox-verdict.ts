/** The verdicts of TOOL_CONTRACT.md: every sandbox run ends in exactly one. */
export const SANDBOX_STATUSES = ['passed', 'failed', 'invalid', 'timeout', 'oom', 'crashed', 'output_limit'] as const;
export type SandboxStatus = (typeof SANDBOX_STATUSES)[number];

/** Where in the submitted source a compile error is (1-based line and column). */
export interface SourceLocation {
  file: string;
  line: number;
  column: number;
  lineText?: string;
}

/**
 * One error of the TypeScript checker (FORGE_TYPECHECK): `message` reads `<name>.ts:line:col: TS2322: ...`, `code` is
 * the checker's code (`TS2322`), `location` is 1-based as a compile error's is (absent for an error of no file).
 */
export interface TypeCheckError {
  message: string;
  code: string;
  location?: SourceLocation;
}

/** The settings of the typecheck stage: `error` rejects a tool with type errors, `warn` reports them, `off` skips. */
export const TYPECHECK_MODES = ['error', 'warn', 'off'] as const;
export type TypecheckMode = (typeof TYPECHECK_MODES)[number];

/** Structured details an agent can act on, beside the one-line `error`. */
export interface SandboxDiagnostics {
  /** The step that decided: compile, typecheck, load, contract, schema, execute, serialize, limits. */
  phase: 'request' | 'compile' | 'typecheck' | 'load' | 'contract' | 'schema' | 'execute' | 'serialize' | 'limits' | 'process';
  /** Compile errors, each with its location. */
  compileErrors?: { message: string; location?: SourceLocation }[];
  /**
   * Type errors, each with its location and TS code: the reason with phase `typecheck`; with FORGE_TYPECHECK=warn,
   * reported beside whatever the run decided.
   */
  typeErrors?: TypeCheckError[];
  /** Schema issues when the test input fails `inputSchema` (zod's issues, trimmed to path and message). */
  schemaIssues?: { path: (string | number)[]; message: string }[];
  /** For a result that does not survive JSON: where in it and why. */
  resultPath?: string;
  /** The error's name and stack when the tool threw. */
  errorName?: string;
  stack?: string;
  /** How the process ended when it ended without a result. */
  exitCode?: number | null;
  signal?: string | null;
  /** The limit that was hit, in its unit. */
  limit?: { kind: 'timeMs' | 'memoryMb' | 'outputBytes' | 'resultBytes' | 'sourceBytes'; value: number };
  /** The tool's own description and declared timeout, once its module loaded. */
  tool?: { description?: string; timeoutMs?: number; inputJsonSchema?: unknown };
}

/**
 * One sandbox run's outcome (CLI.md `forge sandbox --json`). `output` is present only for `passed`; `error` is one
 * sentence for everything else.
 */
export interface SandboxVerdict {
  status: SandboxStatus;
  durationMs: number;
  output?: unknown;
  error?: string;
  stderrTail?: string;
  diagnostics?: SandboxDiagnostics;
}
