import { defaultCatalog } from 'tokenlens';
import type { ProviderKind } from '../config.ts';

/** Whether a Model can think (return visible reasoning): known either way, or not known. */
export type ThinkingSupport = 'supported' | 'unsupported' | 'unknown';

type CatalogModel = { reasoning?: boolean };
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
export function thinkingSupport(
  kind: ProviderKind | undefined,
  providerId: string,
  model: string,
): ThinkingSupport {
  // Asked on every turn: answered from memory after the first time (bounded, the Model name is user data).
  const key = `${kind}\u0000${providerId}\u0000${model}`;
  const known = answers.get(key);
  if (known) return known;
  const answer = lookUp(kind, providerId, model);
  if (answers.size >= 1024) answers.delete(answers.keys().next().value!);
  answers.set(key, answer);
  return answer;
}

const answers = new Map<string, ThinkingSupport>();

function lookUp(kind: ProviderKind | undefined, providerId: string, model: string): ThinkingSupport {
  if (kind === 'demo') return 'supported';
  const models = catalog[kind === 'compatible' || !kind ? providerId : kind]?.models;
  if (!models || !model) return 'unknown';
  const exact = models[model];
  if (exact) return flag(exact);
  const dated = Object.entries(models)
    .filter(
      ([id]) => id.startsWith(`${model}-`) && /^\d{8}$|^\d{4}-\d{2}-\d{2}$/.test(id.slice(model.length + 1)),
    )
    .map(([, m]) => flag(m));
  return dated.length && dated.every((f) => f === dated[0]) ? dated[0]! : 'unknown';
}

const flag = (m: CatalogModel): ThinkingSupport =>
  m.reasoning === true ? 'supported' : m.reasoning === false ? 'unsupported' : 'unknown';
