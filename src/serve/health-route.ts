/**
 * GET /health: readiness for a load balancer. Never admission-gated (it reads the runtime's
 * counters and takes no capacity), answered while draining. 200 only when the server is serving
 * and the runtime is 'ready'; 503 otherwise, with the same body.
 */
import type { FastifyInstance } from 'fastify';
import type { RuntimeReport } from '../runtime.js';

export const HEALTH_PATH = '/health';

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
