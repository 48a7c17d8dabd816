import { unknownMacros } from '../../../src/macros/index.ts';
import type { Npc } from '../api.ts';

/** The fields a character card adds to an NPC (issue 29), as the NPC form edits them. */
export type CharacterDraft = Pick<
  Npc,
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
>;
export const emptyCharacter: CharacterDraft = {
  personality: '',
  scenario: '',
  greeting: '',
  alternateGreetings: [],
  exampleMessages: '',
  postHistoryInstructions: '',
  creator: '',
  creatorNotes: '',
  characterVersion: '',
  tags: [],
};
/** Only these keys go in a save (the NPC as listed carries more, which the server refuses). */
export const characterOf = (n: CharacterDraft): CharacterDraft => ({
  personality: n.personality,
  scenario: n.scenario,
  greeting: n.greeting,
  alternateGreetings: n.alternateGreetings,
  exampleMessages: n.exampleMessages,
  postHistoryInstructions: n.postHistoryInstructions,
  creator: n.creator,
  creatorNotes: n.creatorNotes,
  characterVersion: n.characterVersion,
  tags: n.tags,
});

/** A macro no prompt would expand is left visible here, with a warning: it is kept out of every prompt. */
function MacroWarning({ text, original = false }: { text: string; original?: boolean }) {
  const unknown = unknownMacros(text, original);
  if (!unknown.length) return null;
  return (
    <span className="meta macro-warning" role="note">
      ⚠ Not understood, left out of the prompt: {unknown.join(', ')}. Known: {'{{char}}, {{user}}'}
      {original ? ', {{original}}' : ''}.
    </span>
  );
}

/**
 * A character card's own fields, folded away until wanted: personality, scenario, the greeting that opens every
 * new Conversation and its alternates (one per paragraph block, separated by a line of three dashes), example
 * messages, post-history instructions, and who made the card.
 */
export function CharacterFields({
  value,
  prompt,
  onChange,
}: {
  value: CharacterDraft;
  /** The NPC's prompt (a card's system prompt), checked for macros here too. */
  prompt: string;
  onChange: (v: CharacterDraft) => void;
}) {
  const set = <K extends keyof CharacterDraft>(k: K, v: CharacterDraft[K]) => onChange({ ...value, [k]: v });
  const area = (
    k: 'personality' | 'scenario' | 'greeting' | 'exampleMessages' | 'postHistoryInstructions',
    label: string,
    rows = 2,
  ) => (
    <label>
      {label}
      <textarea value={value[k]} onChange={(e) => set(k, e.target.value)} rows={rows} />
      <MacroWarning text={value[k]} original={k === 'postHistoryInstructions'} />
    </label>
  );
  const filled = Object.values(characterOf(value)).some((v) => (Array.isArray(v) ? v.length : v));
  return (
    <details className="character-fields" open={filled}>
      <summary>Character card fields</summary>
      <MacroWarning text={prompt} original />
      {area('personality', 'Personality')}
      {area('scenario', 'Scenario')}
      {area('greeting', 'Greeting (the first Message of every new Conversation)', 3)}
      <label>
        Alternate greetings (separate them with a line of ---)
        <textarea
          value={value.alternateGreetings.join('\n---\n')}
          onChange={(e) =>
            set(
              'alternateGreetings',
              e.target.value.split(/\n---\n/).filter((g, i, all) => g.trim() || i < all.length - 1),
            )
          }
          rows={3}
        />
        <MacroWarning text={value.alternateGreetings.join('\n')} />
      </label>
      {area('exampleMessages', 'Example messages (<START> begins each)', 3)}
      {area('postHistoryInstructions', 'Post-history instructions (sent after the conversation)')}
      <CardCredits value={value} set={set} />
    </details>
  );
}

/** Who made the card: creator, version, tags and notes. */
function CardCredits({
  value,
  set,
}: {
  value: CharacterDraft;
  set: <K extends keyof CharacterDraft>(k: K, v: CharacterDraft[K]) => void;
}) {
  return (
    <>
      <div className="row">
        <label>
          Creator
          <input value={value.creator} onChange={(e) => set('creator', e.target.value)} maxLength={200} />
        </label>
        <label>
          Version
          <input
            value={value.characterVersion}
            onChange={(e) => set('characterVersion', e.target.value)}
            maxLength={100}
          />
        </label>
      </div>
      <label>
        Tags (comma-separated)
        <input
          value={value.tags.join(', ')}
          onChange={(e) =>
            set(
              'tags',
              e.target.value
                .split(',')
                .map((t) => t.trim())
                .filter(Boolean),
            )
          }
        />
      </label>
      <label>
        Creator’s notes
        <textarea value={value.creatorNotes} onChange={(e) => set('creatorNotes', e.target.value)} rows={2} />
      </label>
    </>
  );
}
