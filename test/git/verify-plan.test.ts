import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import {
  EmptyChangeError,
  UnmappedPathError,
  UnsafePathError,
  VerifyPlanError,
  builtinToolNames,
  compileGlob,
  globSyntaxError,
  headSignature,
  parseVerifyPlan,
  parseVerifyPlanText,
  planStages,
  planStagesForTree,
  readVerifyPlan,
  type VerifyPlan,
} from '../../src/git';
import { TOOL_NAME_RULE } from '../../src/contract/tool-name';
import { EXAMPLE_REPO, agentRepo, commitByHand, sh } from './fixture';

const examplePlan = (): VerifyPlan => parseVerifyPlanText(readFileSync(path.join(EXAMPLE_REPO, 'forge.verify.json'), 'utf8'));

/** The example plan as plain JSON, to break one field at a time (any: the tests write shapes the type forbids). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const rawPlan = (): Record<string, any> => JSON.parse(readFileSync(path.join(EXAMPLE_REPO, 'forge.verify.json'), 'utf8'));

function issuesOf(value: unknown): { field: string; message: string }[] {
  try {
    parseVerifyPlan(value);
  } catch (err) {
    expect(err).toBeInstanceOf(VerifyPlanError);
    return (err as VerifyPlanError).issues;
  }
  throw new Error('the plan was accepted');
}

describe('the plan file schema', () => {
  it('accepts the example repository plan and lists its built-in tools', () => {
    expect(builtinToolNames(examplePlan())).toEqual(['slugify', 'sum', 'truncate', 'word_count']);
  });

  it('names the field of a command that is a shell string instead of an argv array', () => {
    const plan = rawPlan();
    plan.stages.compile[0].argv = 'tsc --noEmit -p .';
    const issues = issuesOf(plan);
    expect(issues).toEqual([{ field: 'stages.compile[0].argv', message: expect.stringContaining('expected array') }]);
    expect(() => parseVerifyPlan(plan)).toThrow(/forge\.verify\.json is not a valid verification plan: stages\.compile\[0\]\.argv: /);
  });

  it('names an empty argv, a misplaced placeholder and an empty argument', () => {
    const plan = rawPlan();
    plan.stages.compile[0].argv = [];
    plan.stages.targetedTests[0].argv = ['jest', '--files={changedFiles}'];
    plan.stages.startupSmoke[0].argv = ['{changedFiles}', ''];
    expect(issuesOf(plan).map((i) => i.field)).toEqual([
      'stages.compile[0].argv',
      'stages.targetedTests[0].argv[1]',
      'stages.startupSmoke[0].argv[1]',
      'stages.startupSmoke[0].argv[0]',
    ]);
  });

  it('names unknown fields, a bad tool name, an unsafe tool path, a bad glob and a wrong version', () => {
    const plan = rawPlan();
    plan.version = 2;
    plan.stages.compile[0].timeout = 5;
    plan.builtinTools['Word-Count'] = 'src/tools/word-count.ts';
    plan.builtinTools.sum = '../outside.ts';
    plan.stages.startupSmoke[0].paths = ['src/[a-z]*.ts'];
    plan.stages.deploy = [];
    const issues = issuesOf(plan);
    // The one rule of every tool name, in its own words.
    expect(issues.find((i) => i.field === 'builtinTools["Word-Count"]')?.message).toContain(TOOL_NAME_RULE);
    const fields = issues.map((i) => i.field);
    expect(fields).toEqual(
      expect.arrayContaining([
        'version',
        'stages.compile[0].timeout',
        'builtinTools["Word-Count"]',
        'builtinTools.sum',
        'stages.startupSmoke[0].paths[0]',
        'stages.deploy',
      ]),
    );
  });

  it('names a missing stage and an out-of-range limit', () => {
    const plan = rawPlan();
    delete plan.stages.startupSmoke;
    plan.stages.compile[0].memoryMb = 1;
    expect(issuesOf(plan).map((i) => i.field)).toEqual(['stages.compile[0].memoryMb', 'stages.startupSmoke']);
  });

  it('says when the text is not JSON', () => {
    expect(() => parseVerifyPlanText('{ "version": 1,', 'x/forge.verify.json')).toThrow(
      /x\/forge\.verify\.json is not a valid verification plan: not valid JSON/,
    );
  });
});

describe('planning the stages of a change', () => {
  it('gives compile, the related tests with the changed files as separate arguments, and the smoke', () => {
    const stages = planStages(examplePlan(), ['src/tools/sum.ts', 'src/tools/slugify.ts']);
    expect(stages.map((s) => s.name)).toEqual(['compile', 'targetedTests', 'startupSmoke']);
    expect(stages[0].commands.map((c) => c.argv)).toEqual([['node', 'node_modules/typescript/bin/tsc', '--noEmit', '-p', '.']]);
    expect(stages[1].commands).toEqual([
      {
        stage: 'targetedTests',
        rule: 0,
        argv: ['node', 'node_modules/jest/bin/jest.js', '--ci', '--findRelatedTests', '--', 'src/tools/slugify.ts', 'src/tools/sum.ts'],
        matched: ['src/tools/slugify.ts', 'src/tools/sum.ts'],
        timeoutMs: 180000,
        memoryMb: 2048,
      },
    ]);
    expect(stages[2].commands[0].argv).toEqual(['node', '--require', './scripts/register-ts.js', 'src/main.ts', '--startup-smoke']);
  });

  it('leaves a stage without commands (skipped) when no changed path concerns it', () => {
    const stages = planStages(examplePlan(), ['scripts/register-ts.js']);
    expect(stages.map((s) => [s.name, s.commands.length])).toEqual([
      ['compile', 0],
      ['targetedTests', 0],
      ['startupSmoke', 1],
    ]);
  });

  it('runs a command once when two rules of a stage give the same argv', () => {
    const plan = examplePlan();
    plan.stages.compile.push({ ...plan.stages.compile[0], paths: ['src/main.ts'] });
    expect(planStages(plan, ['src/main.ts'])[0].commands).toHaveLength(1);
  });

  it('a changed file name that looks like a glob or an option stays one literal argument', () => {
    const args = planStages(examplePlan(), ['src/tools/a b;rm -rf ~.ts', 'src/tools/$(x).ts'])[1].commands[0].argv;
    expect(args.slice(-2)).toEqual(['src/tools/$(x).ts', 'src/tools/a b;rm -rf ~.ts']);
  });

  it('fails closed, naming the first changed path no rule maps', () => {
    const plan = examplePlan();
    let error: unknown;
    try {
      planStages(plan, ['src/tools/sum.ts', 'README.md', 'docs/notes.txt']);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(UnmappedPathError);
    expect(error).toMatchObject({ path: 'README.md', unmapped: ['README.md', 'docs/notes.txt'] });
    expect((error as Error).message).toContain('"README.md"');
    expect(() => planStages(plan, ['forge.verify.json'])).toThrow(UnmappedPathError);
  });

  it('refuses unsafe changed paths and an empty change', () => {
    expect(() => planStages(examplePlan(), ['src/../../etc/passwd'])).toThrow(UnsafePathError);
    expect(() => planStages(examplePlan(), ['--config=evil.js'])).toThrow(UnsafePathError);
    expect(() => planStages(examplePlan(), [])).toThrow(EmptyChangeError);
  });
});

describe('planning the stages of a whole tree (re-verification of a branch head)', () => {
  const tree = ['README.md', 'forge.verify.json', 'jest.config.js', 'package.json', 'src/main.ts', 'src/tools/sum.ts', 'tsconfig.json'];

  it('runs every rule that maps a tracked file, with all the files it maps, and leaves unmapped files out', () => {
    const stages = planStagesForTree(examplePlan(), tree);
    expect(stages.map((s) => [s.name, s.commands.map((c) => c.argv.join(' '))])).toEqual([
      ['compile', ['node node_modules/typescript/bin/tsc --noEmit -p .']],
      [
        'targetedTests',
        ['node node_modules/jest/bin/jest.js --ci --findRelatedTests -- src/main.ts src/tools/sum.ts', 'node node_modules/jest/bin/jest.js --ci'],
      ],
      ['startupSmoke', ['node --require ./scripts/register-ts.js src/main.ts --startup-smoke']],
    ]);
  });

  it('refuses a tree no rule maps', () => {
    expect(() => planStagesForTree(examplePlan(), ['README.md'])).toThrow(EmptyChangeError);
  });
});

describe('globs', () => {
  it.each([
    ['**', 'a/b/c.ts', true],
    ['src/**', 'src/a/b.ts', true],
    ['src/**', 'src', false],
    ['**/*.ts', 'a.ts', true],
    ['**/*.ts', 'x/y/a.ts', true],
    ['src/**/*.ts', 'src/a.ts', true],
    ['src/**/*.ts', 'srcx/a.ts', false],
    ['scripts/*.js', 'scripts/a/b.js', false],
    ['*.{ts,js}', 'a.js', true],
    ['*.{ts,js}', 'a.tsx', false],
    ['a?c', 'a/c', false],
    ['*', '.gitignore', true],
    ['a.b', 'aXb', false],
  ])('%s matches %s: %s', (glob, file, expected) => {
    expect(compileGlob(glob).test(file)).toBe(expected);
  });

  it.each(['', '/src/**', 'src/[ab].ts', '!src/**', 'src/a**', 'src/../x', 'src//x', 'a{b}', 'a{b,{c,d}}'])('refuses %j', (glob) => {
    expect(globSyntaxError(glob)).not.toBeNull();
  });
});

