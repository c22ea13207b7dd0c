import { countWords, wordCount } from './word-count';

describe('word_count', () => {
  it('counts words, characters and lines', () => {
    expect(countWords('hello  world\nagain')).toEqual({ words: 3, characters: 18, lines: 2 });
  });

  it('gives zeros for an empty text', () => {
    expect(countWords('')).toEqual({ words: 0, characters: 0, lines: 0 });
  });

  it('counts code points, not UTF-16 units', () => {
    expect(countWords('héllo 👋').characters).toBe(7);
  });

  it('refuses input without a text', () => {
    expect(() => wordCount.run({ txt: 'x' })).toThrow('word_count: text must be a string');
  });
});
