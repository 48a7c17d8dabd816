import { createAnthropic } from '@ai-sdk/anthropic';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { extractReasoningMiddleware, type LanguageModel, wrapLanguageModel } from 'ai';
import { AppError } from '../http/index.ts';
import { demoModel } from './demo.ts';
import { drainingFetch } from './drain.ts';
import type { VillageSettings } from './settings.ts';

/** The kinds of Provider an instance can be configured with (config.ts reads them from the environment). */
export type ProviderKind = 'openai' | 'anthropic' | 'google' | 'compatible' | 'demo';
export interface ProviderConfig {
  id: string;
  kind: ProviderKind;
  apiKey?: string;
  baseURL?: string;
  /** For an OpenAI-compatible endpoint: the tag reasoning comes in inside the content (default `think`). */
  reasoningTag?: string;
}

export interface ResolvedModel {
  provider: string;
  model: string;
}

/**
 * Which Provider and Model a speaker uses: its own, else the Village defaults. An NPC that names neither
 * inherits both; one that names only a Model takes the Village's Provider; one that names only a Provider
 * has no Model unless that Provider is the Village default. Pure, so the rule is tested on its own.
 */
export function resolveModel(
  npc: { provider: string | null; model: string | null },
  village: Pick<VillageSettings, 'defaultProvider' | 'defaultModel'>,
): ResolvedModel | undefined {
  const provider = npc.provider ?? village.defaultProvider;
  const model = npc.model ?? (provider === village.defaultProvider ? village.defaultModel : null);
  return provider && model ? { provider, model } : undefined;
}

const MODEL_CACHE = 256;

/**
 * The Providers this instance has keys (or endpoints) for: read from its environment at start, and the keys a
 * Village admin added in the app (providerKeys.ts), which replace the environment's for that Provider.
 */
export class ProviderRegistry {
  private readonly byId = new Map<string, ProviderConfig>();
  private readonly fromEnvironment = new Map<string, ProviderConfig>();
  private readonly factories = new Map<string, (model: string) => LanguageModel>();
  /**
   * Model instances are stateless and reusable, and making one is not free (the OpenAI-compatible one builds
   * its zod chunk schemas, ~1 ms): one per Provider and Model, the most recently used kept. Bounded, because
   * the Model name is whatever an NPC says.
   */
  private readonly models = new Map<string, LanguageModel>();

  /** `baseUrls`: where a Provider whose key is added in the app is reached (the environment's *_BASE_URL). */
  constructor(
    providers: ProviderConfig[],
    private readonly baseUrls: Partial<Record<'openai' | 'anthropic' | 'google', string>> = {},
  ) {
    for (const p of providers) {
      this.byId.set(p.id, p);
      this.fromEnvironment.set(p.id, p);
    }
  }

  /** The environment's key for a Provider, if it has one (the admin page shows its last four characters). */
  environmentKey(id: string): string | undefined {
    return this.fromEnvironment.get(id)?.apiKey;
  }

  /**
   * The keys added in the app, all of them each time (one removed is gone): each replaces the environment's
   * for its Provider; a Provider with neither is not offered. The next turn uses them.
   */
  useStoredKeys(keys: { id: 'openai' | 'anthropic' | 'google'; apiKey: string }[]): void {
    const next = new Map(this.fromEnvironment);
    for (const k of keys)
      next.set(k.id, { id: k.id, kind: k.id, apiKey: k.apiKey, baseURL: this.baseUrls[k.id] });
    const same =
      next.size === this.byId.size &&
      [...next].every(([id, p]) => this.byId.get(id)?.apiKey === p.apiKey && this.byId.has(id));
    if (same) return;
    this.byId.clear();
    for (const [id, p] of next) this.byId.set(id, p);
    // Clients hold the old key: made again on next use.
    this.factories.clear();
    this.models.clear();
  }

  list(): { id: string; kind: ProviderConfig['kind'] }[] {
    return [...this.byId.values()].map((p) => ({ id: p.id, kind: p.kind }));
  }

  has(id: string): boolean {
    return this.byId.has(id);
  }

  kindOf(id: string): ProviderConfig['kind'] | undefined {
    return this.byId.get(id)?.kind;
  }

  /** True when the only Provider is the scripted demo: nothing real to call. */
  demoOnly(): boolean {
    return this.byId.size === 1 && this.byId.has('demo');
  }

  /**
   * The Model to call, or a 400 that says why not. Checked at every turn: an NPC can outlive the key it was
   * created with (seed 003, step 5).
   */
  languageModel(resolved: ResolvedModel | undefined): LanguageModel {
    if (!resolved) {
      throw new AppError(
        'MODEL_UNRESOLVED',
        'This NPC has no Model, and the Village has no default Model to inherit. Choose a Provider and Model for the NPC.',
      );
    }
    const factory = this.factory(resolved.provider);
    if (!factory) {
      throw new AppError(
        'PROVIDER_NOT_CONFIGURED',
        `The Provider "${resolved.provider}" has no API key on this instance, so the NPC cannot answer. Choose another Provider.`,
      );
    }
    const key = `${resolved.provider}\u0000${resolved.model}`;
    let model = this.models.get(key);
    if (model) this.models.delete(key);
    else model = factory(resolved.model);
    // Re-inserted last: a Map iterates in insertion order, so the first key is the least recently used.
    this.models.set(key, model);
    if (this.models.size > MODEL_CACHE) this.models.delete(this.models.keys().next().value!);
    return model;
  }

  private factory(id: string): ((model: string) => LanguageModel) | undefined {
    const cached = this.factories.get(id);
    if (cached) return cached;
    const p = this.byId.get(id);
    if (!p) return undefined;
    const made = makeFactory(p);
    this.factories.set(id, made);
    return made;
  }
}

function makeFactory(p: ProviderConfig): (model: string) => LanguageModel {
  // Every Provider reads its stream through a body that keeps what arrived when the socket breaks.
  const fetch = drainingFetch();
  switch (p.kind) {
    case 'openai': {
      const provider = createOpenAI({ apiKey: p.apiKey, baseURL: p.baseURL, fetch });
      return (model) => provider(model);
    }
    case 'anthropic': {
      const provider = createAnthropic({ apiKey: p.apiKey, baseURL: p.baseURL, fetch });
      return (model) => provider(model);
    }
    case 'google': {
      const provider = createGoogleGenerativeAI({ apiKey: p.apiKey, baseURL: p.baseURL, fetch });
      return (model) => provider(model);
    }
    case 'demo':
      return () => demoModel();
    case 'compatible': {
      const provider = createOpenAICompatible({
        name: p.id,
        baseURL: p.baseURL!,
        apiKey: p.apiKey,
        includeUsage: true,
        fetch,
      });
      // R1-style models served without a reasoning parser put their chain of thought in the content, inside
      // <think>…</think>: split out as reasoning, it is never text, never history, never published (issue 27).
      const middleware = extractReasoningMiddleware({ tagName: p.reasoningTag ?? 'think' });
      return (model) => wrapLanguageModel({ model: provider(model), middleware });
    }
  }
}
