// @ts-check
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', 'oclif.manifest.json'] },
  js.configs.recommended,
  {
    files: ['**/*.ts'],
    extends: [...tseslint.configs.strictTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // Unawaited promises lose errors and break ordering guarantees (money records!).
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
      '@typescript-eslint/no-extraneous-class': 'off',
      'no-restricted-syntax': [
        'error',
        {
          selector: "CallExpression[callee.name='parseFloat']",
          message: 'Money and amounts are integers (bigint); never parse floats.',
        },
      ],
    },
  },
  {
    // Tests remove fields from fixtures by name to prove each one is required.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-dynamic-delete': 'off' },
  },
  {
    // The invariant checker is an independent oracle: it shares no code with lexec. Its files
    // (check-invariants.ts and checker/) may import Node built-ins, better-sqlite3 and each other
    // — nothing else, not src/, not test/support/, not even a type (check-invariants.test.ts reads
    // every file's imports too). The harnesses beside it (crash-matrix.ts) drive lexec and are not
    // part of the oracle.
    files: ['test/proof/check-invariants.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^(?!node:|better-sqlite3$|\\./checker/[a-z-]+\\.ts$)', message: 'The invariant checker imports only node:* built-ins, better-sqlite3 and its own files (./checker/*.ts), nothing from lexec.' }] },
      ],
    },
  },
  {
    files: ['test/proof/checker/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^(?!node:|better-sqlite3$|\\./[a-z-]+\\.ts$)', message: 'The invariant checker imports only node:* built-ins, better-sqlite3 and its own files (./*.ts beside it), nothing from lexec.' }] },
      ],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    ignores: ['src/console/assets/**'],
    languageOptions: {
      globals: globals.node,
    },
  },
  {
    // The operator console's browser script: an ES module run by the browser, never by Node.js.
    files: ['src/console/assets/**/*.js'],
    languageOptions: {
      sourceType: 'module',
      globals: globals.browser,
    },
  },
);
