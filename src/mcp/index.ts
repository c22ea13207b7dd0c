export { ForgeMcp, type ForgeMcpOptions } from './server';
export { serveHttp, isLoopback, MCP_HTTP_PATH, type HttpMcpServer, type HttpServeOptions } from './http';
export { serveStdio } from './stdio';
export { OPERATIONS, type Operation, type OperationResult } from './operations';
