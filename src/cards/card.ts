import { checkJsonLimits, JsonLimitError, type JsonLimits, parseBoundedJson } from '../json/index.ts';
import { plainName, wellFormed } from '../parts/index.ts';
import type { Npc } from '../village/index.ts';
import { isPng, PngError, pngTextChunks } from './png.ts';

/**
 * Character cards (SillyTavern's Character Card V1, V2 and V3) in and out of NPCs. Pure: bytes in, an NPC's
 * fields and its lorebook out, or a CardError saying in words what is wrong with the file.
 */
export class CardError extends Error {
  constructor(
    readonly code: 'CARD_UNREADABLE' | 'NOT_A_CARD' | 'CARD_TOO_LONG' | 'CARD_TOO_LARGE',
    message: string,
  ) {
    super(message);
  }
}

/** Any field may be missing or of the wrong type in cards found in the wild: such a field reads as empty. */
const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const obj = (v: unknown): Record<string, unknown> =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
const strings = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];

/** The fields of a card this import reads (V1 at the top level; V2 and V3 under `data`). */
function cardData(raw: Record<string, unknown>) {
  const book = obj(raw.character_book).entries;
  return {
    name: str(raw.name),
    description: str(raw.description),
    personality: str(raw.personality),
    scenario: str(raw.scenario),
    first_mes: str(raw.first_mes),
    mes_example: str(raw.mes_example),
    system_prompt: str(raw.system_prompt),
    post_history_instructions: str(raw.post_history_instructions),
    entries: (Array.isArray(book) ? book : []).map((e) => {
      const o = obj(e);
      return { keys: strings(o.keys), content: str(o.content), enabled: o.enabled !== false && Boolean(e) };
    }),
    ours: obj(obj(raw.extensions).agentsville),
  };
}

/** What an NPC is made of, within the NPC limits (src/village/npcs.ts). */
export type CardNpc = Pick<
  Npc,
  'name' | 'jobTitle' | 'description' | 'prompt' | 'provider' | 'model' | 'thinking'
>;
export interface ImportedCard {
  spec: 'v1' | 'v2' | 'v3';
  npc: CardNpc;
  /** Lorebook entries, each a Memory's text. */
  lorebook: string[];
  /** What was changed on the way in, in words (entries shortened or skipped). */
  notes: string[];
}

/** A Player's Memory holds 10,000 (tools/memory.ts): a lorebook longer than that could never be kept whole. */
const MAX_LOREBOOK = 10_000;

export const LIMITS = {
  name: 100,
  jobTitle: 100,
  description: 2000,
  prompt: 20_000,
  entries: 500,
  entry: 2000,
};

/**
 * What a card's JSON may hold, counted while it is read (ADR 0049): no more lorebook entries (or items of any
 * list) than a Player's Memory holds, no text longer than a long reply; far more than any card in the wild.
 */
export const CARD_LIMITS: JsonLimits = { nodes: 500_000, depth: 64, items: MAX_LOREBOOK, chars: 1_000_000 };

function cardError(e: unknown): unknown {
  if (!(e instanceof JsonLimitError)) return e;
  return e.status === 413
    ? new CardError('CARD_TOO_LARGE', e.message)
    : new CardError(
        'CARD_UNREADABLE',
        e.code === 'INVALID_JSON'
          ? 'The card is not valid JSON (a PNG card’s text chunk must be base64 JSON).'
          : e.message,
      );
}

/** A card already parsed (a JSON body), held to the same limits as one read from a file. */
export function readCardValue(value: unknown): ImportedCard {
  try {
    checkJsonLimits(value, CARD_LIMITS, 'The card');
  } catch (e) {
    throw cardError(e);
  }
  return fromJson(value);
}

/**
 * Reads a card from a file's bytes: a PNG with a `ccv3` or `chara` text chunk, or the JSON itself — parsed a
 * slice at a time and refused at the first value past CARD_LIMITS.
 */
export async function readCard(bytes: Uint8Array): Promise<ImportedCard> {
  let json: Uint8Array;
  if (isPng(bytes)) {
    let texts: Map<string, string>;
    try {
      texts = pngTextChunks(bytes);
    } catch (e) {
      throw new CardError(
        'CARD_UNREADABLE',
        e instanceof PngError ? e.message : 'The PNG could not be read.',
      );
    }
    // V3 cards carry both; the newer one wins.
    const encoded = texts.get('ccv3') ?? texts.get('chara');
    if (encoded === undefined)
      throw new CardError(
        'NOT_A_CARD',
        'This PNG holds no character card (no "chara" or "ccv3" text chunk).',
      );
    json = new Uint8Array(Buffer.from(encoded.trim(), 'base64'));
  } else json = bytes;
  let parsed: unknown;
  try {
    parsed = await parseBoundedJson(json, CARD_LIMITS, 'The card');
  } catch (e) {
    throw cardError(e);
  }
  return fromJson(parsed);
}

