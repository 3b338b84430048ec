/**
 * 405 Method Not Allowed (RFC 9110 15.5.6): a path this server serves, asked with a method none
 * of its routes takes, is answered 405 with an Allow header listing the methods it does take,
 * not 404, which tells a client (and an operator reading the metrics) that the URL is wrong.
 *
 * Each path gets one more route, for every other method fastify knows, so that fastify's router
 * decides which path a request names (its percent-decoding included) for the 405 as for the route
 * itself. An unknown path, and a method fastify does not know, stay the not-found handler's 404.
 * HEAD goes with GET: fastify answers it from the GET route (its head, no body), so a path with a
 * GET route allows both.
 *
 * Refused in onRequest, before the body is read: a body sent with such a method is never parsed
 * (no 415 or 413 for it, no 100 Continue), and the connection closes after the answer, as after
 * every answer sent before its request's body was read.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { MethodNotAllowedError } from '../errors.js';

/**
 * Runs `routes` (which registers the server's routes), then gives each path they registered a
 * 405 route for the methods none of them takes.
 */
export function refuseOtherMethods(app: FastifyInstance, routes: () => void): void {
  const allowed = new Map<string, string[]>();
  let recording = true;
  // fastify calls onRoute as each route is registered (the HEAD of a GET route too).
  app.addHook('onRoute', (route) => {
    if (!recording) return;
    const methods = allowed.get(route.url) ?? [];
    for (const method of [route.method].flat()) if (!methods.includes(method)) methods.push(method);
    allowed.set(route.url, methods);
  });
  routes();
  recording = false;
  for (const [url, methods] of allowed) {
    const others = app.supportedMethods.filter((method) => !methods.includes(method));
    if (others.length === 0) continue;
    const allow = methods.join(', ');
    const refuse = async (request: FastifyRequest, reply: FastifyReply): Promise<never> => {
      reply.header('allow', allow);
      throw new MethodNotAllowedError(`${url} does not take ${request.method}; it takes ${allow}`);
    };
    // exposeHeadRoute off: a HEAD among the others is this route's own, not a copy of its GET.
    app.route({ method: others, url, exposeHeadRoute: false, onRequest: refuse, handler: refuse });
  }
}
