/** Thrown for a command whose helper went away before it answered: whether the command ran is unknown. */
export class SpawnerGoneError extends Error {
  override readonly name = 'SpawnerGoneError';
}
