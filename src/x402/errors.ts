/** Thrown when the local x402 network cannot start: no anvil binary for this platform, or anvil exits or stays silent. */
export class LocalNetworkError extends Error {
  override readonly name = 'LocalNetworkError';
  constructor(
    message: string,
    /** The last lines anvil printed, for the operator. */
    readonly outputTail = '',
    options?: { cause?: unknown },
  ) {
    super(outputTail ? `${message}\n${outputTail}` : message, options);
  }
}
