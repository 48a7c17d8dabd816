// npm run oauth-keys: makes the ES256 private key for the confidential OAuth client (production, PUBLIC_URL).
// Prints the OAUTH_PRIVATE_KEYS value to put in the environment. Add a new key beside the old one to rotate.
import { JoseKey } from '@atproto/oauth-client-node';

const kid = `key-${new Date().toISOString().slice(0, 10)}`;
const key = await JoseKey.generate(['ES256'], kid);
console.log(`OAUTH_PRIVATE_KEYS='${JSON.stringify([key.privateJwk])}'`);
