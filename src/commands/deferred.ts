/* eslint-disable @typescript-eslint/no-require-imports -- this module is the CLI's one place for loads on first use */
import type * as ConfigModule from '../config';
import type * as DbModule from '../db';
import type * as PolicyModule from '../policy';
import type * as SandboxModule from '../sandbox';
import type * as TypecheckModule from '../sandbox/typecheck';
import type * as SandboxErrorsModule from '../sandbox/errors';
import type * as RegistryModule from '../registry';
import type * as ClientModule from '../client';
import type * as McpModule from '../mcp';
import type * as TemporalConnectionModule from '../platform/temporal-connection';
import type * as TemporalBinaryModule from '../platform/temporal-binary';
import type * as AgentRepoModule from '../platform/agent-repo';
import type * as PrivateHomeModule from '../platform/private-home';
import type * as RunWorkersModule from './run-workers';

/**
 * What the CLI's commands load when they run, not when the program is defined: `forge --help`, `forge call` and
 * `forge lint-sql` start in a fraction of the time the whole platform takes to load (the `cli` bench), and `forge
 * worker` loads the worker side only after the database has started opening (up.ts). Each loader is typed by its
 * module (`typeof import(...)`), so no command casts what it loads; Node keeps a module once loaded, so calling a
 * loader again costs nothing.
 */

/** Configuration and its zod schemas (~90 ms). */
export const configModule = (): typeof ConfigModule => require('../config');

/** The database layer (drizzle, PGlite's client). */
export const dbModule = (): typeof DbModule => require('../db');

/** The SQL policy (libpg-query's parser). */
export const policyModule = (): typeof PolicyModule => require('../policy');

/** The sandbox (contained processes, the compile step). */
export const sandboxModule = (): typeof SandboxModule => require('../sandbox');

/** The type checker's front (it starts TypeScript in a thread). */
export const typecheckModule = (): typeof TypecheckModule => require('../sandbox/typecheck');

/** The sandbox's error classes (a check that timed out or crashed). */
export const sandboxErrorsModule = (): typeof SandboxErrorsModule => require('../sandbox/errors');

/** The registry an agent calls tools through. */
export const registryModule = (): typeof RegistryModule => require('../registry');

/** The client (the Temporal SDK's client side). */
export const clientModule = (): typeof ClientModule => require('../client');

/** The MCP server (the MCP SDK, the client, the registry). */
export const mcpModule = (): typeof McpModule => require('../mcp');

/** How a command reaches Temporal (address, namespace, TLS and API key from the environment). */
export const temporalConnectionModule = (): typeof TemporalConnectionModule => require('../platform/temporal-connection');

/** The Temporal CLI binary: found, or installed by `forge setup`. */
export const temporalBinaryModule = (): typeof TemporalBinaryModule => require('../platform/temporal-binary');

/** The default agent repository's seeding (git). */
export const agentRepoModule = (): typeof AgentRepoModule => require('../platform/agent-repo');

/** FORGE_HOME's permissions, made private before anything writes there. */
export const privateHomeModule = (): typeof PrivateHomeModule => require('../platform/private-home');

/** The worker side of `forge up` and `forge worker` (the Temporal SDK's worker, the activities). */
export const runWorkersModule = (): typeof RunWorkersModule => require('./run-workers');
