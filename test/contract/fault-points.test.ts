import { armFaultPoints, saleFaults } from '../../src/activities/fault-points';
import { parseFaultPoints, type FaultPoint } from '../../src/contract/fault-points';

// The sale path's fault points (`sale:<step>.<moment>`): armed in the seller, not on activities; a typo is an error at
// start-up, never a chaos cell that silently does not fire.

test('a sale point fires only at its step and moment', () => {
  const killed: FaultPoint[] = [];
  const fire = saleFaults(parseFaultPoints('sale:recordSale.before'), (p) => killed.push(p));
  expect(fire).toBeDefined();
  fire!('reserveSale', 'before');
  fire!('reserveSale', 'after');
  fire!('recordSale', 'after');
  expect(killed).toEqual([]);
  fire!('recordSale', 'before');
  expect(killed).toEqual([{ workflowType: 'sale', activity: 'recordSale', moment: 'before' }]);
});

test('no sale point armed: no hook at all; a step a sale does not have is refused, naming the known ones', () => {
  expect(saleFaults(parseFaultPoints('payWorkflow:sendPayment.after'))).toBeUndefined();
  expect(() => saleFaults(parseFaultPoints('sale:settleSale.after'))).toThrow(/no step settleSale; known: reserveSale, recordSale/);
});

test('activities are armed as before, and the sale points are left to the seller', () => {
  const points = parseFaultPoints('sale:reserveSale.after, deployToolWorkflow:commitVersion.after');
  const group = { commitVersion: async () => 'done' };
  // A sale step is no activity: arming must not refuse it as an unknown one.
  expect(() => armFaultPoints([group], points, () => undefined)).not.toThrow();
  expect(() => armFaultPoints([{ other: async () => 1 }], parseFaultPoints('deployToolWorkflow:commitVersion.after'), () => undefined)).toThrow(
    /no activity is called commitVersion/,
  );
});
