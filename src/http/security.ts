import type { RequestHandler } from 'express';
import { AppError } from './errors.ts';

/**
 * What every answer says about how a browser may use it: a Content-Security-Policy the built app satisfies
 * (its own scripts and styles only, images from itself, no framing, no plugins), no MIME sniffing, and no
 * full URL in the Referer sent to other sites. Remote images in published text are not loaded at all; `blob:` images
 * are the composer's previews of files the Player picked, made in the page itself.
 */
const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  // React sets style through the DOM (allowed); the few server-written pages carry a style attribute.
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

export const securityHeaders: RequestHandler = (_req, res, next) => {
  res.set({
    'Content-Security-Policy': CSP,
    'X-Content-Type-Options': 'nosniff',
    'X-Frame-Options': 'DENY',
    'Referrer-Policy': 'strict-origin-when-cross-origin',
    'Cross-Origin-Opener-Policy': 'same-origin',
  });
  next();
};

/** The header the web app sends with every request that changes something. */
export const INTENT_HEADER = 'x-agentsville';

/**
 * A request that changes something carries a JSON body or the app's own header. Neither can be sent cross-site
 * without a CORS preflight (which this server never grants), so a bodiless POST or DELETE from another site's
 * form or image tag is refused even where SameSite cookies are not enforced.
 */
export const requireIntent: RequestHandler = (req, _res, next) => {
  if (req.method === 'GET' || req.method === 'HEAD' || req.method === 'OPTIONS') return next();
  if (req.is('application/json') || req.get(INTENT_HEADER) === '1') return next();
  // The same answer as any body that is not JSON, so the refusal order stays 401, then 400 (seed 003).
  throw new AppError(
    'INVALID_BODY',
    `The request body is not valid: send JSON (a request with no body sends the ${INTENT_HEADER} header).`,
  );
};
