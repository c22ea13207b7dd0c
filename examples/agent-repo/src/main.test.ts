import { startupSmoke } from './main';

describe('startup smoke', () => {
  it('passes and names every tool', () => {
    expect(startupSmoke()).toEqual({ line: 'startup-smoke ok: 4 tools (word_count, slugify, sum, truncate)', exitCode: 0 });
  });
});
