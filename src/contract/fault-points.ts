/**
 * Fault points of the chaos matrix (test/chaos/, `npm run test:chaos`): a worker armed with FORGE_FAULT_KILL_AT
 * SIGKILLs itself right before or right after one activity of one workflow type, as a crash or the OOM killer would.
 * The value is a comma list of `<workflowType>:<activity>.<before|after>`, e.g.
 * `rollbackToolWorkflow:activateEarlierVersion.after`. It is read once at worker start, never from workflow input.
 * The name may also be a step that an activity runs inside itself rather than as an activity of its own (commitVersion
 * inside commitAndPublish): that activity calls a {@link StepCheckpoint} around the step.
 */
export type FaultMoment = 'before' | 'after';

/**
 * What an activity that runs steps inside itself calls right before each step and right after it succeeded, so that
 * the step's fault points fire there as an activity's do; `S` names the steps it runs.
 */
export type StepCheckpoint<S extends string = string> = (step: S, moment: FaultMoment) => void;

/**
 * Runs `step` between `checkpoint`'s two moments; `after` only once it succeeded, as for an activity (a step that
 * threw has no after). Without a checkpoint, just runs it.
 */
export async function atCheckpoint<S extends string, T>(checkpoint: StepCheckpoint<S> | undefined, step: S, run: () => Promise<T>): Promise<T> {
  if (!checkpoint) return run();
  checkpoint(step, 'before');
  const result = await run();
  checkpoint(step, 'after');
  return result;
}

/**
 * The seller's steps are no workflow's (a sale is an HTTP request the worker's x402 server answers): their points are
 * `sale:<step>.<before|after>`, around the ledger writes of a sale (src/x402/sales.ts).
 */
export const SALE_FAULT_SCOPE = 'sale';
export const SALE_FAULT_STEPS = ['reserveSale', 'recordSale'] as const;
export type SaleFaultStep = (typeof SALE_FAULT_STEPS)[number];
/** What the seller calls before and after each step of a sale (a worker armed at that point kills itself there). */
export type SaleCheckpoint = StepCheckpoint<SaleFaultStep>;

export interface FaultPoint {
  workflowType: string;
  activity: string;
  moment: FaultMoment;
}

const POINT = /^([A-Za-z][A-Za-z0-9]*):([A-Za-z][A-Za-z0-9]*)\.(before|after)$/;

/** Parses FORGE_FAULT_KILL_AT's value; the error names the entry that is not a fault point. */
export function parseFaultPoints(spec: string): FaultPoint[] {
  return spec
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((entry) => {
      const m = POINT.exec(entry);
      if (!m) throw new Error(`"${entry}" is not a fault point: write <workflowType>:<activity>.<before|after>`);
      return { workflowType: m[1], activity: m[2], moment: m[3] as FaultMoment };
    });
}

export function formatFaultPoint(p: FaultPoint): string {
  return `${p.workflowType}:${p.activity}.${p.moment}`;
}
