import { sum, sumTool } from './sum';

describe('sum', () => {
  it('adds numbers', () => {
    expect(sum([1, 2, 3])).toBe(6);
  });

  it('gives 0 for no numbers', () => {
    expect(sum([])).toBe(0);
  });

  it('refuses values that are not finite numbers', () => {
    expect(() => sumTool.run({ values: [1, 'two'] })).toThrow('sum: values must be an array of finite numbers');
    expect(() => sumTool.run({ values: [Infinity] })).toThrow(TypeError);
  });
});
