// Globals the page's drivers install into it, for the type check only (tsconfig.json; nothing
// here runs): the sweep CLI's relay (pyapp/sweep/driver.js, with the binding Python exposes),
// the probe page's worker call (pyapp/host/probe.js) and the tests' model-worker gate
// (tests/browser/model_gate.js). The lab page's own code uses none of them.
interface Window {
  __sweep?: Relay; // pyapp/sweep/driver.js (a script: its typedefs are global)
  __sweepEvent?: (eventText: string, texts: object) => void;
  probe?: Probe; // pyapp/host/probe.js
  __gate?: Promise<void> | null;
  __openGate?: () => void;
  __closeGate?: () => void;
  __closeGateAtTrial?: (trial: number) => void;
}
