// Lets `node --require ./scripts/register-ts.js src/main.ts` run the TypeScript sources directly (as ts-node would),
// so the startup smoke needs no build directory. Transpile only: type errors are the compile stage's job.
const { readFileSync } = require('node:fs');
const ts = require('typescript');

require.extensions['.ts'] = (module, filename) => {
  const { outputText } = ts.transpileModule(readFileSync(filename, 'utf8'), {
    fileName: filename,
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
  });
  module._compile(outputText, filename);
};
