import {
  BoundedJsonReader,
  checkJsonLimits,
  JsonLimitError,
  type JsonLimits,
  parseBoundedJson,
} from '../json/index.ts';
import { plainName, wellFormed } from '../parts/index.ts';
import { CARD_DEFAULTS, NPC_LIMITS, type Npc } from '../village/index.ts';
import { isWorldInfo, type Lorebook, LorebookError, readBook } from './lorebook.ts';
import { isPng, PngError, pngTextChunks } from './png.ts';

/**
 * Character cards (SillyTavern's Character Card V1, V2 and V3) in and out of NPCs. Pure: bytes in, an NPC's
 * fields and its lorebook out, each field as its maker wrote it (macros are expanded when a prompt is made, not
 * here), or a CardError saying in words what is wrong with the file. What a round trip keeps: ADR 0059.
 */
export class CardError extends Error {
  constructor(
    readonly code: 'CARD_UNREADABLE' | 'NOT_A_CARD' | 'CARD_TOO_LONG' | 'CARD_TOO_LARGE' | 'WORLD_INFO',
    message: string,
  ) {
    super(message);
  }
}

const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const obj = (v: unknown): Record<string, unknown> =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
const strings = (v: unknown): string[] =>
  Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];

/** What an NPC is made of, as a card gives it. */
export type CardNpc = Pick<
  Npc,
  | 'name'
  | 'jobTitle'
  | 'description'
  | 'prompt'
  | 'provider'
  | 'model'
  | 'thinking'
  | 'personality'
  | 'scenario'
  | 'greeting'
  | 'alternateGreetings'
  | 'exampleMessages'
  | 'postHistoryInstructions'
  | 'creator'
  | 'creatorNotes'
  | 'characterVersion'
  | 'tags'
  | 'extensions'
  | 'cardExtra'
>;
export interface ImportedCard {
  spec: 'v1' | 'v2' | 'v3';
  npc: CardNpc;
  /** The card's `character_book`, kept as it came (entries, keys and options). */
  lorebook: Lorebook | null;
  /** What was changed on the way in, in words. */
  notes: string[];
}

/** Our own keys under `extensions`: what an NPC has that a card has no field for. */
const OURS = 'agentsville';
/** V3's data fields with no column here: kept in `cardExtra` and given back on a V3 export. */
const V3_ONLY = [
  'nickname',
  'creator_notes_multilingual',
  'source',
  'group_only_greetings',
  'creation_date',
  'modification_date',
  'assets',
] as const;

/**
 * What a card's JSON may hold, counted while it is read (ADR 0049): far more than any card in the wild (a few
 * hundred lorebook entries, tens of KB of text), far less than would hurt.
 */
export const CARD_LIMITS: JsonLimits = { nodes: 500_000, depth: 64, items: 10_000, chars: 1_000_000 };

