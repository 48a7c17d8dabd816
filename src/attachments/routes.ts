import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { type Request, type Response, Router } from 'express';
import { z } from 'zod';
import { currentPlayer, playerKey } from '../auth/index.ts';
import { type Sql, transaction } from '../db/index.ts';
import { AppError, isUuid, keyedRateLimit, notFound, parseBody, parseQuery, respond } from '../http/index.ts';
import { BlockedUrlError, type Outbound } from '../outbound/index.ts';
import { plainName, wellFormed } from '../parts/index.ts';
import { getVillageSettings, type VillageSettings } from '../village/index.ts';
import { AttachmentView } from '../wire/index.ts';
import { adoptBlob, formatBytes, readBlob, tooLarge, writeBlob } from './blobs.ts';
import { ImageHead } from './dimensions.ts';
import { attachmentTokens, PdfPageCounter } from './estimate.ts';
import { fetchPage } from './page.ts';
import { SNIFF_BYTES, sniffMediaType } from './sniff.ts';
import {
  type AttachmentRow,
  countPending,
  deletePending,
  getAttachment,
  insertAttachment,
  QuotaFullError,
  recentPage,
  storedBytes,
  toPart,
} from './store.ts';

export interface AttachmentDeps {
  sql: Sql;
  /** Pages are fetched through a guarded client of their own (their text is shown to the Player). */
  pageOutbound: Outbound;
  log: (message: string, error?: unknown) => void;
  /** How long one upload may take, start to end (a slow client cannot hold a slot for ever). */
  uploadTimeoutMs: number;
  /**
   * Whether the Conversation is the Player's: conversations/ owns them and imports this room, so app.ts hands its
   * query in (conversations' `isConversationOf`).
   */
  isConversationOf: (sql: Sql, playerId: string, conversationId: string) => Promise<boolean>;
}

const MB = 1024 * 1024;
/** Uploads not yet sent, per Conversation: enough for a few Messages' worth of chips. */
export const MAX_PENDING = 50;
/** Uploads one Player may stream at once (per instance). */
const UPLOADS_AT_ONCE = 3;

const UploadQuery = z.object({
  name: z
    .string()
    .max(255)
    // A name is shown and offered as a download name: no path, no control or bidi characters.
    .transform((n) => plainName(wellFormed(n)).replace(/[/\\]/g, '_'))
    .pipe(z.string().min(1, 'a file needs a name')),
});
const UrlBody = z.object({ url: z.string().trim().min(1).max(2048) }).strict();

/** Uploads, attached pages and downloads. Mounted behind requireSession. */
export function attachmentRoutes(deps: AttachmentDeps): Router {
  const { sql } = deps;
  const router = Router();
  const uploading = new Map<string, number>();
  // Each upload and page fetch is work and bytes: rationed per Player, not per address. Downloads too, more
  // loosely (a transcript of pictures loads each of them).
  const rationed = perPlayer(
    sql,
    'attachments',
    60,
    'Too many attachments at once: at most 60 a minute. Try again shortly.',
  );
  const downloads = perPlayer(
    sql,
    'downloads',
    600,
    'Too many downloads at once: at most 600 a minute. Try again shortly.',
  );

  router.post('/conversations/:id/attachments', rationed, (req, res) => upload(deps, uploading, req, res));
  router.post('/conversations/:id/attachments/url', rationed, (req, res) => attachPage(deps, req, res));

  router.get('/attachments/:id', downloads, async (req, res) => {
    const player = currentPlayer(res);
    const row = isUuid(req.params.id) ? await getAttachment(sql, player.id, req.params.id) : undefined;
    if (!row) throw notFound('Attachment');
    serve(res, row);
    // A HEAD answers with the headers alone: nothing is read from the database for it.
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    await pipeline(Readable.from(readBlob(sql, row.blobId)), res).catch((e) => {
      // A reader that goes away mid-download is not an error worth more than a line.
      if ((e as { code?: string }).code !== 'ERR_STREAM_PREMATURE_CLOSE') deps.log('download failed', e);
    });
  });

  router.delete('/attachments/:id', async (req, res) => {
    const player = currentPlayer(res);
    if (!isUuid(req.params.id)) throw notFound('Attachment');
    if (await deletePending(sql, player.id, req.params.id)) {
      res.status(204).end();
      return;
    }
    if (await getAttachment(sql, player.id, req.params.id))
      throw new AppError(
        'ATTACHMENT_SENT',
        'This attachment was sent with a Message; delete the Conversation to remove it.',
      );
    throw notFound('Attachment');
  });

  return router;
}

