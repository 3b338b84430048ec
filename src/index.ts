export {
  type AdmissionBounds,
  type AdmissionReport,
  type AdmitOptions,
  BoundedAdmission,
  type Claim,
  Permit,
  type Refusal,
} from './admission/index.js';
export * from './errors.js';
