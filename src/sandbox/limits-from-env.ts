import { MAX_UID_BASE, type SandboxLimits } from './limits';

/**
 * Sandbox limits from FORGE_SANDBOX_* variables (CLI and workers read the same names; see src/config.ts for the
 * whole configuration). Unset variables keep the defaults; a malformed one is an error that names it.
 */
export function sandboxLimitsFromEnv(env: NodeJS.ProcessEnv = process.env): Partial<SandboxLimits> {
  const int = (name: string): number | undefined => {
    const raw = env[name];
    if (raw === undefined || raw === '') return undefined;
    const n = Number(raw);
    if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
    return n;
  };
  const uidBase = env.FORGE_SANDBOX_UID_BASE;
  if (uidBase !== undefined && uidBase !== '' && !(Number.isInteger(Number(uidBase)) && Number(uidBase) >= 0 && Number(uidBase) <= MAX_UID_BASE)) {
    throw new Error(`FORGE_SANDBOX_UID_BASE must be 0 (off) or a uid up to ${MAX_UID_BASE}, got ${JSON.stringify(uidBase)}`);
  }
  const list = env.FORGE_SANDBOX_ENV_PASSTHROUGH;
  return {
    maxTimeoutMs: int('FORGE_SANDBOX_MAX_TIMEOUT_MS'),
    memoryMb: int('FORGE_SANDBOX_MEMORY_MB'),
    outputBytes: int('FORGE_SANDBOX_OUTPUT_BYTES'),
    resultBytes: int('FORGE_SANDBOX_RESULT_BYTES'),
    sourceBytes: int('FORGE_SANDBOX_SOURCE_BYTES'),
    envPassthrough: list ? list.split(',').map((s) => s.trim()).filter(Boolean) : undefined,
    maxProcesses: int('FORGE_SANDBOX_MAX_PROCESSES'),
    userIdBase: uidBase === undefined || uidBase === '' ? undefined : Number(uidBase),
  };
}