export function fromJson(card: unknown): ImportedCard {
  if (!card || typeof card !== 'object' || Array.isArray(card))
    throw new CardError('NOT_A_CARD', 'This is not a character card: expected a JSON object.');
  const c = card as Record<string, unknown>;
  const nested =
    (c.spec === 'chara_card_v2' || c.spec === 'chara_card_v3') && c.data && typeof c.data === 'object';
  const spec = nested ? (c.spec === 'chara_card_v3' ? 'v3' : 'v2') : 'v1';
  const d = cardData(nested ? obj(c.data) : c);
  const name = plainName(wellFormed(d.name));
  if (!name) throw new CardError('NOT_A_CARD', 'This is not a character card: it has no name.');
  if (name.length > LIMITS.name)
    throw new CardError(
      'CARD_TOO_LONG',
      `The card's name is ${name.length} characters; an NPC's name holds ${LIMITS.name}.`,
    );
  // Functions, not strings, as replacements: a name like "$'" must not expand (String.replace patterns).
  const macros = (t: string) =>
    wellFormed(
      t
        .replace(/\{\{char\}\}|<BOT>/gi, () => name)
        .replace(/\{\{user\}\}|<USER>/gi, () => 'the Player')
        .trim(),
    );
  // Every field is measured before it is expanded, so no card makes more text than it holds ×(name length).
  for (const [field, value] of Object.entries(d))
    if (typeof value === 'string' && value.length > LIMITS.prompt)
      throw new CardError(
        'CARD_TOO_LONG',
        `The card's ${field} is ${value.length.toLocaleString('en')} characters; an NPC's prompt holds ${LIMITS.prompt.toLocaleString('en')}.`,
      );
  const { ours } = d;
  const description = macros(d.description);
  // A short description stays the NPC's description (what the roster shows); a long one becomes part of the prompt.
  const short = description.length <= LIMITS.description;
  const sections = [
    macros(d.system_prompt),
    short ? '' : description,
    d.personality.trim() && `Personality: ${macros(d.personality)}`,
    d.scenario.trim() && `Scenario: ${macros(d.scenario)}`,
    d.mes_example.trim() && `How you speak (examples):\n${macros(d.mes_example.replace(/<START>/gi, '---'))}`,
    d.first_mes.trim() && `How you first greeted the Player:\n${macros(d.first_mes)}`,
    macros(d.post_history_instructions),
  ].filter(Boolean);
  const prompt = sections.join('\n\n');
  if (prompt.length > LIMITS.prompt)
    throw new CardError(
      'CARD_TOO_LONG',
      `The card's character text is ${prompt.length.toLocaleString('en')} characters; an NPC's prompt holds ${LIMITS.prompt.toLocaleString('en')}. Shorten it in the card and import it again.`,
    );
  const notes: string[] = [];
  const lorebook: string[] = [];
  let shortened = 0;
  let skipped = 0;
  for (const e of d.entries) {
    if (!e.enabled || !e.content.trim() || lorebook.length >= LIMITS.entries) {
      skipped++;
      continue;
    }
    const keys = e.keys.map((k) => k.trim()).filter(Boolean);
    let text = `${keys.length ? `(${keys.join(', ')}) ` : ''}${macros(e.content.slice(0, LIMITS.entry * 2))}`;
    if (text.length > LIMITS.entry) {
      text = `${text.slice(0, LIMITS.entry - 1)}…`;
      shortened++;
    }
    lorebook.push(wellFormed(text));
  }
  if (shortened)
    notes.push(
      `${shortened} lorebook entr${shortened === 1 ? 'y was' : 'ies were'} shortened to ${LIMITS.entry} characters.`,
    );
  if (skipped)
    notes.push(
      `${skipped} lorebook entr${skipped === 1 ? 'y was' : 'ies were'} left out (disabled, empty, or past ${LIMITS.entries}).`,
    );
  const text = (v: unknown, max: number) => (typeof v === 'string' ? wellFormed(v.trim().slice(0, max)) : '');
  return {
    spec,
    npc: {
      name,
      jobTitle: text(ours.jobTitle, LIMITS.jobTitle),
      description: short ? description : '',
      prompt,
      provider: text(ours.provider, 64) || null,
      model: text(ours.model, 200) || null,
      thinking: ours.thinking === true,
    },
    lorebook,
    notes,
  };
}

/** An NPC as a Character Card V2 (what SillyTavern and most front-ends import), its lorebook as character_book. */
export function toCardV2(npc: CardNpc, lorebook: string[]) {
  return {
    spec: 'chara_card_v2',
    spec_version: '2.0',
    data: {
      name: npc.name,
      description: npc.description,
      personality: '',
      scenario: '',
      first_mes: '',
      mes_example: '',
      creator_notes: npc.jobTitle,
      system_prompt: npc.prompt,
      post_history_instructions: '',
      alternate_greetings: [],
      tags: [],
      creator: 'AgentsVille',
      character_version: '',
      character_book: lorebook.length
        ? {
            name: `${npc.name}'s lorebook`,
            extensions: {},
            entries: lorebook.map((content, i) => ({
              keys: [],
              content,
              extensions: {},
              enabled: true,
              insertion_order: i,
              constant: true,
            })),
          }
        : undefined,
      extensions: {
        agentsville: {
          jobTitle: npc.jobTitle,
          provider: npc.provider,
          model: npc.model,
          thinking: npc.thinking,
        },
      },
    },
  };
}
