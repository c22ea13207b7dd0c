/** Thrown when no `temporal` CLI binary is found where setup installs it (and, from startForge or `forge up`, setup could not install one). */
export class TemporalBinaryNotFoundError extends Error {
  override readonly name = 'TemporalBinaryNotFoundError';
  constructor(
    /** The directories that were searched, in order. */
    readonly searched: string[],
    /** The command that installs it, valid where Forge runs (`npm run setup` in a checkout, `npx forge setup` where installed). */
    readonly setupCommand: string = 'npm run setup',
    /** What setup said when it was run and failed (why pip and go could not install it, and what to do instead). */
    readonly setupOutput?: string,
  ) {
    super(
      setupOutput
        ? `No temporal CLI binary found on PATH or in ${searched.slice(-2).join(' or ')}, and setup could not install one:\n${setupOutput}\nOnce the cause is fixed, \`${setupCommand}\` installs it.`
        : `No temporal CLI binary found on PATH or in ${searched.slice(-2).join(' or ')}; run \`${setupCommand}\` to install it.`,
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
