export { type AdmissionReport, type AdmitOptions, BoundedAdmission } from './bounded-admission.js';
export type { AdmissionBounds } from './bounds.js';
export type { Claim } from './internal.js';
export { Permit } from './permit.js';
export type { Refusal } from './refusal.js';
