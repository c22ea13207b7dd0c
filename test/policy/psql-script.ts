import { scanSync } from 'libpg-query';

/**
 * Turns a psql script from PostgreSQL's regression suite into plain SQL, following the rules of
 * shared/corpora/pg-regress/README.md: backslash meta-command lines go (`\gexec` ends the statement before it),
 * `\;` separates statements, and the data lines of a `COPY ... FROM stdin` go up to and including `\.`. Removed
 * lines are kept as empty lines so that line numbers in verdicts still point into the original file.
 * The parser must have been loaded (it uses the lexer to recognise COPY ... FROM stdin).
 */
export function stripPsql(script: string): string {
  const lines = script.split('\n');
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.startsWith('\\')) {
      out.push(line.startsWith('\\gexec') ? ';' : '');
      continue;
    }
    out.push(line.split('\\;').join(';'));
    if (isCopyFromStdin(line)) {
      const end = dataBlockEnd(lines, i + 1);
      if (end !== undefined) {
        for (let j = i + 1; j <= end; j++) out.push('');
        i = end;
      }
    }
  }
  return out.join('\n');
}

/** Index of the `\.` line that closes a data block starting at `from`, or undefined when there is no data block. */
function dataBlockEnd(lines: string[], from: number): number | undefined {
  for (let j = from; j < lines.length; j++) {
    if (lines[j] === '\\.') return j;
    if (endsStatement(lines[j])) return undefined;
  }
  return undefined;
}

/** The README's test: the line ends in `;` or in `; -- comment`. */
function endsStatement(line: string): boolean {
  if (line.trimEnd().endsWith(';')) return true;
  const comment = line.indexOf('--');
  return comment >= 0 && line.slice(0, comment).trimEnd().endsWith(';');
}

/** A line holding `COPY ... FROM stdin ...;`, recognised on the lexer's tokens rather than on the raw text. */
function isCopyFromStdin(line: string): boolean {
  let tokens;
  try {
    tokens = scanSync(line).tokens ?? [];
  } catch {
    return false;
  }
  const words = tokens.filter((t) => t.tokenName !== 'C_COMMENT' && t.tokenName !== 'SQL_COMMENT').map((t) => t.text.toLowerCase());
  if (words[0] !== 'copy' || words[words.length - 1] !== ';') return false;
  return words.some((w, k) => w === 'from' && words[k + 1] === 'stdin');
}
