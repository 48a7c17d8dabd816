// npm run publish-lexicons: publishes lexicons/click/aligned/chat/*.json as com.atproto.lexicon.schema records
// (rkey = NSID) in the repo of the account that controls the NSID authority, chat.aligned.click. Readers find
// them through the DNS TXT record `_lexicon.chat.aligned.click` = `did=<that account's DID>`.
//
//   LEXICON_PDS=https://… LEXICON_IDENTIFIER=handle-or-did LEXICON_PASSWORD=app-password npm run publish-lexicons
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { type Agent, AtpAgent } from '@atproto/api';

export const LEXICON_DIR = path.resolve(import.meta.dirname, '../lexicons/click/aligned/chat');

/** Writes every lexicon of ours into `did`'s repo; returns their at-uris. Re-running updates them in place. */
export async function publishLexicons(agent: Agent, did: string, dir = LEXICON_DIR): Promise<string[]> {
  const uris: string[] = [];
  for (const file of (await readdir(dir)).filter((f) => f.endsWith('.json')).sort()) {
    const doc = JSON.parse(await readFile(path.join(dir, file), 'utf8')) as { id: string };
    const res = await agent.com.atproto.repo.putRecord({
      repo: did,
      collection: 'com.atproto.lexicon.schema',
      rkey: doc.id,
      record: { $type: 'com.atproto.lexicon.schema', ...doc },
    });
    uris.push(res.data.uri);
  }
  return uris;
}

if (process.argv[1] && import.meta.filename === path.resolve(process.argv[1])) {
  const { LEXICON_PDS, LEXICON_IDENTIFIER, LEXICON_PASSWORD } = process.env;
  if (!LEXICON_PDS || !LEXICON_IDENTIFIER || !LEXICON_PASSWORD) {
    console.error('Set LEXICON_PDS, LEXICON_IDENTIFIER and LEXICON_PASSWORD (an app password).');
    process.exit(2);
  }
  const agent = new AtpAgent({ service: LEXICON_PDS });
  await agent.login({ identifier: LEXICON_IDENTIFIER, password: LEXICON_PASSWORD });
  for (const uri of await publishLexicons(agent, agent.session!.did)) console.log(uri);
  console.log(`Now set the DNS TXT record _lexicon.chat.aligned.click to "did=${agent.session!.did}".`);
}
