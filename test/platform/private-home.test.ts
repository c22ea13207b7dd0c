import { spawnSync } from 'node:child_process';
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { tightenTree } from '../../src/platform/private-home';
import { testIf } from '../helpers/skip';

const mode = (file: string) => (lstatSync(file).mode & 0o777).toString(8);
const isRoot = process.getuid?.() === 0;

/** Reads `file` as the user nobody (uid 65534): what another user of the machine gets. */
function readAsNobody(file: string): { status: number | null; stdout: string } {
  const r = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', '--', 'cat', file], { encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout };
}

describe('tightenTree', () => {
  let root: string;
  beforeEach(() => {
    // Under /tmp, whose sticky, world-traversable mode lets another user reach what the tree leaves open.
    root = mkdtempSync(path.join(tmpdir(), 'forge-private-home-'));
    chmodSync(root, 0o755);
    mkdirSync(path.join(root, 'open'), { mode: 0o755 });
    chmodSync(path.join(root, 'open'), 0o755);
    writeFileSync(path.join(root, 'open', 'secret'), 'open secret', { mode: 0o644 });
    chmodSync(path.join(root, 'open', 'secret'), 0o644);
    mkdirSync(path.join(root, 'closed'), { mode: 0o700 });
    chmodSync(path.join(root, 'closed'), 0o700);
    writeFileSync(path.join(root, 'closed', 'secret'), 'closed secret', { mode: 0o666 });
    chmodSync(path.join(root, 'closed', 'secret'), 0o666);
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  test('whole: every path loses its group and other permissions', () => {
    expect(tightenTree(root).sort()).toEqual(['.', 'closed/secret', 'open', 'open/secret']);
    expect([mode(root), mode(path.join(root, 'open', 'secret')), mode(path.join(root, 'closed', 'secret'))]).toEqual(['700', '600', '600']);
  });

  test('reachableOnly: what others could reach is made private; below a private directory nothing is walked', () => {
    expect(tightenTree(root, { reachableOnly: true }).sort()).toEqual(['.', 'open', 'open/secret']);
    expect(mode(path.join(root, 'open', 'secret'))).toBe('600');
    // Left as it was, behind a directory that gives others nothing.
    expect(mode(path.join(root, 'closed', 'secret'))).toBe('666');
  });

  // The harm, tried as another user: what the start leaves with shared modes is out of that user's reach.
  testIf(isRoot, 'needs root to read as another user (setpriv)')('after reachableOnly, another user reads neither file, though one kept mode 0666', () => {
    chmodSync(root, 0o755); // so that the user could reach anything the walk left open
    expect(readAsNobody(path.join(root, 'open', 'secret')).stdout).toBe('open secret'); // the attack works before
    tightenTree(path.join(root, 'open'), { reachableOnly: true });
    tightenTree(path.join(root, 'closed'), { reachableOnly: true });
    for (const file of ['open/secret', 'closed/secret']) {
      const attempt = readAsNobody(path.join(root, file));
      expect({ file, status: attempt.status, stdout: attempt.stdout }).toEqual({ file, status: 1, stdout: '' });
    }
  });
});