/** POST …/attachments: a file's bytes, streamed to a blob; its kind judged by its contents. */
async function upload(deps: AttachmentDeps, uploading: Map<string, number>, req: Request, res: Response) {
  const { sql } = deps;
  const player = currentPlayer(res);
  // Whatever refuses the upload, the rest of its body is not read: the connection closes after the answer.
  res.set('Connection', 'close');
  const { name } = parseQuery(req, UploadQuery);
  if (req.is('application/json'))
    throw new AppError('INVALID_BODY', "Send the file's bytes as the body, with its name in ?name=.");
  const { settings, conversationId, room } = await admit(deps, req, player.id);
  const maxBytes = Math.min(settings.maxAttachmentMb * MB, room);
  const declared = Number(req.get('content-length') ?? Number.NaN);
  if (declared > maxBytes) throw refusal(settings, room);
  if ((uploading.get(player.id) ?? 0) >= UPLOADS_AT_ONCE)
    throw new AppError('TOO_MANY_UPLOADS', `At most ${UPLOADS_AT_ONCE} files can upload at once.`, {
      retryAfter: 5,
    });
  uploading.set(player.id, (uploading.get(player.id) ?? 0) + 1);
  try {
    const source = await headFirst(req, AbortSignal.timeout(deps.uploadTimeoutMs));
    const mediaType = await sniffMediaType(source.head, name);
    if (source.head.length === 0)
      throw new AppError(
        'ATTACHMENT_EMPTY',
        `${name} is empty (0 bytes), so there is nothing to attach. Choose the file again once it has its contents.`,
      );
    if (!mediaType || !settings.attachmentTypes.includes(mediaType)) {
      throw new AppError(
        'UNSUPPORTED_ATTACHMENT_TYPE',
        `${name} ${mediaType ? `holds ${mediaType}` : 'is not a kind of file this server recognises'} (judged by its contents, not its name). This Village accepts: ${settings.attachmentTypes.join(', ')}.`,
      );
    }
    const pages = mediaType === 'application/pdf' ? new PdfPageCounter() : undefined;
    // A picture's size is read from its header, so the transcript reserves its box before it loads.
    const image = mediaType.startsWith('image/') ? new ImageHead() : undefined;
    const written = await writeBlob(sql, source.all(), maxBytes, (c) => {
      pages?.push(c);
      image?.push(c);
    }).catch((e) => {
      throw e instanceof AppError && e.code === 'ATTACHMENT_TOO_LARGE' ? refusal(settings, room) : e;
    });
    const row = await adoptBlob(sql, written, (tx, blobId) =>
      insertAttachment(tx, {
        playerId: player.id,
        conversationId,
        blobId,
        kind: 'file',
        name,
        mediaType,
        size: written.size,
        tokens: attachmentTokens(mediaType, written.size, pages?.pages),
        ...image?.dimensions(mediaType),
        quota: settings.playerAttachmentMb * MB,
      }),
    ).catch(overQuota(settings));
    res.set('Connection', 'keep-alive');
    respond(res, AttachmentView, toPart(row), 201);
  } finally {
    const n = (uploading.get(player.id) ?? 1) - 1;
    if (n > 0) uploading.set(player.id, n);
    else uploading.delete(player.id);
  }
}

/** POST …/attachments/url: a page, fetched (or the Player's recent copy of it) and attached as its text. */
async function attachPage(deps: AttachmentDeps, req: Request, res: Response) {
  const { sql } = deps;
  const player = currentPlayer(res);
  const body = parseBody(req, UrlBody);
  const { conversationId, room, settings } = await admit(deps, req, player.id);
  let url: URL;
  try {
    url = await deps.pageOutbound.check(body.url);
  } catch (e) {
    if (e instanceof BlockedUrlError) throw new AppError('URL_NOT_ALLOWED', e.message);
    throw e;
  }
  const cached = await recentPage(sql, player.id, url.href);
  const quota = settings.playerAttachmentMb * MB;
  const row = cached
    ? await transaction(sql, (tx) =>
        insertAttachment(tx as never, { ...cached, conversationId, messageId: null, quota }),
      ).catch(overQuota(settings))
    : await storePage(deps, player.id, conversationId, url, room, settings);
  respond(res, AttachmentView, toPart(row), 201);
}

function perPlayer(sql: Sql, name: string, limit: number, message: string) {
  return keyedRateLimit(limit, message, playerKey, { sql, name });
}

