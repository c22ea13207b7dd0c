/** The errors a client of Forge sees (the SDK, src/client.ts); the CLI maps them to exit codes. */

/** Thrown when a client method's input is invalid; nothing was started. `issues` name each bad field. */
export class ForgeInputError extends Error {
  override readonly name = 'ForgeInputError';
  constructor(
    message: string,
    readonly issues: { path: string[]; message: string }[],
  ) {
    super(message);
  }
}

/** Thrown when `getRun` names a workflow ID that Temporal does not know. */
export class RunNotFoundError extends Error {
  override readonly name = 'RunNotFoundError';
  constructor(
    readonly workflowId: string,
    options?: { cause?: unknown },
  ) {
    super(`no run with workflow ID ${JSON.stringify(workflowId)}`, options);
  }
}

/** Thrown when the Temporal service (or the database) cannot be reached at all; the CLI exits 3 on it. */
export class PlatformUnreachableError extends Error {
  override readonly name = 'PlatformUnreachableError';
  constructor(
    message: string,
    /** What was being reached, e.g. `localhost:7233` (never a secret). */
    readonly address: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Thrown when `forge reverify` finds no `forge-reverify` schedule: no platform has started against this Temporal. */
export class ScheduleMissingError extends Error {
  override readonly name = 'ScheduleMissingError';
  constructor(
    readonly scheduleId: string,
    options?: { cause?: unknown },
  ) {
    super(`there is no "${scheduleId}" schedule yet: it is created when the platform starts (forge up, or forge worker)`, options);
  }
}

/** Thrown when an environment variable Forge reads has a value it cannot use; `variable` names it. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    message: string,
    readonly variable: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A custom search attribute Forge's runs carry, as `temporal operator search-attribute create` takes it. */
export interface SearchAttributeSpec {
  name: string;
  type: string;
}

/**
 * Thrown when the Temporal namespace lacks search attributes Forge's runs carry (a Temporal that `forge up` did not
 * set up); nothing was started. `commands` register them; the CLI exits 3 on it, as for a platform it cannot reach.
 */
export class SearchAttributesMissingError extends Error {
  override readonly name = 'SearchAttributesMissingError';
  /** The `temporal` commands that register what is missing, one per attribute. */
  readonly commands: string[];
  constructor(
    readonly missing: SearchAttributeSpec[],
    readonly namespace: string,
    /** The Temporal service's address (never a secret). */
    readonly address: string,
    options?: { cause?: unknown },
  ) {
    const commands = missing.map(
      (a) => `temporal operator search-attribute create --address ${address} --namespace ${namespace} --name ${a.name} --type ${a.type}`,
    );
    const names = missing.map((a) => a.name).join(', ');
    super(
      `Temporal namespace "${namespace}" at ${address} has no search attribute ${names}, which Forge's runs carry; nothing was started. ` +
        `Register ${missing.length === 1 ? 'it' : 'them'} with: ${commands.join(' && ')} (forge up registers all of Forge's on the dev server it starts).`,
      options,
    );
    this.commands = commands;
  }
}

/**
 * Thrown when a run waits on a task queue that no Forge worker polls, to a client that asked not to wait for one
 * (`failWithoutWorkerAfterMs`; the CLI without --wait). `runWithdrawn`: the run had done nothing yet and was ended, so
 * nothing of it will happen later; otherwise it waits where it is and goes on once a worker polls.
 */
export class NoWorkerError extends Error {
  override readonly name = 'NoWorkerError';
  constructor(
    readonly taskQueue: string,
    readonly namespace: string,
    /** The Temporal service's address (never a secret). */
    readonly address: string,
    /** The run that waited, or undefined when none was started. */
    readonly workflowId: string | undefined,
    readonly runWithdrawn: boolean,
    options?: { cause?: unknown },
  ) {
    const what =
      workflowId === undefined
        ? 'nothing was started'
        : runWithdrawn
          ? `run ${workflowId} had not begun and was withdrawn, so nothing of it happens later`
          : `run ${workflowId} waits where it is and goes on once a worker polls (forge runs shows it)`;
    super(
      `No Forge worker polls the task queue "${taskQueue}" (namespace "${namespace}" at ${address}): ${what}. ` +
        'Start the workers with `forge worker`, or the whole platform with `forge up`, then try again.',
      options,
    );
  }
}
