// The workflow bundle's entry (the worker's workflowsPath): every workflow, by name.
export { deployToolWorkflow } from './deploy-tool';
export { rollbackToolWorkflow } from './rollback-tool';
export { deleteToolWorkflow } from './delete-tool';
export { listToolsWorkflow } from './list-tools';
export { migrateSchemaWorkflow } from './migrate-schema';
export { listMigrationsWorkflow } from './list-migrations';
export { progressQuery } from './progress';
export { promoteBuiltinWorkflow } from './promote-builtin';
export { reverifyToolsWorkflow } from './reverify-tools';
export { payWorkflow } from './pay';
export { readPnlWorkflow } from './read-pnl';
export { sellToolWorkflow } from './sell-tool';
