import { Router } from 'express';
import { notFound } from '../http/index.ts';
import type { Network } from './network.ts';
import { readThread } from './thread.ts';

/** Public reading of published threads: no session needed. */
export function readerRoutes(deps: { reader: Network }): Router {
  const router = Router();
  router.get('/api/reader/threads/:actor/:rkey', async (req, res) => {
    const { actor, rkey } = req.params;
    if (!/^[a-zA-Z0-9._:~-]{1,300}$/.test(actor) || !/^[a-z2-7]{13}$/.test(rkey)) throw notFound('Thread');
    const thread = await readThread(deps.reader, actor, rkey);
    if (!thread) throw notFound('Thread');
    res.set('Cache-Control', 'public, max-age=30').json({ thread });
  });
  return router;
}
