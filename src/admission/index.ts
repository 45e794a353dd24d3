/**
 * The admission capability's face: the one door the request's path uses (see face.ts).
 */
export type { AdmissionControl, Admitted, QueueDepth, Queued } from './face.js'
export { PassThrough } from './pass-through.js'
export { admissionStage, createAdmission } from './stage.js'
