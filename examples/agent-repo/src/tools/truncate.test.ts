import { truncate, truncateTool } from './truncate';

describe('truncate', () => {
  it('keeps a text that fits', () => {
    expect(truncate('short', 5)).toBe('short');
  });

  it('cuts a long text and marks the cut', () => {
    expect(truncate('abcdefgh', 4)).toBe('abc…');
  });

  it('gives an empty text for max 0', () => {
    expect(truncate('abc', 0)).toBe('');
  });

  it('refuses a negative max', () => {
    expect(() => truncateTool.run({ text: 'x', max: -1 })).toThrow('truncate: max must be a non-negative integer');
  });
});
