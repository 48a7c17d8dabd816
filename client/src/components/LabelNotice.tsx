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
 * A thread a followed labeler labelled (`!warn`, content labels) is shown only once the reader chooses to: the
 * notice says who labelled it and what, and one button shows it.
 */
export function LabelNotice({
  labels,
  onShow,
}: {
  labels: { src: string; val: string }[];
  onShow: () => void;
}) {
  const names = [...new Set(labels.map((l) => labelName(l.val)))];
  const sources = [...new Set(labels.map((l) => l.src))];
  return (
    <section className="card label-notice" role="alert" aria-label="Content warning">
      <h2>Content warning</h2>
      <p>A moderation service this instance follows labelled this conversation: {names.join(', ')}.</p>
      <p className="meta">Labelled by {sources.join(', ')}</p>
      <button type="button" onClick={onShow}>
        Show the conversation
      </button>
    </section>
  );
}
