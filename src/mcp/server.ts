import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { ForgeClient } from '../client';
import type { ForgeConfig } from '../config';
import { ForgeInputError, PlatformUnreachableError, RunNotFoundError, ScheduleMissingError } from '../contract/errors';
import type { RunProgress } from '../contract/run-progress';
import { ToolRegistry } from '../registry';
import { agentToolDefinition, callAgentTool } from './agent-tools';
import { OPERATIONS, type Operation, type OperationContext } from './operations';

/** What a server says about itself in `initialize`. */
const INSTRUCTIONS =
  'Forge extends this agent durably. deploy_tool turns a TypeScript module into a tested, versioned tool that then ' +
  'appears in this list as a tool of its own (the list changes: tools/list_changed). Every result is structured: ' +
  'status or verdict, stage, message and, where it applies, location.';

export interface ForgeMcpOptions {
  config: ForgeConfig;
  /** Name and version told to clients. */
  version: string;
  /** Where operational messages go (never stdout: with stdio that is the protocol). Default: stderr. */
  log?: (line: string) => void;
}

/**
 * Forge as MCP servers: one per connection (stdio has one; Streamable HTTP one per session), all sharing one platform
 * connection and one tool registry. The registry's change events are what announce a new, rolled back, deleted or
 * quarantined tool to every connected client.
 */
export class ForgeMcp {
  private readonly servers = new Set<Server>();
  private forgeClient: Promise<ForgeClient> | undefined;
  private readonly operationTools: Tool[];
  private readonly operations = new Map<string, Operation>();
  private readonly stopListening: () => void;

  private constructor(
    private readonly registry: ToolRegistry,
    private readonly options: ForgeMcpOptions,
  ) {
    for (const op of OPERATIONS) this.operations.set(op.name, op);
    this.operationTools = OPERATIONS.map(operationTool);
    this.stopListening = registry.onChange(() => {
      for (const server of this.servers) void server.sendToolListChanged().catch(() => undefined);
    });
  }

  /** Opens the registry on the configured agent-tools directory, as `forge call` does; Temporal is reached on first use. */
  static async open(options: ForgeMcpOptions): Promise<ForgeMcp> {
    const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
    const registry = await ToolRegistry.open({
      dir: options.config.agentToolsDir,
      limits: options.config.sandbox.limits,
      onReloadError: (err) => log(`forge mcp: reloading the tools failed, keeping the loaded ones: ${(err as Error)?.message ?? String(err)}`),
    });
    return new ForgeMcp(registry, { ...options, log });
  }

  /** A new MCP server for one connection; it hears of tool changes until it closes. */
  createServer(): Server {
    const server = new Server({ name: 'forge', version: this.options.version }, { capabilities: { tools: { listChanged: true } }, instructions: INSTRUCTIONS });
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: this.listTools() }));
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      const { name, arguments: args, _meta } = request.params;
      const op = this.operations.get(name);
      if (!op) return callAgentTool(this.registry, name, args, extra.signal);
      const token = _meta?.progressToken;
      const progress =
        token === undefined
          ? undefined
          : progressNotifier((progress, message) =>
              extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress, message } }),
            );
      const result = await this.callOperation(op, args, {
        forge: () => this.forge(),
        registry: this.registry,
        onProgress: progress?.listener,
        signal: extra.signal,
      });
      // The last stages are reported as the run ends: they must reach the client before the result, after which it stops listening.
      await progress?.flush();
      return result;
    });
    this.servers.add(server);
    server.onclose = () => this.servers.delete(server);
    return server;
  }

  /** Closes every server, the registry (ending calls still running) and the platform connection. */
  async close(): Promise<void> {
    this.stopListening();
    await Promise.all([...this.servers].map((s) => s.close().catch(() => undefined)));
    await this.registry.close();
    const forge = await this.forgeClient?.catch(() => undefined);
    await forge?.close().catch(() => undefined);
  }

  private listTools(): Tool[] {
    // Operation names are reserved (FORGE_OPERATION_NAMES): no agent tool can shadow one, and none is listed twice.
    const agentTools = this.registry
      .list()
      .filter((t) => !this.operations.has(t.name))
      .map(agentToolDefinition);
    return [...this.operationTools, ...agentTools];
  }

  /** One connection to the platform for the server's life, made on first use; a failed attempt is retried on the next call. */
  private forge(): Promise<ForgeClient> {
    this.forgeClient ??= ForgeClient.connect().catch((err: unknown) => {
      this.forgeClient = undefined;
      throw err;
    });
    return this.forgeClient;
  }

  private async callOperation(op: Operation, args: unknown, ctx: OperationContext): Promise<CallToolResult> {
    const parsed = op.input.safeParse(args ?? {});
    if (!parsed.success) {
      const issues = parsed.error.issues.map((i) => `${i.path.join('.') || 'arguments'}: ${i.message}`).join('; ');
      return errorResult(`${op.name}: invalid arguments: ${issues}`);
    }
    try {
      const result = await op.run(parsed.data, ctx);
      return { content: [{ type: 'text', text: result.text }], structuredContent: result.structured, ...(result.isError ? { isError: true } : {}) };
    } catch (err) {
      // What the CLI reports as bad input (exit 2) or an unreachable platform (exit 3): the model reads it and acts.
      if (err instanceof ForgeInputError || err instanceof PlatformUnreachableError || err instanceof RunNotFoundError || err instanceof ScheduleMissingError) {
        return errorResult(err.message);
      }
      this.options.log?.(`forge mcp: ${op.name} failed: ${(err as Error)?.stack ?? String(err)}`);
      return errorResult(`${op.name} failed: ${(err as Error)?.message ?? String(err)}`);
    }
  }
}

function errorResult(message: string): CallToolResult {
  return { content: [{ type: 'text', text: message }], isError: true };
}

/** An operation as MCP lists it: zod's own JSON Schema of its input and output (the SDK's types stay at this edge). */
function operationTool(op: Operation): Tool {
  return {
    name: op.name,
    title: op.annotations.title,
    description: op.description,
    inputSchema: jsonSchema(op.input, 'input') as Tool['inputSchema'],
    outputSchema: jsonSchema(op.output, 'output') as Tool['outputSchema'],
    annotations: op.annotations,
  };
}

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  // draft-7: what clients' validators (the SDK's Ajv among them) take without extra set-up; `$schema` left out for the same reason.
  const { $schema: _draft, ...rest } = z.toJSONSchema(schema, { io, target: 'draft-7', unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
}

/**
 * Turns a run's progress (ForgeClient's onProgress) into MCP progress notifications: `progress` only ever increases, as
 * the spec requires, and the message says which stage is where ("test running", "compile done (84 ms)").
 */
function progressNotifier(send: (progress: number, message: string) => Promise<void>) {
  let sent = 0;
  // Sent one after another, in order; a notification that fails (the client went away) is dropped.
  let chain: Promise<void> = Promise.resolve();
  return {
    listener(p: RunProgress): void {
      const current = p.steps.find((s) => s.status === 'running') ?? [...p.steps].reverse().find((s) => s.status !== 'pending');
      const done = p.steps.filter((s) => s.status === 'done' || s.status === 'skipped').length;
      const what = current ? `${current.name} ${current.status}${current.durationMs !== undefined ? ` (${current.durationMs} ms)` : ''}` : p.stage;
      const n = ++sent;
      chain = chain.then(() => send(n, `${p.kind} ${p.subject}: ${what} [${done}/${p.steps.length} steps done]`)).catch(() => undefined);
    },
    flush: (): Promise<void> => chain,
  };
}
