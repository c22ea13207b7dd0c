// @ts-check
'use strict';
// The TypeScript checker of tool deployments, in a worker thread of its own, driven by src/sandbox/typecheck.ts.
// Plain CommonJS because it runs both under ts-jest and from dist/ (the build compiles .ts only; the client finds this
// file under src/ either way). A thread, not the caller's event loop, because a first check parses megabytes of
// declarations (lib, @types/node, a package's types: seconds for viem's) and would stall a worker's workflow tasks and
// heartbeats meanwhile.
//
// Kept warm: one LanguageService over one virtual file whose text changes with each request. Its DocumentRegistry
// keeps every lib and node_modules declaration file parsed, and each new program reuses the previous one's structure,
// so a later check re-parses and re-binds the tool alone and checks what it reaches.
const path = require('node:path');
const { createHash } = require('node:crypto');
const ts = require('typescript');
const { workerData } = require('node:worker_threads');
// Never null here: this file only ever runs as the worker thread typecheck.ts starts.
const parentPort = /** @type {import('node:worker_threads').MessagePort} */ (require('node:worker_threads').parentPort);

/**
 * @typedef {{ id: number, name: string, source: string }} Request
 * @typedef {{ file: string, line: number, column: number, lineText?: string }} Location
 * @typedef {{ message: string, code: string, location?: Location }} TypeError_
 * @typedef {{ id: number, ok: true, errors: TypeError_[], truncated: number, files?: string[], digest?: string } | { id: number, ok: false, error: string }} Reply
 */

/** @type {{ nodeModules: string, maxErrors: number }} */
const config = workerData;

// The virtual tool file lives in a directory beside the node_modules Forge's dependencies are in, so that module
// resolution walks up to it exactly as the sandbox's run directory (with its node_modules link) does at run time.
const toolDir = path.join(path.dirname(config.nodeModules), '.forge-typecheck');
const typeRoots = [path.join(config.nodeModules, '@types')];
const hasNodeTypes = ts.sys.fileExists(path.join(typeRoots[0], 'node', 'package.json'));

/**
 * What a tool is checked with: strict, as the code says it, without asking for annotations the contract's shape cannot
 * give (`execute(input)` has no contextual type, so noImplicitAny would reject every untyped parameter). Module
 * semantics follow how the tool runs: esbuild compiles it with Node's interop and packages resolve through their
 * `exports` (bundler resolution); top-level await is allowed (module preserve).
 * @type {import('typescript').CompilerOptions}
 */
const options = {
  strict: true,
  noImplicitAny: false,
  target: ts.ScriptTarget.ES2022,
  lib: ['lib.es2023.d.ts'],
  module: ts.ModuleKind.Preserve,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  moduleDetection: ts.ModuleDetectionKind.Force,
  esModuleInterop: true,
  allowSyntheticDefaultImports: true,
  resolveJsonModule: true,
  skipLibCheck: true,
  noEmit: true,
  typeRoots,
  // Only Node's globals: not every @types package that happens to be installed beside Forge (jest's, in a checkout).
  types: hasNodeTypes ? ['node'] : [],
};

/**
 * The file of the current request: one at a time, so one name is enough, and its version tells the service it changed.
 * The name stays the same from tool to tool so that each program reuses the previous one's structure (a new root name
 * would make it start over); diagnostics name the tool's own file instead.
 */
const current = { fileName: path.join(toolDir, 'tool.ts'), text: '', version: 0 };

/** @type {Map<string, import('typescript').IScriptSnapshot | undefined>} */
const snapshots = new Map();

/** @type {import('typescript').LanguageServiceHost} */
const host = {
  getCompilationSettings: () => options,
  getScriptFileNames: () => [current.fileName],
  getScriptVersion: (fileName) => (fileName === current.fileName ? String(current.version) : '0'),
  getScriptSnapshot: (fileName) => {
    if (fileName === current.fileName) return ts.ScriptSnapshot.fromString(current.text);
    // Every new program asks again for the snapshot of every file it holds (to compare versions): read from disk each
    // time, that was three quarters of a warm check. Declarations do not change under a running worker (a package
    // installed later is a new file, read when first asked for).
    let snapshot = snapshots.get(fileName);
    if (!snapshots.has(fileName)) {
      const text = ts.sys.readFile(fileName);
      snapshot = text === undefined ? undefined : ts.ScriptSnapshot.fromString(text);
      snapshots.set(fileName, snapshot);
    }
    return snapshot;
  },
  getCurrentDirectory: () => toolDir,
  getDefaultLibFileName: (o) => ts.getDefaultLibFilePath(o),
  fileExists: (fileName) => fileName === current.fileName || ts.sys.fileExists(fileName),
  readFile: (fileName) => (fileName === current.fileName ? current.text : ts.sys.readFile(fileName)),
  readDirectory: ts.sys.readDirectory,
  directoryExists: ts.sys.directoryExists,
  getDirectories: ts.sys.getDirectories,
  realpath: ts.sys.realpath,
  useCaseSensitiveFileNames: () => ts.sys.useCaseSensitiveFileNames,
};

