import { slugify, slugifyTool } from './slugify';

describe('slugify', () => {
  it('joins lower-case words with hyphens', () => {
    expect(slugify('Hello, World')).toBe('hello-world');
  });

  it('drops accents', () => {
    expect(slugify('Ça va très bien')).toBe('ca-va-tres-bien');
  });

  it('trims separators at both ends', () => {
    expect(slugify('  --Forge--  ')).toBe('forge');
  });

  it('wraps the slug in an object', () => {
    expect(slugifyTool.run({ text: 'A B' })).toEqual({ slug: 'a-b' });
  });
});
