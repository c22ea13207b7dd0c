import { objectInput, stringField, type Tool } from './tool';

export interface WordCount {
  words: number;
  characters: number;
  lines: number;
}

/** Counts words (runs of non-space characters), characters (code points) and lines of a text. */
export function countWords(text: string): WordCount {
  const words = text.split(/\s+/u).filter((w) => w !== '').length;
  const lines = text === '' ? 0 : text.split(/\r\n|\r|\n/u).length;
  return { words, characters: [...text].length, lines };
}

export const wordCount: Tool<{ text: string }, WordCount> = {
  name: 'word_count',
  description: 'Counts the words, characters and lines of a text.',
  run: (input) => countWords(stringField('word_count', 'text', objectInput('word_count', input).text)),
  example: { input: { text: 'one two\nthree' }, output: { words: 3, characters: 13, lines: 2 } },
};
