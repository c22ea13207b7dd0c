import { z } from 'zod';

export default {
  name: 'celsius_to_fahrenheit',
  description: 'Converts Celsius to Fahrenheit.',
  inputSchema: z.object({ celsius: z.number() }),
  timeoutMs: 5_000,
  async execute(input: { celsius: number }) {
    return { fahrenheit: (input.celsius * 9) / 5 + 32 };
  },
};
