import { objectInput, stringField, type Tool } from './tool';

/** Lower-case ASCII words joined by '-': accents are dropped, everything else separates words. */
export function slugify(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/gu, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/gu, '-')
    .replace(/^-+|-+$/gu, '');
}

export const slugifyTool: Tool<{ text: string }, { slug: string }> = {
  name: 'slugify',
  description: 'Turns a title into a URL slug (lower-case ASCII words joined by hyphens).',
  run: (input) => ({ slug: slugify(stringField('slugify', 'text', objectInput('slugify', input).text)) }),
  example: { input: { text: 'Crème Brûlée: A Recipe!' }, output: { slug: 'creme-brulee-a-recipe' } },
};
