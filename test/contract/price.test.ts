import { formatBaseUnits, moneyToBaseUnits, parsePrice } from '../../src/contract/price';

// `forge sell --price`: base units as before, or money as x402's middleware writes it, converted with the sale asset's
// decimals; nothing ambiguous or finer than one base unit is taken (issue 25, point 10).

test('whole numbers are base units, as before; money is $X or X USD', () => {
  expect(parsePrice('10000')).toEqual({ baseUnits: '10000' });
  expect(parsePrice(' 1 ')).toEqual({ baseUnits: '1' });
  expect(parsePrice('$0.01')).toEqual({ money: '0.01' });
  expect(parsePrice('$ 2')).toEqual({ money: '2' });
  expect(parsePrice('0.01 USD')).toEqual({ money: '0.01' });
  expect(parsePrice('3usd')).toEqual({ money: '3' });
});

test('a bare decimal is ambiguous; zero, negatives, exponents, commas and other words are not prices', () => {
  expect(parsePrice('0.05')).toEqual({ error: expect.stringContaining('ambiguous: write $0.05') });
  expect(parsePrice('.5')).toEqual({ error: expect.stringContaining('write $0.5') });
  for (const zero of ['0', '$0', '$0.000', '0 USD']) expect(parsePrice(zero)).toEqual({ error: expect.stringContaining('is zero') });
  for (const bad of ['', '$', '-1', '$-0.01', '$1e-3', '1e6', '$1,000', '0.01 EUR', 'ten', '$.5', '0x10', '1'.repeat(79)]) {
    expect({ bad, read: parsePrice(bad) }).toEqual({ bad, read: { error: expect.stringContaining('price') } });
  }
  expect(parsePrice('1'.repeat(200))).toEqual({ error: expect.stringContaining('too long') });
});

test('money becomes base units with the decimals; finer than one base unit is refused, never rounded', () => {
  expect(moneyToBaseUnits('0.01', 6)).toEqual({ baseUnits: '10000' });
  expect(moneyToBaseUnits('1', 6)).toEqual({ baseUnits: '1000000' });
  expect(moneyToBaseUnits('12.345678', 6)).toEqual({ baseUnits: '12345678' });
  expect(moneyToBaseUnits('0.000001', 6)).toEqual({ baseUnits: '1' });
  expect(moneyToBaseUnits('0.0100000000', 6)).toEqual({ baseUnits: '10000' }); // trailing zeros are no precision
  expect(moneyToBaseUnits('0.01', 18)).toEqual({ baseUnits: '10000000000000000' });
  expect(moneyToBaseUnits('5', 0)).toEqual({ baseUnits: '5' });
  const fine = moneyToBaseUnits('0.0000001', 6);
  expect(fine).toEqual({ error: expect.stringContaining("finer than the sale asset's 6 decimals allow") });
  expect((fine as { error: string }).error).toContain('smallest step is $0.000001');
  expect(moneyToBaseUnits('0.5', 0)).toEqual({ error: expect.stringContaining('smallest step is $1') });
  expect(moneyToBaseUnits('1'.repeat(80), 6)).toEqual({ error: expect.stringContaining('78 digits') });
});

test('base units read back as whole tokens', () => {
  expect(formatBaseUnits(10000n, 6)).toBe('0.01');
  expect(formatBaseUnits(1000000n, 6)).toBe('1');
  expect(formatBaseUnits(1n, 6)).toBe('0.000001');
  expect(formatBaseUnits(12345678n, 6)).toBe('12.345678');
  expect(formatBaseUnits(7n, 0)).toBe('7');
});
