import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      '.forge/**',
      'agent-tools/**',
      'test/fixtures/**',
      'examples/**',
      'coverage/**',
      '.scratch/**',
      '.bench-floor-*/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Workflow code is replayed deterministically in Temporal's sandbox: it may import only the workflow SDK,
    // types and other workflow files.
    files: ['src/workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['node:*', 'fs', 'path', 'child_process', 'crypto', 'os'], message: 'Workflows may not use Node built-ins.' },
            {
              group: [
                'esbuild',
                'pg',
                'drizzle-orm*',
                '@electric-sql/*',
                'simple-git',
                'viem',
                '@x402/*',
                '@temporalio/client',
                '@temporalio/worker',
                '@temporalio/activity',
              ],
              message: 'Workflows import only @temporalio/workflow, types and other workflow files.',
            },
            {
              group: ['../sandbox*', '../db*', '../registry*', '../policy*', '../git*', '../x402*'],
              allowTypeImports: true,
              message: 'Workflows import only types from core modules.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    languageOptions: {
      globals: {
        require: 'readonly',
        module: 'writable',
        process: 'readonly',
        console: 'readonly',
        __dirname: 'readonly',
        Buffer: 'readonly',
        setTimeout: 'readonly',
        setInterval: 'readonly',
        clearTimeout: 'readonly',
        clearInterval: 'readonly',
        URL: 'readonly',
        AbortController: 'readonly',
        Atomics: 'readonly',
        SharedArrayBuffer: 'readonly',
        Int32Array: 'readonly',
      },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
);
