// Shown by the reading page's script and by the app, never rendered on the server (a gone thread is a 404 or 410
// page there); the pragma keeps it compilable by the root tsconfig like the reader's other components.
/** @jsxRuntime automatic @jsxImportSource react */

/**
 * In place of a thread that stopped being published while it was open, as its next refresh found: deleted or
 * unpublished by its author, or no longer served here. What was on screen goes with it (the author took it back).
 * `page`: only the page shown is gone (the thread has fewer turns now).
 */
export function Unpublished({ missing, firstPage }: { missing: 'thread' | 'page'; firstPage: string }) {
  return missing === 'page' ? (
    <section className="notice unpublished" role="status">
      <h2>This page is gone</h2>
      <p>
        The conversation is shorter than when this page was read: its author deleted some of its turns.{' '}
        <a href={firstPage}>Read it from the start</a>.
      </p>
    </section>
  ) : (
    <section className="notice unpublished" role="status">
      <h2>This conversation is no longer published</h2>
      <p>
        Its author deleted or unpublished it while it was open here, or this server stopped showing it. What
        was shown is gone with it.
      </p>
    </section>
  );
}

/**
 * What a 404 from the reader's API says is missing (its `details`): the thread, or only that page of it; null
 * for any other 404 (a proxy's page, say), which says nothing about the thread.
 */
export function missingOf(details: unknown): 'thread' | 'page' | null {
  const missing = (details as { missing?: unknown } | null | undefined)?.missing;
  return missing === 'thread' || missing === 'page' ? missing : null;
}
