import { useQuery } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { Link } from 'react-router';
import { SearchResponse } from '../../../src/wire/index.ts';
import { fetchAs } from '../api.ts';
import { ErrorNote } from './ErrorNote.tsx';

/** Search across the Player's Conversations; each result opens the Conversation at that turn. */
export function SearchBox() {
  const [text, setText] = useState('');
  const [q, setQ] = useState('');
  // Asked once typing pauses, not on every key.
  useEffect(() => {
    const t = setTimeout(() => setQ(text.trim()), 250);
    return () => clearTimeout(t);
  }, [text]);
  const results = useQuery({
    queryKey: ['search', q],
    queryFn: ({ signal }) => fetchAs(SearchResponse, `/api/search?q=${encodeURIComponent(q)}`, { signal }),
    enabled: q.length > 0,
    staleTime: 10_000,
  });
  return (
    <search className="search card">
      <label htmlFor="search-input">Search your conversations</label>
      <input
        id="search-input"
        type="search"
        value={text}
        maxLength={200}
        placeholder="A word you remember…"
        onChange={(e) => setText(e.target.value)}
      />
      <ErrorNote error={results.error} />
      {q && results.data && (
        <ol className="search-results" aria-label="Search results">
          {results.data.results.map((r) => (
            <li key={r.messageId} className="search-hit">
              <Link className="search-link" to={`/c/${r.conversationId}?at=${r.messageId}`}>
                <span className="search-title">{r.conversationTitle ?? 'New conversation'}</span>
                <span className="search-meta">
                  {r.role === 'player' ? 'You' : (r.npcName ?? 'NPC')} · {r.createdAt.toLocaleString()}
                </span>
                <span className="search-snippet">
                  {r.snippet.map((run, i) =>
                    run.hit ? <mark key={i}>{run.text}</mark> : <span key={i}>{run.text}</span>,
                  )}
                </span>
              </Link>
            </li>
          ))}
          {results.data.results.length === 0 && (
            <li className="search-hit search-empty">Nothing found for “{q}”.</li>
          )}
        </ol>
      )}
    </search>
  );
}
