/**
 * A second process holding a ToolRegistry on an agent-tools directory (run with tsx by tool-registry.test.ts).
 * Prints one JSON line per version of TOOL it sees, with the output of invoking it, so the parent can check that a
 * new version arrives without a restart and that calling it runs the new code.
 */
import { ToolRegistry } from '../../src/registry';

async function main(): Promise<void> {
  const [dir, tool] = process.argv.slice(2);
  const registry = await ToolRegistry.open({ dir });
  const report = async () => {
    const seen = registry.get(tool);
    const result = seen ? await registry.invoke(tool, { who: 'child' }) : undefined;
    process.stdout.write(JSON.stringify({ version: seen?.version ?? null, result }) + '\n');
  };
  registry.onChange((change) => {
    if ([...change.added, ...change.updated, ...change.removed].includes(tool)) void report();
  });
  await report();
  // Runs until the parent closes stdin.
  process.stdin.resume();
  process.stdin.on('end', () => {
    void registry.close().then(() => process.exit(0));
  });
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
