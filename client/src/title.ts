import { useEffect } from 'react';

/** The browser tab says which page this is (and which Conversation or thread). */
export function useDocumentTitle(title: string | undefined | null): void {
  useEffect(() => {
    document.title = title ? `${title} · AgentsVille` : 'AgentsVille';
  }, [title]);
}
