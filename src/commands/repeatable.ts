/** Commander's argument parser for a repeatable option (`--change a --change b`): the values in the order given. */
export function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}
