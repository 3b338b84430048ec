/** GET /metrics: the server's own Prometheus registry as text (never admission-gated). */
import type { FastifyInstance } from 'fastify';
import type { ServeMetrics } from './metrics.js';

export const METRICS_PATH = '/metrics';

export function metricsRoute(app: FastifyInstance, metrics: ServeMetrics): void {
  app.get(METRICS_PATH, async (_request, reply) => {
    const { contentType, text } = await metrics.scrape();
    return reply.type(contentType).send(text);
  });
}
