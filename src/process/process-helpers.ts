/**
 * The helpers Forge starts once per process, at their first use, and then keeps for later work: the spawn helper
 * process (src/process/spawner.ts), esbuild's service process (src/sandbox/compile.ts, module-format.ts) and the warm
 * type checker's thread (src/sandbox/typecheck.ts). None of them keeps the process alive, and each lives as long as
 * the process. The module that owns one registers here how to end it.
 *
 * A process that goes on without Forge ends them with {@link stopProcessHelpers}; a later use starts them again.
 * The jest suites do so after every test file (test/helpers/jest-environment.js): each file has its own copy of these
 * modules, so each file started helpers of its own, and their handles held the file's whole module registry (Temporal's
 * SDK, the workflow bundle, libpg_query's 128 MB of WebAssembly memory) in the jest worker to its end. A worker that
 * had run the suites holding a platform grew past 3 GB, took longer than jest's 500 ms to exit, and was killed ("A
 * worker process has failed to exit gracefully").
 */
const stoppers = new Set<() => Promise<void>>();

/** Called once by the module that owns a helper, with the function that ends it (a no-op when none runs). */
export function registerProcessHelper(stop: () => Promise<void>): void {
  stoppers.add(stop);
}

/** Ends every helper running in this process and waits for them to be gone. Never throws. */
export async function stopProcessHelpers(): Promise<void> {
  await Promise.all([...stoppers].map((stop) => stop().catch(() => undefined)));
}
