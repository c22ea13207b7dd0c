/**
 * file:line:col out of what a compiler or a test runner printed, so a failed stage tells the agent where to look:
 * tsc's two formats (`src/x.ts(3,7): error TS2322: ...` and, pretty, `src/x.ts:3:7 - error TS2322: ...`) and jest's
 * failure blocks (`● suite › test`, its first message line, and the first stack frame inside the worktree); and, outside
 * jest, an uncaught error's first frame inside the worktree (a startup smoke that crashed).
 */
import { isAbsolute, relative, resolve, sep } from 'node:path';
import type { StageLocation } from '../contract/promotion-runs';

/** The most locations one stage reports: the first ones are what to fix first. */
export const MAX_STAGE_LOCATIONS = 20;
const MAX_MESSAGE_CHARS = 300;

// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;?]*[A-Za-z]/g;
const TSC_PLAIN = /^(.+?)\((\d+),(\d+)\): ((?:error|warning) TS\d+: .*)$/;
const TSC_PRETTY = /^(.+?):(\d+):(\d+) - ((?:error|warning) TS\d+: .*)$/;
const JEST_BLOCK = /^\s*● (.+)$/;
/** `TypeError: ...`, `Error [ERR_X]: ...` at the start of a line. */
const UNCAUGHT_ERROR = /^(?:[A-Z]\w*)?Error(?: \[\w+\])?: ./;
/** `at fn (file:1:2)`, `at file:1:2`, `at async fn (file:1:2)`. */
const STACK_FRAME = /^\s*at (?:.*? \()?(.+?):(\d+):(\d+)\)?\s*$/;

/**
 * The locations in `output` that name a file inside `worktree` (given relative to it or absolute), outside
 * node_modules, as paths relative to the worktree; in order of appearance, without repeats, at most
 * {@link MAX_STAGE_LOCATIONS}. Lines are compared without ANSI colour codes.
 */
export function parseLocations(output: string, worktree: string): StageLocation[] {
  const found: StageLocation[] = [];
  const seen = new Set<string>();
  const add = (rawFile: string, line: string, column: string, message: string): boolean => {
    const file = insideWorktree(rawFile, worktree);
    if (file === undefined) return false;
    const key = `${file}:${line}:${column}`;
    if (seen.has(key)) return true;
    seen.add(key);
    found.push({ file, line: Number(line), column: Number(column), message: clip(message) });
    return true;
  };
  // The jest block being read: its title, its first message line, and whether it already gave a location.
  let block: { title: string; message?: string; located: boolean; jest: boolean } | undefined;
  for (const raw of output.split('\n')) {
    if (found.length >= MAX_STAGE_LOCATIONS) break;
    const line = raw.replace(ANSI, '').replace(/\r$/, '');
    const tsc = TSC_PLAIN.exec(line) ?? TSC_PRETTY.exec(line.trimStart());
    if (tsc) {
      add(tsc[1], tsc[2], tsc[3], tsc[4]);
      continue;
    }
    const title = JEST_BLOCK.exec(line);
    if (title) {
      block = { title: title[1].trim(), located: false, jest: true };
      continue;
    }
    // Outside jest's blocks (a crash of the startup smoke): an error line, then its first frame in the worktree.
    if (!block?.jest && UNCAUGHT_ERROR.test(line)) {
      block = { title: line.trim(), message: '', located: false, jest: false };
      continue;
    }
    if (!block) continue;
    if (block.message === undefined && line.trim() !== '') {
      block.message = line.trim();
      continue;
    }
    const frame = block.located ? null : STACK_FRAME.exec(line);
    if (frame && add(frame[1], frame[2], frame[3], `${block.title}: ${block.message ?? ''}`.replace(/: $/, ''))) block.located = true;
  }
  return found;
}

/** `file` relative to the worktree when it is inside it and not under node_modules; otherwise undefined. */
function insideWorktree(file: string, worktree: string): string | undefined {
  const path = file.startsWith('file://') ? decodeURIComponent(file.slice('file://'.length)) : file;
  if (path.includes('\0') || /^[a-z]+:/i.test(path)) return undefined; // node:internal/..., other schemes
  const rel = relative(worktree, resolve(worktree, path));
  if (rel === '' || rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel)) return undefined;
  if (rel.split(sep).includes('node_modules')) return undefined;
  return rel.split(sep).join('/');
}

function clip(message: string): string {
  return message.length <= MAX_MESSAGE_CHARS ? message : `${message.slice(0, MAX_MESSAGE_CHARS - 1)}…`;
}
