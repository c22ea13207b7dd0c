/**
 * `agent-forge/registry`: the registry half of the SDK alone (ToolRegistry, its types and errors), for a program that
 * only calls the tools a platform made active. The same names `agent-forge` exports for it, and nothing of the
 * registry's internals (materialisation, tool files, the database source): their declarations reach the database's
 * types, which a program that type-checks its libraries (no skipLibCheck) would then have to compile too.
 */
export {
  ToolRegistry,
  type InvokeFailureStatus,
  type InvokeOptions,
  type InvokeResult,
  type RegistryChange,
  type ToolRegistryOptions,
  type ToolRegistrySource,
} from './tool-registry';
export type { ToolSource, Snapshot, LoadedTool, ReloadHint } from './source';
export type { ToolDescriptor } from './types';
export type { Invoker, InvocationRequest } from './invoker';
export { InvalidToolNameError, RegistryClosedError, RegistryLoadError, RegistryWaitTimeoutError, ToolFileConflictError, ToolFileFormatError } from './errors';