describe('reading the plan of a commit', () => {
  it('reads the plan as committed, not as the working tree has it', async () => {
    const s = await agentRepo();
    try {
      const first = await readVerifyPlan(s.repo, s.base);
      expect(builtinToolNames(first)).toContain('sum');
      const broken = await commitByHand(s.repo, { 'forge.verify.json': '{"version": 1}' });
      await expect(readVerifyPlan(s.repo, broken)).rejects.toThrow(/forge\.verify\.json is not a valid verification plan: builtinTools: /);
      await expect(readVerifyPlan(s.repo, s.base)).resolves.toEqual(first);
      await commitByHand(s.repo, { 'other.txt': 'x' });
      await expect(readVerifyPlan(s.repo, `${s.base}~0:nothing`)).rejects.toThrow(VerifyPlanError);
    } finally {
      await s.dispose();
    }
  });
});

describe("telling HEAD's commit without git (headSignature: when the plan's built-in names are read again)", () => {
  it('changes with every move of HEAD, and with nothing else', async () => {
    const s = await agentRepo();
    try {
      const seen = new Map<string, string>();
      /** The signature now, checked against the commit git says HEAD is at: one signature never names two commits. */
      const observe = async () => {
        const signature = headSignature(s.repo);
        expect(signature).toBeDefined();
        const commit = await sh(s.repo, 'rev-parse', 'HEAD');
        expect({ signature, commit: seen.get(signature!) ?? commit }).toEqual({ signature, commit });
        seen.set(signature!, commit);
        return signature;
      };
      const first = await observe();
      // The working tree, the index and reads move nothing.
      writeFileSync(path.join(s.repo, 'forge.verify.json'), '{ "version": 1 }');
      await sh(s.repo, 'add', 'forge.verify.json');
      await sh(s.repo, 'log', '--oneline');
      expect(await observe()).toBe(first);
      await sh(s.repo, 'checkout', '-q', '--', '.');
      await sh(s.repo, 'reset', '-q');
      const moves: [string, () => Promise<unknown>][] = [
        ['a commit', () => commitByHand(s.repo, { 'a.txt': 'a' })],
        ['a commit straight after', () => commitByHand(s.repo, { 'a.txt': 'b' })],
        ['a reset', () => sh(s.repo, 'reset', '-q', '--hard', 'HEAD~1')],
        ['a new branch checked out', () => sh(s.repo, 'checkout', '-q', '-b', 'other')],
        ['a commit on it', () => commitByHand(s.repo, { 'b.txt': 'b' })],
        ['the first branch checked out again', () => sh(s.repo, 'checkout', '-q', '-')],
        ['every ref packed', () => sh(s.repo, 'pack-refs', '--all')],
        ['a commit after that', () => commitByHand(s.repo, { 'c.txt': 'c' })],
        ['the branch moved by update-ref, as a promotion moves it', () => sh(s.repo, 'update-ref', 'HEAD', 'other')],
        ['a detached HEAD', () => sh(s.repo, 'checkout', '-q', '--detach', 'HEAD~1')],
      ];
      let before = await observe();
      for (const [what, move] of moves) {
        await move();
        const after = await observe();
        expect({ what, changed: after !== before }).toEqual({ what, changed: true });
        expect(headSignature(s.repo)).toBe(after);
        before = after;
      }
      // Where HEAD cannot be told this way, git is asked: a linked worktree's .git is a file.
      await sh(s.repo, 'worktree', 'add', '-q', path.join(s.dir, 'linked'), 'other');
      expect(headSignature(path.join(s.dir, 'linked'))).toBeUndefined();
      expect(headSignature(path.join(s.dir, 'no-repository'))).toBeUndefined();
    } finally {
      await s.dispose();
    }
  });
});
