export type { AdmissionReport } from './admission-report.js';
export type { AdmitOptions } from './admit-options.js';
export { BoundedAdmission } from './bounded-admission.js';
export type { AdmissionBounds } from './bounds.js';
export type { Claim } from './internal.js';
// A type only: a Permit made outside its admission would give back capacity nobody reserved,
// so the package offers no way to make one by mistake.
export type { Permit } from './permit.js';
export type { Refusal } from './refusal.js';
