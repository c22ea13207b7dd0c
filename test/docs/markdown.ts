/*
 * Reading Markdown the way GitHub renders it, as far as the docs tests need: which links a file holds (outside code),
 * which anchors its headings get, and its fenced code blocks.
 */

/** A link written in a Markdown file: its target as written and the 1-based line it is on. */
export interface MarkdownLink {
  target: string;
  line: number;
}

/** A fenced code block: its info string (`ts`, `sh`, ...) and its text. */
export interface CodeBlock {
  lang: string;
  code: string;
}

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)/;

/** The lines of a file that are prose (not inside a fenced code block), with their 1-based numbers. */
function proseLines(text: string): { line: string; number: number }[] {
  const out: { line: string; number: number }[] = [];
  let fence: string | undefined;
  text.split('\n').forEach((line, i) => {
    const m = FENCE.exec(line);
    if (fence === undefined && m) fence = m[1];
    else if (fence !== undefined && m && m[1][0] === fence[0] && m[1].length >= fence.length && m[2] === '') fence = undefined;
    else if (fence === undefined) out.push({ line, number: i + 1 });
  });
  return out;
}

/** The fenced code blocks of a file, in order. */
export function codeBlocks(text: string): CodeBlock[] {
  const blocks: CodeBlock[] = [];
  let open: { fence: string; lang: string; lines: string[] } | undefined;
  for (const line of text.split('\n')) {
    const m = FENCE.exec(line);
    if (!open && m) open = { fence: m[1], lang: m[2], lines: [] };
    else if (open && m && m[1][0] === open.fence[0] && m[1].length >= open.fence.length && m[2] === '') {
      blocks.push({ lang: open.lang, code: open.lines.join('\n') + '\n' });
      open = undefined;
    } else if (open) open.lines.push(line);
  }
  return blocks;
}

/** Inline code spans removed (their text can look like a link without being one). */
function withoutCodeSpans(line: string): string {
  return line.replace(/(`+)[\s\S]*?\1/g, '');
}

/** Every link target in prose: inline links and images `[text](target "title")`, and reference definitions `[x]: target`. */
export function markdownLinks(text: string): MarkdownLink[] {
  const links: MarkdownLink[] = [];
  for (const { line, number } of proseLines(text)) {
    const prose = withoutCodeSpans(line);
    const definition = /^ {0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?/.exec(prose);
    if (definition) links.push({ target: definition[1], line: number });
    // `](` then a target up to whitespace or `)`; `<...>` targets may hold spaces.
    for (const m of prose.matchAll(/\]\(\s*(?:<([^>]*)>|([^\s)]*))/g)) links.push({ target: m[1] ?? m[2], line: number });
  }
  return links;
}

/** True for a target that names a scheme (`https:`, `mailto:`): not a file of the repository. */
export function isExternal(target: string): boolean {
  return /^[a-z][a-z0-9+.-]*:/i.test(target);
}

/**
 * The anchor GitHub gives a heading: its rendered text (markup removed) in lower case, every character that is not a
 * letter, mark, number, connector (`_`), space or hyphen dropped, each space turned into a hyphen.
 */
export function githubSlug(heading: string): string {
  const rendered = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // links and images: their text
    .replace(/<[^>]+>/g, '') // inline HTML
    .replace(/`/g, '') // code spans keep their text
    .replace(/\*/g, ''); // emphasis
  return rendered
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a file's ATX headings (`#` to `######`), duplicates numbered `-1`, `-2`, ... as GitHub does. */
export function headingAnchors(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { line } of proseLines(text)) {
    const m = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const slug = githubSlug(m[1]);
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}
