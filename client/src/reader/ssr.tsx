// Rendered on the server too, where tsx compiles it by the root tsconfig (which covers only src/, test/ and
// scripts/): this pragma gives it the automatic JSX runtime there (test/web/ssrRuntime.test.ts checks).
/** @jsxRuntime automatic @jsxImportSource react */
import { renderToString } from 'react-dom/server';
import { ReaderRoot } from './Root.tsx';
import type { ReaderData } from './types.ts';

/**
 * The reader's pages as HTML, on the server: the same components the browser hydrates (reader.tsx), rendered
 * whole, so the page reads in full with no script (a crawler, a reader with JavaScript off). React escapes every
 * text and attribute; the page around it is src/web/readerPage.ts. A string, not a stream: the page is small,
 * and a whole body gives the ETag.
 */
export function renderReader(data: ReaderData): string {
  return renderToString(<ReaderRoot data={data} />);
}
