// wire/: the JSON the HTTP API answers with, as zod schemas shared by the routes (which encode through them),
// the web app (which decodes through them) and docs/http-api.md. Pure: zod only, so the browser bundles it.

export * from './admin.ts';
export * from './errors.ts';
export * from './providerKeys.ts';
export * from './publishing.ts';
export * from './reader.ts';
export * from './schemas.ts';
