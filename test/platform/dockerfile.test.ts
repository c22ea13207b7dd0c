import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { testIf } from '../helpers/skip';

/**
 * No Docker engine runs here, so the image is checked by doing what its Dockerfile does, step for step: the build
 * stage's COPY set is copied into an empty directory and its `npm run build` must succeed there (a file the build
 * needs but the Dockerfile does not copy fails it, as scripts/ once did), and the install steps must fall back from
 * `npm ci` as .ci/run does (this lock file is written where the registry serves only this platform's binaries).
 * In CI the runtime stage's install command itself runs against this lock file.
 */
const run = promisify(execFile);
const root = path.resolve(__dirname, '../..');
const dockerfile = readFileSync(path.join(root, 'Dockerfile'), 'utf8');
const stages = dockerfile.split(/^FROM /m).slice(1);

/** The instructions of a stage, continuation lines joined. */
const instructions = (stage: string) =>
  stage
    .replace(/\\\n/g, ' ')
    .split('\n')
    .filter((l) => /^(COPY|RUN) /.test(l));

test('every npm install step falls back from npm ci to npm install of the locked versions', () => {
  const installs = stages.flatMap(instructions).filter((l) => l.includes('npm ci'));
  expect(installs).toHaveLength(2);
  for (const line of installs) expect(line).toMatch(/npm ci [^|]*\|\| npm install [^&]*--no-save/);
});

test("the runtime image has the sandbox's containment programs (without them Forge refuses to run tools)", () => {
  const apt = instructions(stages[1]).find((l) => l.includes('apt-get install'));
  for (const pkg of ['bubblewrap', 'slirp4netns', 'nftables', 'iproute2']) expect(apt).toMatch(new RegExp(`\\b${pkg}\\b`));
});

test('the build stage builds from exactly what it copies', async () => {
  const build = instructions(stages[0]);
  const dir = mkdtempSync(path.join(existsSync('/dev/shm') ? '/dev/shm' : root, 'forge-image-build-'));
  try {
    for (const line of build) {
      if (!line.startsWith('COPY ')) continue;
      const parts = line.slice(5).trim().split(/\s+/);
      for (const source of parts.slice(0, -1)) cpSync(path.join(root, source), path.join(dir, source), { recursive: true });
    }
    // The install step, not repeated here: the repository's own node_modules stand in for it.
    symlinkSync(path.join(root, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
    const buildLine = build.find((l) => l.startsWith('RUN npm run build'));
    expect(buildLine).toBeDefined();
    await run('npm', ['run', 'build', '--silent'], { cwd: dir, maxBuffer: 16 * 1024 * 1024 });
    expect(existsSync(path.join(dir, 'dist', 'src', 'cli.js'))).toBe(true);
    expect(existsSync(path.join(dir, 'dist', 'src', 'workflow-bundle.js'))).toBe(true);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 180_000);

// Installs every production dependency from the registry (a minute or more): in CI only, where the machine is clean.
testIf(process.env.CI === 'true', 'CI only (CI=true): installs every production dependency from the registry')(
  "the runtime stage's install command succeeds on this lock file",
  async () => {
    const install = instructions(stages[1]).find((l) => l.includes('npm ci'))!;
    const dir = mkdtempSync(path.join(existsSync('/dev/shm') ? '/dev/shm' : root, 'forge-image-install-'));
    try {
      for (const file of ['package.json', 'package-lock.json']) cpSync(path.join(root, file), path.join(dir, file));
      await run('sh', ['-c', install.replace(/^RUN /, '')], { cwd: dir, maxBuffer: 64 * 1024 * 1024 });
      expect(existsSync(path.join(dir, 'node_modules', '@temporalio', 'worker'))).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
  600_000,
);
