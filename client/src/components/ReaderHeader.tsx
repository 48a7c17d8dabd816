import { Link } from 'react-router';

/** The reader's way around: home to the app, and the list of published conversations. */
export function ReaderHeader() {
  return (
    <header className="reader-header">
      <Link to="/" className="brand">
        AgentsVille
      </Link>
      <nav aria-label="Reader">
        <Link to="/threads">All published conversations</Link>
      </nav>
    </header>
  );
}
