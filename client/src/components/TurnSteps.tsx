import { readParts } from '../../../src/parts/index.ts';
import type { Cover, TurnChoice } from '../../../src/redaction/index.ts';
import type { Message } from '../api.ts';
import { Barred } from './PublishPreview.tsx';

/** Each step's published name and summary. */
export function StepChoices({
  message,
  choice,
  defaults,
  cover,
  onChange,
}: {
  message: Message;
  choice: TurnChoice;
  defaults: { name: string; summary: string }[] | undefined;
  cover: Cover;
  onChange: (c: Partial<TurnChoice>) => void;
}) {
  const tools = readParts(message.parts).filter((p) => p.type === 'tool');
  return tools.map((t, i) => (
    <div key={t.type === 'tool' ? t.id : i} className="step-choice">
      <label>
        Step {i + 1}: name (published)
        <input
          value={choice.stepNames?.[i] ?? ''}
          maxLength={64}
          placeholder={
            choice.stepNames?.[i] || !defaults?.[i]
              ? 'Default: a neutral name'
              : `Default: ${defaults[i]!.name}`
          }
          onChange={(e) => onChange({ stepNames: listWith(choice.stepNames, i, e.target.value) })}
        />
      </label>
      {t.type === 'tool' &&
        t.name &&
        !choice.stepNames?.[i] &&
        defaults?.[i] &&
        defaults[i]!.name !== t.name && (
          <button
            type="button"
            className="link"
            onClick={() => onChange({ stepNames: listWith(choice.stepNames, i, t.name ?? '') })}
          >
            Publish its real name ({t.name})
          </button>
        )}
      <StepSummary
        index={i}
        tool={t.type === 'tool' ? (t.name ?? 'tool') : ''}
        description={t.type === 'tool' ? t.description : undefined}
        choice={choice}
        defaults={defaults}
        cover={cover}
        onChange={onChange}
      />
    </div>
  ));
}

/** A step's summary: the Player's words, or the neutral default the placeholder shows. */
function StepSummary({
  index: i,
  tool,
  description,
  choice,
  defaults,
  cover,
  onChange,
}: {
  index: number;
  /** Its real name: the Player's own editor shows it, whatever is published. */
  tool: string;
  /** What the tool's server says it does: offered to publish, never published unasked. */
  description: string | undefined;
  choice: TurnChoice;
  defaults: { summary: string }[] | undefined;
  cover: Cover;
  onChange: (c: Partial<TurnChoice>) => void;
}) {
  return (
    <label>
      Step {i + 1}: {tool} — summary
      <input
        value={choice.steps?.[i] ?? ''}
        placeholder={
          choice.steps?.[i] || !defaults?.[i]
            ? 'Default: what kind of call it was, never its arguments'
            : `Default: ${defaults[i]!.summary}`
        }
        maxLength={250}
        onChange={(e) => onChange({ steps: listWith(choice.steps, i, e.target.value) })}
      />
      {description && !choice.steps?.[i] && (
        <button
          type="button"
          className="link"
          onClick={() => onChange({ steps: listWith(choice.steps, i, description.slice(0, 250)) })}
        >
          Publish what its server says it does
        </button>
      )}
      {choice.steps?.[i] && cover.find(choice.steps[i]).length > 0 && (
        <span className="meta covered-note">
          Published as: <Barred text={cover.apply(choice.steps[i])} />
        </span>
      )}
    </label>
  );
}

/** `list` with its `i`th entry set (empty: null, the default), padded with nulls. */
function listWith(list: (string | null)[] | undefined, i: number, value: string): (string | null)[] {
  const out = [...(list ?? [])];
  while (out.length < i) out.push(null);
  out[i] = value || null;
  return out;
}
