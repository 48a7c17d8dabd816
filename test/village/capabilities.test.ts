import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { thinkingSupport } from '../../src/village/index.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { type FakeProvider, startFakeProvider, textScript } from '../support/fakeProvider.ts';
import { collectFrames } from '../support/sse.ts';
import { setupConversation } from '../support/turns.ts';

describe('whether a Model thinks, from the maintained registry', () => {
  it('knows the listed Models, dated or by their undated alias, and says unknown otherwise', () => {
    expect(thinkingSupport('openai', 'openai', 'o3')).toBe('supported');
    expect(thinkingSupport('openai', 'openai', 'gpt-4o')).toBe('unsupported');
    expect(thinkingSupport('google', 'google', 'gemini-2.5-flash')).toBe('supported');
    expect(thinkingSupport('anthropic', 'anthropic', 'claude-sonnet-4')).toBe('supported');
    expect(thinkingSupport('anthropic', 'anthropic', 'claude-3-5-haiku')).toBe('unsupported');
    // An OpenAI-compatible endpoint is known only when its id names a listed Provider.
    expect(thinkingSupport('compatible', 'deepseek', 'deepseek-chat')).toBe('unsupported');
    expect(thinkingSupport('compatible', 'my-llama', 'llama3')).toBe('unknown');
    expect(thinkingSupport('openai', 'openai', 'gpt-17-imaginary')).toBe('unknown');
    expect(thinkingSupport('demo', 'demo', 'scripted-demo')).toBe('supported');
  });
});

describe('the NPC editor and the turn', () => {
  let app: TestApp;
  let fake: FakeProvider;
  let cookie: string;
  beforeAll(async () => {
    fake = await startFakeProvider();
    app = await startTestApp(
      {},
      {
        COMPATIBLE_PROVIDERS: JSON.stringify([
          { id: 'fake', baseURL: fake.baseURL, apiKey: 'k' },
          { id: 'deepseek', baseURL: fake.baseURL, apiKey: 'k' },
        ]),
      },
      { fake },
    );
    ({ cookie } = await app.signIn());
  });
  afterAll(async () => {
    await app?.close();
    await fake?.close();
  });

  it('GET /api/models says whether a Model thinks; a Provider the instance lacks is a 400', async () => {
    const info = async (provider: string, model: string) =>
      (await app.api(`/api/models?provider=${provider}&model=${model}`, { cookie })).json();
    expect(await info('deepseek', 'deepseek-reasoner')).toEqual({
      provider: 'deepseek',
      model: 'deepseek-reasoner',
      thinking: 'supported',
      // Text only, as models.dev lists it: the composer says so before a picture or a PDF is sent.
      images: 'unsupported',
      pdfs: 'unsupported',
    });
    expect(await info('deepseek', 'deepseek-chat')).toMatchObject({ thinking: 'unsupported' });
    expect(await info('fake', 'fake-model')).toMatchObject({
      thinking: 'unknown',
      images: 'unknown',
      pdfs: 'unknown',
    });
    const missing = await app.api('/api/models?provider=nowhere&model=x', { cookie });
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({ error: { code: 'PROVIDER_NOT_CONFIGURED' } });
  });

  it('a Model known not to think is not asked to (with thinking on); one that thinks is', async () => {
    const ask = async (model: string) => {
      const { conversationId } = await setupConversation(app, cookie, [
        { name: 'Sage', provider: 'deepseek', model, thinking: true },
      ]);
      fake.enqueue(textScript('Hm.'));
      await collectFrames(
        await app.api(`/api/conversations/${conversationId}/messages`, { cookie, body: { text: 'Why?' } }),
      );
      return fake.requests.at(-1)!.body as Record<string, unknown>;
    };
    expect(await ask('deepseek-reasoner')).toHaveProperty('reasoning_effort');
    expect(await ask('deepseek-chat')).not.toHaveProperty('reasoning_effort');
  });
});
