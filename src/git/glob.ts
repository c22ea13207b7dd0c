/**
 * The globs of forge.verify.json: a deliberately small syntax, matched against repository-relative paths with `/`
 * separators. Anything outside it is refused when the plan is read, so no rule silently means something else.
 *
 * - `*` any characters within one path segment (dot-files included), `?` one character within a segment;
 * - `**` as a whole segment: any number of segments (`src/**` everything under src/, `**` every path,
 *   `**\/*.ts` every .ts file at any depth);
 * - `{a,b}` one of the alternatives (within a segment, not nested);
 * - every other character stands for itself. `[`, `]`, `(`, `)`, `!`, `\` and empty, `.` or `..` segments are
 *   refused, as is a leading `/`.
 */

const UNSUPPORTED = /[[\]()!\\]/;

/** Why `glob` is not in the supported syntax, or null when it is. */
export function globSyntaxError(glob: string): string | null {
  if (glob === '') return 'a glob may not be empty';
  if (glob.startsWith('/')) return 'a glob is relative to the repository: no leading "/"';
  const bad = UNSUPPORTED.exec(glob);
  if (bad) return `"${bad[0]}" is not supported (only * ? ** and {a,b})`;
  for (const segment of glob.split('/')) {
    if (segment === '' || segment === '.' || segment === '..') return 'empty, "." and ".." segments are not allowed';
    if (segment !== '**' && segment.includes('**')) return '"**" must be a whole path segment';
    const open = segment.indexOf('{');
    const close = segment.indexOf('}');
    if (open !== -1 || close !== -1) {
      const braces = segment.match(/[{}]/g) ?? [];
      if (braces.length !== 2 || open > close) return 'braces must be one {a,b} group per segment, not nested';
      if (!segment.slice(open + 1, close).includes(',')) return 'a {…} group needs at least two alternatives';
    }
  }
  return null;
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

function segmentSource(segment: string): string {
  let out = '';
  for (let i = 0; i < segment.length; i++) {
    const ch = segment[i];
    if (ch === '*') out += '[^/]*';
    else if (ch === '?') out += '[^/]';
    else if (ch === '{') {
      const close = segment.indexOf('}', i);
      out += `(?:${segment
        .slice(i + 1, close)
        .split(',')
        .map(segmentSource)
        .join('|')})`;
      i = close;
    } else out += escape(ch);
  }
  return out;
}

/** Compiles a glob (checked by {@link globSyntaxError}) to an anchored regular expression. @throws Error if invalid. */
export function compileGlob(glob: string): RegExp {
  const error = globSyntaxError(glob);
  if (error) throw new Error(`invalid glob ${JSON.stringify(glob)}: ${error}`);
  const segments = glob.split('/');
  let source = '';
  segments.forEach((segment, i) => {
    const last = i === segments.length - 1;
    if (segment === '**') source += last ? '.+' : '(?:[^/]+/)*';
    else source += segmentSource(segment) + (last ? '' : '/');
  });
  return new RegExp(`^${source}$`, 'u');
}
