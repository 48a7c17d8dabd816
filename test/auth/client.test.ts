import { JoseKey } from '@atproto/oauth-client-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';

let app: TestApp;
beforeAll(async () => {
  const key = await JoseKey.generate(['ES256'], 'test-key');
  app = await startTestApp(
    {},
    { PUBLIC_URL: 'https://agentsville.example', OAUTH_PRIVATE_KEYS: JSON.stringify([key.privateJwk]) },
  );
});
afterAll(() => app?.close());

it('is a confidential client at the public URL, asking for exactly our two collections', async () => {
  const res = await app.api('/oauth-client-metadata.json');
  expect(res.status).toBe(200);
  const metadata = (await res.json()) as Record<string, unknown>;
  expect(metadata).toMatchObject({
    client_id: 'https://agentsville.example/oauth-client-metadata.json',
    redirect_uris: ['https://agentsville.example/oauth/callback'],
    token_endpoint_auth_method: 'private_key_jwt',
    token_endpoint_auth_signing_alg: 'ES256',
    jwks_uri: 'https://agentsville.example/.well-known/jwks.json',
    dpop_bound_access_tokens: true,
    scope: 'atproto repo:click.aligned.chat.session repo:click.aligned.chat.message blob:image/*',
  });
});

it('publishes only the public half of its keys', async () => {
  const jwks = (await (await app.api('/.well-known/jwks.json')).json()) as {
    keys: Record<string, unknown>[];
  };
  expect(jwks.keys).toHaveLength(1);
  expect(jwks.keys[0]).toMatchObject({ kid: 'test-key', kty: 'EC', crv: 'P-256' });
  expect(jwks.keys[0]).not.toHaveProperty('d');
});
