// Rendered on the server too (reader/ThreadBody.tsx): the pragma gives it the automatic JSX runtime there.
/** @jsxRuntime automatic @jsxImportSource react */
/** What a moderation service's label is called to a reader; a value we do not know is shown as it is. */
const NAMES: Record<string, string> = {
  '!warn': 'a warning',
  porn: 'adult content',
  sexual: 'sexually suggestive content',
  nudity: 'nudity',
  'graphic-media': 'graphic media',
  gore: 'graphic media',
};
export const labelName = (val: string) => NAMES[val] ?? `“${val}”`;

/**
 * A thread or a turn a followed labeler labelled (`!warn`, content labels) is shown only once the reader chooses
 * to: the notice says who labelled it and what, and one button shows it. A thread's notice is an alert (it stands
 * in front of everything); a turn's is a note in its place in the thread (a long thread may hold many).
 */
export function LabelNotice({
  labels,
  onShow,
  subject = 'conversation',
}: {
  labels: { src: string; val: string }[];
  onShow: () => void;
  subject?: 'conversation' | 'turn';
}) {
  const names = [...new Set(labels.map((l) => labelName(l.val)))];
  const sources = [...new Set(labels.map((l) => l.src))];
  const Heading = subject === 'turn' ? 'h3' : 'h2';
  return (
    <section
      className={`card label-notice${subject === 'turn' ? ' turn' : ''}`}
      role={subject === 'turn' ? 'note' : 'alert'}
      aria-label="Content warning"
    >
      <Heading>Content warning</Heading>
      <p>
        A moderation service this instance follows labelled this {subject}: {names.join(', ')}.
      </p>
      <p className="meta">Labelled by {sources.join(', ')}</p>
      <button type="button" onClick={onShow}>
        {subject === 'turn' ? 'Show this turn' : 'Show the conversation'}
      </button>
    </section>
  );
}