const service = ts.createLanguageService(host, ts.createDocumentRegistry());

/**
 * The type errors of one tool module, located in `<name>.ts` (the file name compile errors carry too).
 * @param {Request} request
 * @returns {{ errors: TypeError_[], truncated: number, files?: string[], digest?: string }}
 */
function check(request) {
  current.text = request.source;
  current.version += 1;
  const diagnostics = [
    ...service.getSyntacticDiagnostics(current.fileName),
    ...service.getSemanticDiagnostics(current.fileName),
    ...service.getCompilerOptionsDiagnostics(),
  ].filter((d) => d.category === ts.DiagnosticCategory.Error);
  const errors = diagnostics.slice(0, config.maxErrors).map((d) => describe(d, `${request.name}.ts`));
  if (errors.length > 0) return { errors, truncated: Math.max(0, diagnostics.length - config.maxErrors) };
  // A pass says which declaration files it read and their digest (typecheck-passes.ts): the caller may remember it
  // for as long as their content stays the same.
  const files = (service.getProgram()?.getSourceFiles() ?? []).map((f) => f.fileName).filter((f) => f !== current.fileName);
  return { errors, truncated: 0, files, digest: filesDigest(files) };
}

/** Each declaration file's digest, once: a snapshot never changes under this thread (see getScriptSnapshot). */
/** @type {Map<string, string>} */
const fileDigests = new Map();

/**
 * The digest of the files a check read, in its order, as typecheck-passes.ts computes it from disk: the sha256 of each
 * file's name and the sha256 of its text, the text as the checker read it (ts.sys.readFile: UTF-8, BOM stripped).
 * @param {string[]} files
 */
function filesDigest(files) {
  const all = createHash('sha256');
  for (const file of files) {
    let digest = fileDigests.get(file);
    if (digest === undefined) {
      const snapshot = snapshots.get(file);
      const text = snapshot ? snapshot.getText(0, snapshot.getLength()) : (ts.sys.readFile(file) ?? '');
      digest = createHash('sha256').update(text).digest('hex');
      fileDigests.set(file, digest);
    }
    all.update(file).update('\0').update(digest).update('\0');
  }
  return all.digest('hex');
}

/**
 * One diagnostic as an agent reads it: `file:line:col: TS2322: message`, the chain of reasons on one line.
 * @param {import('typescript').Diagnostic} d
 * @param {string} shownName
 * @returns {TypeError_}
 */
function describe(d, shownName) {
  const code = `TS${d.code}`;
  const text = ts
    .flattenDiagnosticMessageText(d.messageText, '\n')
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean)
    .join(' ');
  if (!d.file || d.start === undefined) return { message: `${code}: ${text}`, code };
  const { line, character } = d.file.getLineAndCharacterOfPosition(d.start);
  const ours = d.file.fileName === current.fileName;
  // A location in a declaration file (rare: skipLibCheck) is named by its path inside node_modules.
  const file = ours ? shownName : path.relative(path.dirname(config.nodeModules), d.file.fileName);
  const lineStart = d.file.getPositionOfLineAndCharacter(line, 0);
  const lineEnd = d.file.getLineEndOfPosition(d.start);
  const lineText = ours ? d.file.text.slice(lineStart, lineEnd) : undefined;
  // 1-based line and column, as esbuild's compile errors are reported and as editors count.
  const location = { file, line: line + 1, column: character + 1, ...(lineText !== undefined ? { lineText } : {}) };
  return { message: `${file}:${location.line}:${location.column}: ${code}: ${text}`, code, location };
}

parentPort.on('message', (/** @type {Request} */ request) => {
  /** @type {Reply} */
  let reply;
  try {
    reply = { id: request.id, ok: true, ...check(request) };
  } catch (err) {
    reply = { id: request.id, ok: false, error: err instanceof Error ? (err.stack ?? err.message) : String(err) };
  }
  parentPort.postMessage(reply);
});
