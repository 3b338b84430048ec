/**
 * UnreadNotFound follows a 404 whose upload is still arriving until its response closes: one
 * whose client left mid-upload is forgotten then, neither held (a connection coming and going
 * per such upload would grow it until a drain) nor answered by the drain on a closed response.
 */
import { EventEmitter } from 'node:events';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { expect, it } from 'vitest';
import { UnreadNotFound } from '../src/serve/unread-not-found.js';

function upload(): { request: FastifyRequest; reply: FastifyReply; raw: EventEmitter } {
  const raw = new EventEmitter();
  const request = { raw: { complete: false } } as unknown as FastifyRequest;
  const reply = { raw, sent: false } as unknown as FastifyReply;
  return { request, reply, raw };
}

it('a 404 upload whose response closed (its client left) is not answered by the drain', () => {
  const unread = new UnreadNotFound();
  const gone = upload();
  const stalled = upload();
  unread.add(gone.request, gone.reply);
  unread.add(stalled.request, stalled.reply);
  gone.raw.emit('close');
  const answered: FastifyReply[] = [];
  unread.answerAll((_request, reply) => answered.push(reply));
  expect(answered).toEqual([stalled.reply]);
});
