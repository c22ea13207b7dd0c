/** A built-in tool: a pure function of its input, with one worked example the startup smoke checks. */
export interface Tool<I = unknown, O = unknown> {
  /** Unique, snake_case: the name the agent calls it by (and the name forge.verify.json reserves). */
  name: string;
  description: string;
  /** Checks `input` and computes the output; throws a TypeError for input it does not accept. */
  run(input: unknown): O;
  /** An input and the output `run` must give for it. */
  example: { input: I; output: O };
}

/** Throws a TypeError naming the tool unless `input` is a plain object. */
export function objectInput(tool: string, input: unknown): Record<string, unknown> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new TypeError(`${tool}: input must be an object`);
  }
  return input as Record<string, unknown>;
}

/** Throws a TypeError naming the tool and field unless `value` is a string. */
export function stringField(tool: string, field: string, value: unknown): string {
  if (typeof value !== 'string') throw new TypeError(`${tool}: ${field} must be a string`);
  return value;
}
