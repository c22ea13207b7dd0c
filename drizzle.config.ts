import { defineConfig } from 'drizzle-kit';

// `npx drizzle-kit generate` writes SQL migrations for src/db/schema.ts into drizzle/ (committed);
// src/db/migrate.ts applies them at startup. No database is needed to generate.
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/db/schema.ts',
  out: './drizzle',
});
