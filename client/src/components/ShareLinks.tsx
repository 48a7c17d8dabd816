import { useState } from 'react';

/**
 * After publishing: a Bluesky post prefilled with the thread's title and address (Bluesky's compose intent; no
 * extra OAuth scope), and the address copied for anywhere else. `title` is the published title (bars and all).
 */
export function ShareLinks({ title, path }: { title: string; path: string }) {
  const [copied, setCopied] = useState<string | null>(null);
  const url = new URL(path, window.location.origin).href;
  const intent = `https://bsky.app/intent/compose?text=${encodeURIComponent(`${title}\n${url}`)}`;
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(url);
      setCopied('Link copied.');
    } catch {
      setCopied(`Copy this link: ${url}`);
    }
  };
  return (
    <p className="share-links">
      <a href={intent} target="_blank" rel="noopener noreferrer" data-testid="share-bluesky">
        Share on Bluesky
      </a>{' '}
      <button type="button" className="link" onClick={() => void copy()}>
        Copy link
      </button>{' '}
      <span role="status">{copied}</span>
    </p>
  );
}
