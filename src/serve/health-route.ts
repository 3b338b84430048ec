/**
 * GET /health: readiness for a load balancer. Never admission-gated (it reads the runtime's
 * counters and takes no capacity), answered while draining. 200 only when the server is serving
 * and the runtime is 'ready'; 503 otherwise, with the same body. A report() that throws or
 * answers no report is the server's own failure, 500 OMNI_ERR_INTERNAL, as GET /metrics answers it.
 */
import type { FastifyInstance } from 'fastify';
import { describeValue } from '../errors.js';
import type { RuntimeReport } from '../runtime.js';
import { serverFailure } from './status.js';

/** GET (and HEAD): 200 while the server serves and the runtime is 'ready', else 503. */
export const HEALTH_PATH = '/health';

/** GET /health's JSON body, the same whatever its status: the runtime's report's load fields. */
export type HealthBody = Pick<
  RuntimeReport,
  'state' | 'depth' | 'capacity' | 'rejected' | 'units' | 'unitCapacity' | 'waiting'
>;

export function healthRoute(app: FastifyInstance, report: () => RuntimeReport): void {
  app.get(HEALTH_PATH, async (_request, reply) => {
    let body: HealthBody;
    try {
      body = healthBody(report());
    } catch (err) {
      // Unchecked, a report that is no report was the not-ready 503, its body `{}`.
      throw serverFailure(err);
    }
    return reply.code(body.state === 'ready' ? 200 : 503).send(body);
  });
}

/** The body's fields, each read once and checked: a Served's report() is the caller's value. */
function healthBody(report: unknown): HealthBody {
  if (typeof report !== 'object' || report === null) {
    throw new Error(`report() returned ${describeValue(report)}, not a report`);
  }
  const { state, depth, capacity, rejected, units, unitCapacity, waiting } = report as HealthBody;
  if (typeof state !== 'string') throw broken('state', state, 'a string');
  for (const [name, value] of Object.entries({ depth, rejected, units, waiting })) {
    if (typeof value !== 'number') throw broken(name, value, 'a number');
  }
  for (const [name, value] of Object.entries({ capacity, unitCapacity })) {
    if (typeof value !== 'number' && value !== null) throw broken(name, value, 'a number or null');
  }
  return { state, depth, capacity, rejected, units, unitCapacity, waiting };
}

const broken = (field: string, value: unknown, wanted: string): Error =>
  new Error(`report()'s ${field} is ${describeValue(value)}, not ${wanted}`);
