export { writeFileAtomic, writeFileOnce, type WriteOnceResult } from './atomic-file';
export { InvalidToolNameError, RegistryClosedError, RegistryLoadError, RegistryWaitTimeoutError, ToolFileConflictError, ToolFileFormatError } from './errors';
export { childPerCallInvoker, type InvocationRequest, type Invoker } from './invoker';
export { materializeActiveTools, publishToolChanges, writeToolVersion, type PublishChangesResult } from './materialize';
export { ACTIVE_LOG_FILE, readActiveIndexState, type ActiveIndexRead, type ActiveIndexState, type ActiveLogLine } from './active-log';
export { rebuildWhenLost, type RebuildWhenLostOptions } from './rebuild-when-lost';
export {
  ACTIVE_INDEX_FILE,
  assertToolName,
  filesFromRow,
  listToolDirectories,
  readActiveIndex,
  readCompiledJs,
  readManifest,
  removeToolDirectory,
  versionPaths,
  writeActiveIndex,
  writeToolVersionFiles,
  type ToolVersionFiles,
  type VersionPaths,
  type WriteVersionResult,
} from './tool-files';
export {
  ToolRegistry,
  type InvokeFailureStatus,
  type InvokeOptions,
  type InvokeResult,
  type RegistryChange,
  type ToolRegistryOptions,
  type ToolRegistrySource,
} from './tool-registry';
export type { ActiveEntry, ActiveIndex, ToolDescriptor, ToolManifest } from './types';
