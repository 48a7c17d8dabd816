// outbound/: the one way the server fetches a URL that a user or the network supplied: public addresses only
// (checked by their bytes, at connect time), every redirect checked, bounded in time and size. ADR 0029.
export { BlockedUrlError, createOutbound, type Outbound, type OutboundOptions } from './fetch.ts';
export { isPublicAddress, RefusedAddressError, type Resolve } from './policy.ts';
export { type Backoff, FollowedSocket, type FollowOptions, type SocketPolicy } from './socket.ts';
