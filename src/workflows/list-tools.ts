import { toolSteps } from './activity-options';
import type { ListToolsResult } from '../contract/tool-runs';

/**
 * Reads the active tools. A workflow rather than a database read in the client, because with embedded PGlite only
 * the worker may open the database: clients reach state through Temporal.
 */
export async function listToolsWorkflow(): Promise<ListToolsResult> {
  return toolSteps.listTools.executeWithOptions({ summary: 'read the active tools' }, []);
}
