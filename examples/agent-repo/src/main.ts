import { checkTools, createRegistry } from './registry';

/**
 * The startup smoke: build the registry and check every tool on its example. Returns the line to print and the exit
 * code; kept apart from process I/O so a test can call it.
 */
export function startupSmoke(): { line: string; exitCode: number } {
  const checks = checkTools(createRegistry());
  const failed = checks.filter((c) => !c.ok);
  if (failed.length > 0) {
    return {
      line: `startup-smoke FAILED: ${failed.map((c) => `${c.name}: ${c.error}`).join('; ')}`,
      exitCode: 1,
    };
  }
  return { line: `startup-smoke ok: ${checks.length} tools (${checks.map((c) => c.name).join(', ')})`, exitCode: 0 };
}

/** `main.ts --startup-smoke`, or `main.ts <tool> '<json input>'` to call one tool and print its JSON output. */
export function main(argv: readonly string[]): number {
  if (argv[0] === '--startup-smoke') {
    const { line, exitCode } = startupSmoke();
    (exitCode === 0 ? process.stdout : process.stderr).write(`${line}\n`);
    return exitCode;
  }
  const [name, json = '{}'] = argv;
  const tool = name === undefined ? undefined : createRegistry().get(name);
  if (!tool) {
    process.stderr.write(`usage: main --startup-smoke | main <tool> '<json input>'; tools: ${[...createRegistry().keys()].join(', ')}\n`);
    return 2;
  }
  try {
    process.stdout.write(`${JSON.stringify(tool.run(JSON.parse(json)))}\n`);
    return 0;
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}

if (require.main === module) process.exitCode = main(process.argv.slice(2));
