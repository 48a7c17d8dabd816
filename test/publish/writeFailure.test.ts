import { XRPCError } from '@atproto/api';
import { describe, expect, it } from 'vitest';
import { writeFailure } from '../../src/publish/execute.ts';

// What a failed applyWrites tells the publisher, read from the XRPC client's error class (never a guessed field).
describe('writeFailure', () => {
  it('a 429 waits, a 4xx did not land, anything else may have', () => {
    expect(writeFailure(new XRPCError(429, 'RateLimitExceeded'))).toBe('rate-limited');
    expect(writeFailure(new XRPCError(400, 'InvalidRequest'))).toBe('refused');
    expect(writeFailure(new XRPCError(401, 'AuthRequired'))).toBe('refused');
    expect(writeFailure(new XRPCError(502, 'UpstreamFailure'))).toBe('unknown');
    // A dropped socket: the client wraps it with status 1 (`Unknown`); the write may have landed.
    expect(writeFailure(XRPCError.from(new TypeError('fetch failed')))).toBe('unknown');
    // Something that merely looks like one is not trusted.
    expect(writeFailure(Object.assign(new Error('x'), { status: 400 }))).toBe('unknown');
  });
});
