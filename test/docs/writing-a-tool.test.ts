import { readFileSync } from 'node:fs';
import path from 'node:path';
import { runSandbox, sandboxCleanupsDone } from '../../src/sandbox';
import { ToolTypechecker } from '../../src/sandbox/typecheck';
import { codeBlocks } from './markdown';

/*
 * docs/writing-a-tool.md's example, as a reader copies it out of the page: it must type-check as a deployment's
 * typecheck stage does (FORGE_TYPECHECK=error) and pass the sandbox with the guide's test input, giving the output the
 * guide shows. (The guide's deploy and call transcripts were taken from a real `forge up`.)
 */
const guide = readFileSync(path.join(__dirname, '..', '..', 'docs', 'writing-a-tool.md'), 'utf8');
const example = codeBlocks(guide).find((b) => b.lang === 'ts' && b.code.includes("name: 'text_stats'"));

describe("the guide's example tool", () => {
  const checker = new ToolTypechecker();
  afterAll(async () => {
    await checker.close();
    await sandboxCleanupsDone();
  });

  test('is in the guide as one TypeScript block', () => {
    expect(example).toBeDefined();
  });

  test('has no type errors', async () => {
    const result = await checker.check(example!.code, 'text_stats');
    expect(result.errors).toEqual([]);
  }, 120_000);

  test("passes with the guide's test input and returns what the guide shows", async () => {
    const verdict = await runSandbox({ name: 'text_stats', source: example!.code, input: { text: 'The cat sat. The cat ran!' } });
    expect(verdict).toMatchObject({
      status: 'passed',
      output: {
        words: 6,
        sentences: 2,
        frequent: [
          { word: 'cat', count: 2 },
          { word: 'the', count: 2 },
          { word: 'ran', count: 1 },
        ],
      },
    });
  });

  test('a call with the wrong input type is invalid, as the guide says', async () => {
    const verdict = await runSandbox({ name: 'text_stats', source: example!.code, input: { text: 5 } });
    expect(verdict.status).toBe('invalid');
    expect(verdict.error).toContain("the input does not match the tool's inputSchema: text:");
  });
});
