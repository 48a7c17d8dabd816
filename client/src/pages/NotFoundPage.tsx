import { Link, useLocation } from 'react-router';
import { ReaderHeader } from '../components/ReaderHeader.tsx';
import { useDocumentTitle } from '../title.ts';

/**
 * An address the app has no page for (a mistyped or old link). Outside the signed-in frame, since a reader with
 * no account can land here too: it says what happened and offers the ways back.
 */
export function NotFoundPage() {
  useDocumentTitle('Page not found');
  const { pathname } = useLocation();
  return (
    <main className="reader" id="main">
      <ReaderHeader />
      <h1>Page not found</h1>
      <p>
        There is no page at <code>{pathname}</code>. The link may be mistyped, or what it pointed to has
        moved.
      </p>
      <p>
        <Link to="/">Go to your Conversations</Link> or{' '}
        <Link to="/threads">read published conversations</Link>.
      </p>
    </main>
  );
}
