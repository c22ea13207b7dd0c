import { objectInput, type Tool } from './tool';

/** Adds finite numbers; the sum of nothing is 0. */
export function sum(values: readonly number[]): number {
  return values.reduce((total, v) => total + v, 0);
}

export const sumTool: Tool<{ values: number[] }, { sum: number }> = {
  name: 'sum',
  description: 'Adds a list of numbers.',
  run: (input) => {
    const values = objectInput('sum', input).values;
    if (!Array.isArray(values) || !values.every((v) => typeof v === 'number' && Number.isFinite(v))) {
      throw new TypeError('sum: values must be an array of finite numbers');
    }
    return { sum: sum(values) };
  },
  example: { input: { values: [1, 2, 3.5] }, output: { sum: 6.5 } },
};