export function cardError(e: unknown): unknown {
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

/**
 * A card sent as JSON, parsed as it arrives and refused at the first value past CARD_LIMITS (a PNG card is read
 * whole: its JSON is base64 inside a text chunk). Its refusals map to CardErrors with `cardError`.
 */
export function cardJsonReader(first: Uint8Array): BoundedJsonReader | undefined {
  return isPng(first) || first[0] === 0x89 ? undefined : new BoundedJsonReader(CARD_LIMITS, 'The card');
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

/** A card file's JSON: a PNG's `ccv3` or `chara` text chunk (V3 cards carry both; the newer wins), or the bytes. */
export function cardJsonBytes(bytes: Uint8Array): Uint8Array {
  if (!isPng(bytes)) return bytes;
  let texts: Map<string, string>;
  try {
    texts = pngTextChunks(bytes);
  } catch (e) {
    throw new CardError('CARD_UNREADABLE', e instanceof PngError ? e.message : 'The PNG could not be read.');
  }
  const encoded = texts.get('ccv3') ?? texts.get('chara');
  if (encoded === undefined)
    throw new CardError('NOT_A_CARD', 'This PNG holds no character card (no "chara" or "ccv3" text chunk).');
  return new Uint8Array(Buffer.from(encoded.trim(), 'base64'));
}

/** A file's JSON, parsed a slice at a time and refused at the first value past CARD_LIMITS. */
export async function readCardJson(bytes: Uint8Array): Promise<unknown> {
  try {
    return await parseBoundedJson(cardJsonBytes(bytes), CARD_LIMITS, 'The card');
  } catch (e) {
    throw cardError(e);
  }
}

/** Reads a card from a file's bytes: a PNG with a `ccv3` or `chara` text chunk, or the JSON itself. */
export async function readCard(bytes: Uint8Array): Promise<ImportedCard> {
  return fromJson(await readCardJson(bytes));
}

const tooLong = (field: string, length: number, max: number) =>
  new CardError(
    'CARD_TOO_LONG',
    `The card's ${field} is ${length.toLocaleString('en')} characters; an NPC's holds ${max.toLocaleString('en')}. Shorten it in the card and import it again.`,
  );

export function fromJson(card: unknown): ImportedCard {
  if (!card || typeof card !== 'object' || Array.isArray(card))
    throw new CardError('NOT_A_CARD', 'This is not a character card: expected a JSON object.');
  const c = card as Record<string, unknown>;
  if (isWorldInfo(c))
    throw new CardError(
      'WORLD_INFO',
      'This is a World Info file (a lorebook), not a character card: import it as a lorebook and attach it to NPCs.',
    );
  const nested =
    (c.spec === 'chara_card_v2' || c.spec === 'chara_card_v3') && c.data && typeof c.data === 'object';
  const spec = nested ? (c.spec === 'chara_card_v3' ? 'v3' : 'v2') : 'v1';
  const d = nested ? obj(c.data) : c;
  const name = plainName(wellFormed(str(d.name)));
  if (!name) throw new CardError('NOT_A_CARD', 'This is not a character card: it has no name.');
  if (name.length > NPC_LIMITS.name)
    throw new CardError(
      'CARD_TOO_LONG',
      `The card's name is ${name.length} characters; an NPC's name holds ${NPC_LIMITS.name}.`,
    );
  const text = (field: string, max: number) => {
    const v = wellFormed(str(d[field]));
    if (v.length > max) throw tooLong(field, v.length, max);
    return v;
  };
  const alternateGreetings = greetingsOf(d);
  const notes: string[] = [];
  const tags = tagsOf(d, notes);
  const { extensions, ours, cardExtra } = extrasOf(d, spec);
  const lorebook = bookOf(d);
  const short = (v: unknown, max: number) =>
    typeof v === 'string' ? wellFormed(v.trim().slice(0, max)) : '';
  return {
    spec,
    npc: {
      ...CARD_DEFAULTS,
      name,
      jobTitle: short(ours.jobTitle, 100),
      description: text('description', NPC_LIMITS.description),
      prompt: text('system_prompt', NPC_LIMITS.prompt),
      provider: short(ours.provider, 64) || null,
      model: short(ours.model, 200) || null,
      thinking: ours.thinking === true,
      personality: text('personality', NPC_LIMITS.personality),
      scenario: text('scenario', NPC_LIMITS.scenario),
      greeting: text('first_mes', NPC_LIMITS.greeting),
      alternateGreetings,
      exampleMessages: text('mes_example', NPC_LIMITS.exampleMessages),
      postHistoryInstructions: text('post_history_instructions', NPC_LIMITS.postHistoryInstructions),
      creator: text('creator', NPC_LIMITS.creator),
      creatorNotes: text('creator_notes', NPC_LIMITS.creatorNotes),
      characterVersion: text('character_version', NPC_LIMITS.characterVersion),
      tags,
      extensions,
      cardExtra,
    },
    lorebook,
    notes,
  };
}

/** The card's alternate greetings, refused past what an NPC keeps. */
function greetingsOf(d: Record<string, unknown>): string[] {
  const alternateGreetings = strings(d.alternate_greetings).map(wellFormed);
  if (alternateGreetings.length > NPC_LIMITS.alternateGreetings)
    throw new CardError(
      'CARD_TOO_LONG',
      `The card has ${alternateGreetings.length} alternate greetings; an NPC keeps ${NPC_LIMITS.alternateGreetings}.`,
    );
  for (const g of alternateGreetings)
    if (g.length > NPC_LIMITS.greeting) throw tooLong('alternate greeting', g.length, NPC_LIMITS.greeting);
  return alternateGreetings;
}

/** The card's tags an NPC keeps; those left out are said in `notes`. */
function tagsOf(d: Record<string, unknown>, notes: string[]): string[] {
  const allTags = strings(d.tags).map(wellFormed);
  const tags = allTags.filter((t) => t.length <= NPC_LIMITS.tag).slice(0, NPC_LIMITS.tags);
  if (tags.length < allTags.length)
    notes.push(
      `${allTags.length - tags.length} tag(s) were left out (past ${NPC_LIMITS.tags}, or too long).`,
    );
  return tags;
}

/** The card's extensions (ours apart) and its V3-only fields, kept as they are, each at most 64 KB. */
function extrasOf(d: Record<string, unknown>, spec: ImportedCard['spec']) {
  // Stored as jsonb: NUL and half surrogate pairs are made storable, like every text field.
  const { [OURS]: oursRaw, ...extensions } = obj(wellFormed(d.extensions));
  const ours = obj(oursRaw);
  if (JSON.stringify(extensions).length > 64_000)
    throw new CardError('CARD_TOO_LARGE', "The card's extensions hold more than 64 KB of data.");
  const cardExtra: Record<string, unknown> = {};
  // An empty group_only_greetings is V3's default form (what our own V3 export writes): nothing to keep.
  if (spec === 'v3')
    for (const k of V3_ONLY)
      if (k in d && !(k === 'group_only_greetings' && Array.isArray(d[k]) && d[k].length === 0))
        cardExtra[k] = wellFormed(d[k]);
  if (JSON.stringify(cardExtra).length > 64_000)
    throw new CardError('CARD_TOO_LARGE', "The card's V3 fields (assets, nickname, …) hold more than 64 KB.");
  return { extensions, ours, cardExtra };
}

/** The card's own lorebook (its `character_book`), if it has one. */
function bookOf(d: Record<string, unknown>): Lorebook | null {
  try {
    return readBook(wellFormed(d.character_book));
  } catch (e) {
    if (e instanceof LorebookError) throw new CardError('CARD_TOO_LARGE', e.message);
    throw e;
  }
}

/** The card's `data`, shared by V2 and V3: every field as stored, our own under `extensions.agentsville`. */
function cardData(npc: CardNpc, lorebook: Lorebook | null) {
  return {
    name: npc.name,
    description: npc.description,
    personality: npc.personality,
    scenario: npc.scenario,
    first_mes: npc.greeting,
    mes_example: npc.exampleMessages,
    creator_notes: npc.creatorNotes,
    system_prompt: npc.prompt,
    post_history_instructions: npc.postHistoryInstructions,
    alternate_greetings: npc.alternateGreetings,
    tags: npc.tags,
    creator: npc.creator,
    character_version: npc.characterVersion,
    ...(lorebook ? { character_book: lorebook } : {}),
    extensions: {
      ...npc.extensions,
      [OURS]: { jobTitle: npc.jobTitle, provider: npc.provider, model: npc.model, thinking: npc.thinking },
    },
  };
}

/** V1's fields at the top level too, as SillyTavern writes them, for readers that know only V1. */
const v1Fields = (data: ReturnType<typeof cardData>) => ({
  name: data.name,
  description: data.description,
  personality: data.personality,
  scenario: data.scenario,
  first_mes: data.first_mes,
  mes_example: data.mes_example,
});

/** An NPC as a Character Card V2 (what SillyTavern and most front-ends import), its lorebook as character_book. */
export function toCardV2(npc: CardNpc, lorebook: Lorebook | null) {
  const data = cardData(npc, lorebook);
  return { ...v1Fields(data), spec: 'chara_card_v2', spec_version: '2.0', data };
}

/** An NPC as a Character Card V3: V2's data and V3's own fields (kept from a V3 import, else their empty form). */
export function toCardV3(npc: CardNpc, lorebook: Lorebook | null) {
  const data = {
    ...cardData(npc, lorebook),
    group_only_greetings: [],
    ...npc.cardExtra,
  };
  return { ...v1Fields(data), spec: 'chara_card_v3', spec_version: '3.0', data };
}
