/** One benchmark: prints its table to stderr/stdout as it goes and returns its figures by the names the issues give. */
export interface Bench {
  name: string;
  description: string;
  run(): Promise<Record<string, number>>;
}