/** The Conversation must be the Player's; the pending count and the Player's space are checked up front. */
async function admit(deps: AttachmentDeps, req: Request, playerId: string) {
  const id = req.params.id;
  if (!isUuid(id)) throw notFound('Conversation');
  const [owned, settings, pending, stored] = await Promise.all([
    deps.isConversationOf(deps.sql, playerId, id),
    getVillageSettings(deps.sql),
    countPending(deps.sql, id),
    storedBytes(deps.sql, playerId),
  ]);
  if (!owned) throw notFound('Conversation');
  if (pending >= MAX_PENDING)
    throw new AppError(
      'TOO_MANY_PENDING',
      `This Conversation has ${MAX_PENDING} attachments waiting to be sent. Send or remove some first.`,
    );
  const room = settings.playerAttachmentMb * MB - stored;
  if (room <= 0) throw refusal(settings, 0);
  return { conversationId: id, settings, room };
}

function refusal(settings: VillageSettings, room: number): AppError {
  const max = settings.maxAttachmentMb * MB;
  if (room >= max) return tooLarge(max);
  return new AppError(
    'ATTACHMENT_QUOTA',
    `Your attachments may take ${formatBytes(settings.playerAttachmentMb * MB)} in all; ${formatBytes(Math.max(0, room))} is left. Delete a Conversation to make room. Nothing was stored.`,
  );
}

async function storePage(
  deps: AttachmentDeps,
  playerId: string,
  conversationId: string,
  url: URL,
  room: number,
  settings: VillageSettings,
): Promise<AttachmentRow> {
  const page = await fetchPage(deps.pageOutbound, url, playerId);
  const bytes = Buffer.from(page.text, 'utf8');
  if (bytes.length > room) throw refusal(settings, room);
  const written = await writeBlob(
    deps.sql,
    (async function* () {
      yield bytes;
    })(),
    bytes.length,
  );
  return adoptBlob(deps.sql, written, (tx, blobId) =>
    insertAttachment(tx, {
      playerId,
      conversationId,
      blobId,
      kind: 'url',
      name: page.title ?? url.host,
      mediaType: 'text/plain',
      size: written.size,
      tokens: attachmentTokens('text/plain', written.size),
      url: url.href,
      title: page.title ?? null,
      quota: settings.playerAttachmentMb * MB,
    }),
  ).catch(overQuota(settings));
}

/** The quota, counted as the attachment is stored, was reached meanwhile: said as the quota refusal. */
const overQuota =
  (settings: VillageSettings) =>
  (e: unknown): never => {
    throw e instanceof QuotaFullError ? refusal(settings, e.room) : e;
  };

/**
 * Headers for a download. Pictures are shown inline (the transcript's thumbnails); everything else is a download,
 * never rendered as a page of this origin. Nothing it holds may run: a sandboxing CSP on top of nosniff.
 */
function serve(res: Response, row: AttachmentRow) {
  const text = row.mediaType.startsWith('text/') || row.mediaType === 'application/json';
  const inline = row.mediaType.startsWith('image/');
  const filename = row.kind === 'url' ? `${row.name}.txt` : row.name;
  res.set({
    'Content-Type': text ? `${row.mediaType}; charset=utf-8` : row.mediaType,
    'Content-Length': String(row.size),
    'Content-Disposition': `${inline ? 'inline' : 'attachment'}; filename="${asciiName(filename)}"; filename*=UTF-8''${encodeURIComponent(filename)}`,
    'Content-Security-Policy': "default-src 'none'; sandbox",
    'X-Content-Type-Options': 'nosniff',
    'Cross-Origin-Resource-Policy': 'same-origin',
  });
}

const asciiName = (name: string) => name.replace(/[^\x20-\x7e]|["\\]/g, '_');

/**
 * The request's first bytes (enough to sniff), and then all of it, head included. Reading fails with 408 once
 * `deadline` passes (a client that stalls cannot hold an upload open): the upload is then refused like any other,
 * what was written is deleted, and the connection closes after the answer.
 */
async function headFirst(req: Request, deadline: AbortSignal) {
  const it = req[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const expired = new Promise<never>((_, reject) => {
    const fail = () =>
      reject(new AppError('UPLOAD_TIMEOUT', 'The upload took too long and was stopped. Nothing was stored.'));
    if (deadline.aborted) fail();
    else deadline.addEventListener('abort', fail, { once: true });
  });
  expired.catch(() => {});
  const next = () => Promise.race([it.next(), expired]);
  const parts: Buffer[] = [];
  let n = 0;
  let done = false;
  while (n < SNIFF_BYTES) {
    const r = await next();
    if (r.done) {
      done = true;
      break;
    }
    parts.push(r.value);
    n += r.value.length;
  }
  const head = Buffer.concat(parts);
  return {
    head,
    async *all() {
      if (head.length) yield head;
      if (done) return;
      for (;;) {
        const r = await next();
        if (r.done) return;
        yield r.value;
      }
    },
  };
}
