import { createHash } from 'node:crypto';
import { transform } from 'esbuild';
import { NODE_TRANSFORM } from './compile';
import { Lru } from './lru';

/** A tool's compiled module in the form the sandbox loads it. */
export interface RunnableModule {
  format: 'cjs' | 'esm';
  code: string;
}

/**
 * The form a tool's compiled ES module runs in. CommonJS whenever that is the same program, because Node loads a
 * CommonJS module in ~0.5 ms but its first ES module in ~7 ms (the ESM loader starts up), and every sandbox run is a
 * fresh process that pays it. Not when the module uses top-level await or import.meta, which only an ES module has:
 * those run as the ES module they are. esbuild keeps Node's interop (a default import of a CommonJS package is its
 * module.exports) and chains the inline source map, so stack traces still name the submitted TypeScript lines; the
 * module body runs in strict mode with an undefined top-level `this`, as the ES module would.
 */
export async function runnableModule(esm: string): Promise<RunnableModule> {
  const key = createHash('sha256').update(esm).digest('hex');
  const cached = cache.get(key);
  if (cached) return cached;
  const runnable = await convert(esm);
  cache.set(key, runnable);
  return runnable;
}

const cache = new Lru<RunnableModule>(128);

async function convert(esm: string): Promise<RunnableModule> {
  try {
    const result = await transform(esm, {
      ...NODE_TRANSFORM,
      loader: 'js',
      format: 'cjs',
      // An ES module is strict and its top-level `this` is undefined; a CommonJS module is neither unless told.
      banner: '(function () {\n"use strict";',
      footer: '}).call(undefined);',
    });
    if (result.warnings.some((w) => w.id === 'empty-import-meta')) return { format: 'esm', code: esm };
    return { format: 'cjs', code: result.code };
  } catch {
    // Top-level await (or anything else CommonJS cannot say): the ES module as it is.
    return { format: 'esm', code: esm };
  }
}
