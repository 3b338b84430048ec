/**
 * Every node:http server a fastify app listens with. For host 'localhost' fastify listens on
 * each address the name resolves to (127.0.0.1 and ::1 where /etc/hosts names both), the
 * others with servers of its own that `app.server` does not reach: the drain must stop each,
 * and each must answer malformed HTTP and Expect headers as the main one does.
 */
import type { Server } from 'node:http';
import type { FastifyInstance } from 'fastify';

/**
 * fastify keeps those other servers under a symbol it does not export (fastify 5:
 * 'fastify.serverBindings'); without it, the app has only its main server.
 */
export function listeningServers(app: FastifyInstance): Server[] {
  const key = Object.getOwnPropertySymbols(app).find((s) => s.description === 'fastify.serverBindings');
  const others = key === undefined ? undefined : (app as unknown as Record<symbol, unknown>)[key];
  return [app.server, ...(Array.isArray(others) ? (others as Server[]) : [])];
}
