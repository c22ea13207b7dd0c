/**
 * A message on one line of at most `max` characters: line breaks become ` | `, the rest is cut with `…`. A compile
 * error or a test's stderr can run to pages; a log line or a stage line in the Web UI must stay one line.
 */
export function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s*\n\s*/g, ' | ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
