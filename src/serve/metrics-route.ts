/** GET /metrics: the server's own Prometheus registry as text (never admission-gated). */
import type { FastifyInstance } from 'fastify';
import type { ServeMetrics } from './metrics.js';
import { serverFailure } from './status.js';

/** GET (and HEAD): the server's Prometheus metrics, in text format; answered while draining. */
export const METRICS_PATH = '/metrics';

export function metricsRoute(app: FastifyInstance, metrics: ServeMetrics): void {
  app.get(METRICS_PATH, async (_request, reply) => {
    let scraped: { contentType: string; text: string };
    try {
      scraped = await metrics.scrape();
    } catch (err) {
      // Whatever failed (the runtime's report, a figure in it) is the server's, not the scraper's.
      throw serverFailure(err);
    }
    return reply.type(scraped.contentType).send(scraped.text);
  });
}
