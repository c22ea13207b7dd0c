import { cp, mkdir, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PRIVATE_DIR_MODE } from '../contract/private-modes';
import { git } from '../git/exec';
import { packageRoot, projectNodeModules } from '../sandbox/paths';
import { tightenTree } from './private-home';

/** The small agent codebase shipped in examples/, the starting point of a newcomer's agent repository. */
export function exampleAgentRepo(): string {
  return path.join(packageRoot(), 'examples', 'agent-repo');
}

/**
 * Makes `target` a git repository holding a copy of the example agent codebase, the first time only, so that a
 * newcomer can promote a change at once (`forge up` calls it for the default FORGE_BUILTIN_REPO). Forge's own
 * node_modules is linked in: the example's dependencies are a subset of Forge's, and .gitignore leaves the link out.
 * Built beside `target` and renamed into place, so a crash half-way leaves no half repository there.
 */
export async function seedAgentRepo(input: { target: string; identity: { name: string; email: string }; example?: string }): Promise<'created' | 'existing'> {
  if (
    await stat(input.target).then(
      () => true,
      () => false,
    )
  )
    return 'existing';
  await mkdir(path.dirname(input.target), { recursive: true, mode: PRIVATE_DIR_MODE });
  const staging = `${input.target}.seeding-${process.pid}`;
  await rm(staging, { recursive: true, force: true });
  try {
    await cp(input.example ?? exampleAgentRepo(), staging, { recursive: true, filter: (src) => path.basename(src) !== 'node_modules' });
    await symlink(projectNodeModules(), path.join(staging, 'node_modules'), 'dir');
    // Written here, not copied: npm never packs a .gitignore, so an installed Forge's example has none.
    await writeFile(path.join(staging, '.gitignore'), 'node_modules\ndist\n');
    const env = {
      GIT_AUTHOR_NAME: input.identity.name,
      GIT_AUTHOR_EMAIL: input.identity.email,
      GIT_COMMITTER_NAME: input.identity.name,
      GIT_COMMITTER_EMAIL: input.identity.email,
    };
    await git(['init', '--quiet', '--initial-branch=main'], { cwd: staging });
    await git(['add', '--all'], { cwd: staging });
    await git(['commit', '--quiet', '-m', 'The agent repository, seeded by Forge from examples/agent-repo'], { cwd: staging, env });
    // Under FORGE_HOME, private as everything there: the copy and git's objects come with the umask's modes.
    tightenTree(staging);
    await rename(staging, input.target);
    return 'created';
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}
