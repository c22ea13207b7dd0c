import { DefaultLogger, Runtime } from '@temporalio/worker';
import type { Bench } from './types';
import { benches } from './registry';

// The benchmarks start workers in this process: their INFO lines (webpack's bundle report) would bury the figures.
Runtime.install({ logger: new DefaultLogger('WARN') });

/**
 * `npm run bench [-- NAME ...]`: runs every benchmark (or the named ones) one after the other and ends with one line
 * of JSON holding every figure by the name its issue gives.
 */
async function main(): Promise<void> {
  const wanted = process.argv.slice(2);
  const unknown = wanted.filter((w) => !benches.some((b) => b.name === w));
  if (unknown.length > 0) {
    process.stderr.write(`unknown benchmark(s): ${unknown.join(', ')}; known: ${benches.map((b) => b.name).join(', ')}\n`);
    process.exit(2);
  }
  const selected: Bench[] = wanted.length > 0 ? benches.filter((b) => wanted.includes(b.name)) : benches;
  const figures: Record<string, number> = {};
  for (const bench of selected) {
    process.stdout.write(`\n== ${bench.name}: ${bench.description}\n`);
    Object.assign(figures, await bench.run());
  }
  process.stdout.write(JSON.stringify(figures) + '\n');
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
