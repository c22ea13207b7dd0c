import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { buildProgram } from '../../src/cli';
import { NEVER_REACHABLE_V4 } from '../../src/contract/never-reachable';
import { githubSlug, headingAnchors, isExternal, markdownLinks } from './markdown';

const ROOT = path.join(__dirname, '..', '..');

/** The documentation a clone must stand on: the top-level *.md files and everything under docs/. */
function documentationFiles(): string[] {
  const top = readdirSync(ROOT).filter((f) => f.endsWith('.md') && statSync(path.join(ROOT, f)).isFile());
  const docs: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const rel = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(rel);
      else if (entry.name.endsWith('.md')) docs.push(rel);
    }
  };
  if (existsSync(path.join(ROOT, 'docs'))) walk('docs');
  return [...top, ...docs].sort();
}

/** What is wrong with one relative link of `file`, or undefined when it resolves inside the repository. */
function linkProblem(file: string, target: string): string | undefined {
  const hash = target.indexOf('#');
  const rawPath = hash < 0 ? target : target.slice(0, hash);
  const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
  const linkPath = decodeURIComponent(rawPath.split('?')[0]);
  // A leading slash is the repository's root on GitHub; anything else is relative to the file.
  const resolved =
    linkPath === '' ? path.join(ROOT, file) : linkPath.startsWith('/') ? path.join(ROOT, linkPath) : path.join(ROOT, path.dirname(file), linkPath);
  const inside = path.relative(ROOT, resolved);
  if (inside.startsWith('..') || path.isAbsolute(inside)) return `points outside the repository (${inside}): a clone does not have it`;
  if (!existsSync(resolved)) return `${inside} does not exist`;
  if (anchor === undefined || anchor === '') return undefined;
  if (!resolved.endsWith('.md')) return undefined; // anchors into source files are line numbers, not headings
  const anchors = headingAnchors(readFileSync(resolved, 'utf8'));
  return anchors.has(anchor) ? undefined : `${inside} has no heading with the anchor #${anchor} (it has: ${[...anchors].join(', ')})`;
}

describe('documentation links', () => {
  const files = documentationFiles();

  test('the documentation set holds the README and the docs/ pages', () => {
    expect(files).toEqual(expect.arrayContaining(['README.md', path.join('docs', 'README.md'), path.join('docs', 'cli.md')]));
  });

  test.each(files)('every relative link in %s resolves to a file of the repository (and a heading, for #anchors)', (file) => {
    const text = readFileSync(path.join(ROOT, file), 'utf8');
    const problems = markdownLinks(text)
      .filter((l) => !isExternal(l.target))
      .map((l) => ({ ...l, problem: linkProblem(file, l.target) }))
      .filter((l) => l.problem !== undefined)
      .map((l) => `${file}:${l.line}: (${l.target}) ${l.problem}`);
    expect(problems).toEqual([]);
  });
});

describe('GitHub heading anchors, as the link check computes them', () => {
  test.each([
    ['What a tool can reach', 'what-a-tool-can-reach'],
    ['`forge up`', 'forge-up'],
    ['Connecting to Temporal: any cluster, mTLS or an API key', 'connecting-to-temporal-any-cluster-mtls-or-an-api-key'],
    ['Payments (x402)', 'payments-x402'],
    ['From code: the SDK', 'from-code-the-sdk'],
    ['FORGE_HOME and `agent-tools/`', 'forge_home-and-agent-tools'],
    ['2026-11-28 — the registry call', '2026-11-28--the-registry-call'],
  ])('%s → #%s', (heading, slug) => {
    expect(githubSlug(heading)).toBe(slug);
  });

  test('a repeated heading gets -1, -2, and headings inside code blocks are not headings', () => {
    const anchors = headingAnchors('# Setup\n\n## Setup\n\n```sh\n# not a heading\n```\n\n## Setup\n');
    expect([...anchors]).toEqual(['setup', 'setup-1', 'setup-2']);
  });
});

describe('the CLI reference (docs/cli.md) cannot drift from the CLI', () => {
  const reference = readFileSync(path.join(ROOT, 'docs', 'cli.md'), 'utf8');
  /** The reference's section of each command: from its `### forge NAME` heading to the next heading of that level or above. */
  const sections = new Map<string, string>();
  const parts = reference.split(/^(?=#{1,3} )/m);
  for (const part of parts) {
    const m = /^### forge ([a-z-]+)\s*\n/.exec(part);
    if (m) sections.set(m[1], part);
  }
  const commands = buildProgram().commands.map((c) => c);

  test('every command the CLI has is documented under a `### forge NAME` heading, and no other', () => {
    expect([...sections.keys()].sort()).toEqual(commands.map((c) => c.name()).sort());
  });

  test.each(commands.map((c) => [c.name(), c] as const))('forge %s: every flag its --help lists is in its section', (name, command) => {
    const section = sections.get(name) ?? '';
    const missing = command.options.map((o) => o.long).filter((flag): flag is string => flag !== undefined && !section.includes(flag));
    expect(missing).toEqual([]);
  });
});

describe('the references name what the code enforces', () => {
  test('docs/tool-contract.md lists every IPv4 range no sandbox run reaches', () => {
    const contract = readFileSync(path.join(ROOT, 'docs', 'tool-contract.md'), 'utf8');
    expect(NEVER_REACHABLE_V4.filter((cidr) => !contract.includes(`\`${cidr}\``))).toEqual([]);
  });

  test('docs/schema-policy.md names every rule id the policy can answer with', () => {
    const policyDir = path.join(ROOT, 'src', 'policy');
    const source = readdirSync(policyDir)
      .filter((f) => f.endsWith('.ts'))
      .map((f) => readFileSync(path.join(policyDir, f), 'utf8'))
      .join('\n');
    // Rule ids are kebab-case string literals; these few are not rules (a package name, the reasons a function is refused).
    const NOT_RULES = new Set(['libpg-query', 'deny-list', 'parallel-unsafe', 'parallel-restricted']);
    const ids = new Set([...source.matchAll(/'([a-z][a-z0-9]*(?:-[a-z0-9]+)+)'/g)].map((m) => m[1]).filter((id) => !NOT_RULES.has(id)));
    // One rule id is built from a template: `rename-agent-${what}` for a column or a constraint.
    ids.add('rename-agent-column').add('rename-agent-constraint');
    const reference = readFileSync(path.join(ROOT, 'docs', 'schema-policy.md'), 'utf8');
    // A new kebab-case literal in src/policy that is not a rule id belongs in NOT_RULES above.
    expect([...ids].filter((id) => !reference.includes(`\`${id}\``)).sort()).toEqual([]);
  });
});
