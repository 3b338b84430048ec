/**
 * GET /health: readiness for a load balancer. Never admission-gated (it reads the runtime's
 * counters and takes no capacity), answered while draining. 200 only when the server is serving
 * and the runtime is 'ready'; 503 otherwise, with the same body.
 */
import type { FastifyInstance } from 'fastify';
import type { RuntimeReport } from '../runtime.js';

/** GET (and HEAD): 200 while the server serves and the runtime is 'ready', else 503. */
export const HEALTH_PATH = '/health';

/** GET /health's JSON body, the same whatever its status: the runtime's report's load fields. */
export type HealthBody = Pick<
  RuntimeReport,
  'state' | 'depth' | 'capacity' | 'rejected' | 'units' | 'unitCapacity' | 'waiting'
>;

export function healthRoute(app: FastifyInstance, report: () => RuntimeReport): void {
  app.get(HEALTH_PATH, async (_request, reply) => {
    const { state, depth, capacity, rejected, units, unitCapacity, waiting } = report();
    const body: HealthBody = { state, depth, capacity, rejected, units, unitCapacity, waiting };
    return reply.code(state === 'ready' ? 200 : 503).send(body);
  });
}
