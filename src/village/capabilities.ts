import { defaultCatalog } from 'tokenlens';
import type { ProviderKind } from './providers.ts';

/** Whether a Model can think (return visible reasoning): known either way, or not known. */
export type ThinkingSupport = 'supported' | 'unsupported' | 'unknown';

type CatalogModel = {
  reasoning?: boolean;
  modalities?: { input?: string[] };
  limit?: { output?: number };
};
const catalog = defaultCatalog as unknown as Record<
  string,
  { models?: Record<string, CatalogModel> } | undefined
>;

/**
 * From tokenlens's snapshot of the models.dev registry (the same maintained source as prices, never a hand-typed
 * list). A Model name may be an undated alias of a dated entry (`claude-sonnet-4` for `claude-sonnet-4-20250514`):
 * then the dated entries decide, when they agree. An endpoint the registry does not list (an OpenAI-compatible
 * server) is unknown unless its id names a listed Provider. The demo Model thinks. Pure.
 */
export const thinkingSupport = remembered(
  (kind, providerId, model): ThinkingSupport =>
    kind === 'demo' ? 'supported' : agree(entriesFor(kind, providerId, model), flag),
);

/**
 * Asked on every turn: answered from memory after the first time, per Provider kind, id and Model. Bounded (the
 * Model name is user data): the oldest answer goes first.
 */
export function remembered<T>(
  answer: (kind: ProviderKind | undefined, providerId: string, model: string) => T,
): (kind: ProviderKind | undefined, providerId: string, model: string) => T {
  const answers = new Map<string, T>();
  return (kind, providerId, model) => {
    const key = `${kind}\u0000${providerId}\u0000${model}`;
    const known = answers.get(key);
    if (known !== undefined) return known;
    const found = answer(kind, providerId, model);
    if (answers.size >= 1024) answers.delete(answers.keys().next().value!);
    answers.set(key, found);
    return found;
  };
}

export interface InputSupport {
  images: ThinkingSupport;
  pdfs: ThinkingSupport;
}

/**
 * Which attachments a Model reads besides text, from the same registry. PDFs: models.dev lists `pdf` for Gemini
 * only, but Anthropic's and OpenAI's vision Models take PDF documents too (their APIs document it; the AI SDK
 * sends them as document / input_file parts), so a vision Model of those two kinds counts as reading PDFs. Not
 * known (an endpoint the registry does not list) is sent as it is, and the Provider decides. Pure.
 */
export const inputSupport = remembered((kind, providerId, model): InputSupport => {
  if (kind === 'demo') return { images: 'unsupported', pdfs: 'unsupported' };
  const entries = entriesFor(kind, providerId, model);
  const has = (what: string) => (m: CatalogModel) =>
    m.modalities?.input ? (m.modalities.input.includes(what) ? 'supported' : 'unsupported') : 'unknown';
  const images = agree(entries, has('image'));
  const pdfs =
    (kind === 'anthropic' || kind === 'openai') && images === 'supported'
      ? 'supported'
      : agree(entries, has('pdf'));
  return { images, pdfs };
});

/**
 * The most output tokens the Model writes in one call, from the same registry (never a guessed constant): sent as
 * `maxOutputTokens`, so a Provider's own fallback (Anthropic's SDK asks 4,096 for a Model it does not know) does
 * not cut long answers short. Undefined when not known, or when the dated entries disagree: then nothing is
 * sent and the Provider decides. Pure.
 */
export const outputLimit = remembered((kind, providerId, model): number | undefined => {
  if (kind === 'demo') return undefined;
  const limits = entriesFor(kind, providerId, model).map((m) => m.limit?.output);
  const first = limits[0];
  return typeof first === 'number' && first > 0 && limits.every((l) => l === first) ? first : undefined;
});

/** The registry's entry for a Model, or its dated entries when the name is an undated alias. */
function entriesFor(kind: ProviderKind | undefined, providerId: string, model: string): CatalogModel[] {
  const models = catalog[kind === 'compatible' || !kind ? providerId : kind]?.models;
  if (!models || !model) return [];
  const exact = models[model];
  if (exact) return [exact];
  return Object.entries(models)
    .filter(
      ([id]) => id.startsWith(`${model}-`) && /^\d{8}$|^\d{4}-\d{2}-\d{2}$/.test(id.slice(model.length + 1)),
    )
    .map(([, m]) => m);
}

/** What the entries say, when they all say the same; otherwise not known. */
function agree(entries: CatalogModel[], read: (m: CatalogModel) => ThinkingSupport): ThinkingSupport {
  const answers = entries.map(read);
  return answers.length && answers.every((a) => a === answers[0]) ? answers[0]! : 'unknown';
}

const flag = (m: CatalogModel): ThinkingSupport =>
  m.reasoning === true ? 'supported' : m.reasoning === false ? 'unsupported' : 'unknown';
