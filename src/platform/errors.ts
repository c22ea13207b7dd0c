/** Thrown when no `temporal` CLI binary is found where setup installs it. */
export class TemporalBinaryNotFoundError extends Error {
  override readonly name = 'TemporalBinaryNotFoundError';
  constructor(
    /** The directories that were searched, in order. */
    readonly searched: string[],
  ) {
    super(
      `No temporal CLI binary found on PATH or in ${searched.slice(-2).join(' or ')}; run \`npm run setup\` to install it.`,
    );
  }
}

/** Thrown when the embedded Temporal dev server does not start, or does not answer in time. */
export class DevServerError extends Error {
  override readonly name = 'DevServerError';
  constructor(
    message: string,
    /** The last lines the server printed, for the operator. */
    readonly outputTail: string,
    options?: { cause?: unknown },
  ) {
    super(outputTail ? `${message}\n${outputTail}` : message, options);
  }
}
