import { objectInput, stringField, type Tool } from './tool';

/** Shortens `text` to at most `max` code points, ending with '…' when something was cut. */
export function truncate(text: string, max: number): string {
  const chars = [...text];
  if (chars.length <= max) return text;
  return max <= 0 ? '' : `${chars.slice(0, max - 1).join('')}…`;
}

export const truncateTool: Tool<{ text: string; max: number }, { text: string }> = {
  name: 'truncate',
  description: 'Shortens a text to at most `max` characters, marking the cut with an ellipsis.',
  run: (input) => {
    const fields = objectInput('truncate', input);
    const text = stringField('truncate', 'text', fields.text);
    if (!Number.isInteger(fields.max) || (fields.max as number) < 0) {
      throw new TypeError('truncate: max must be a non-negative integer');
    }
    return { text: truncate(text, fields.max as number) };
  },
  example: { input: { text: 'The quick brown fox', max: 10 }, output: { text: 'The quick…' } },
};
