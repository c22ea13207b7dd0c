import { createHash } from 'node:crypto';
import { stop as stopEsbuild, transform, type Message } from 'esbuild';
import { registerProcessHelper } from '../process/process-helpers';
import { Lru } from './lru';
import type { SourceLocation } from './verdict';

export type CompileResult = { ok: true; code: string; warnings: string[] } | { ok: false; errors: { message: string; location?: SourceLocation }[] };

/**
 * Compiles one tool module from TypeScript to an ES module in memory (no file is read or written). ESM rather than
 * CommonJS so that top-level await works as the author wrote it; an inline source map makes stack traces point at the
 * submitted lines.
 */
export async function compileTool(source: string, name: string): Promise<CompileResult> {
  // The same module is compiled again and again (the deploy's compile step, its test, its commit, reverification):
  // esbuild is deterministic, so a small cache of recent results saves a round trip to its service each time.
  const key = source.length <= CACHE_MAX_SOURCE ? createHash('sha256').update(name).update('\0').update(source).digest('hex') : undefined;
  const cached = key ? cache.get(key) : undefined;
  if (cached) return cached;
  const result = await compileUncached(source, name);
  if (key) cache.set(key, result);
  return result;
}

/**
 * What every esbuild transform of a tool shares: Node's runtime, the Node version the sandbox runs, an inline source
 * map (stacks name the submitted lines), and errors returned rather than printed.
 */
export const NODE_TRANSFORM = { platform: 'node', target: 'node20', sourcemap: 'inline', logLevel: 'silent' } as const;

const CACHE_MAX_SOURCE = 256 * 1024;
const cache = new Lru<CompileResult>(128);
// esbuild's service process, started by the first transform (this module's or module-format.ts's).
registerProcessHelper(stopEsbuild);

async function compileUncached(source: string, name: string): Promise<CompileResult> {
  const file = `${name}.ts`;
  try {
    const result = await transform(source, { ...NODE_TRANSFORM, loader: 'ts', format: 'esm', sourcefile: file });
    return { ok: true, code: result.code, warnings: result.warnings.map((w) => formatMessage(w)) };
  } catch (err) {
    const messages: Message[] = (err as { errors?: Message[] }).errors ?? [];
    if (messages.length === 0) return { ok: false, errors: [{ message: (err as Error).message }] };
    return {
      ok: false,
      errors: messages.map((m) => ({
        message: formatMessage(m),
        location: m.location ? { file, line: m.location.line, column: m.location.column + 1, lineText: m.location.lineText } : undefined,
      })),
    };
  }
}

function formatMessage(m: Message): string {
  // esbuild counts columns from 0; editors and agents count from 1.
  return m.location ? `${m.location.file}:${m.location.line}:${m.location.column + 1}: ${m.text}` : m.text;
}
