/** A server error shown in place, as the message the server sent. */
export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  const message = error instanceof Error ? error.message : String(error);
  return (
    <p role="alert" className="error">
      {message}
    </p>
  );
}
