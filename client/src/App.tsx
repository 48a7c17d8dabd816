import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState, useSyncExternalStore } from 'react';
import { NavLink, Outlet, useLocation } from 'react-router';
import { MeResponse } from '../../src/wire/index.ts';
import { ApiError, api, fetchAs } from './api.ts';
import { ErrorNote } from './components/ErrorNote.tsx';
import { SignInPage } from './pages/SignInPage.tsx';
import { onSessionEnd, sessionEnd } from './session.ts';

/** Where the Player is now, to come back to after signing in. */
const hereNow = () => `${location.pathname}${location.search}${location.hash}`;

/**
 * The signed-in frame: navigation beside the page (on a phone, a bar with a Menu button that opens it, so the
 * page keeps the screen). Signed out (401), the sign-in page instead.
 */
export function App() {
  const queryClient = useQueryClient();
  const [menuOpen, setMenuOpen] = useMenu();
  const ended = useSyncExternalStore(onSessionEnd, sessionEnd);
  const me = useQuery({ queryKey: ['me'], queryFn: () => fetchAs(MeResponse, '/api/me') });
  const logout = useMutation({
    mutationFn: () => api('/api/auth/logout', { method: 'POST' }),
    onSuccess: () => queryClient.clear(),
  });

  if (me.isPending) return <p className="loading">Loading…</p>;
  if (me.error) {
    if (me.error instanceof ApiError && me.error.status === 401) {
      return (
        <SignInPage
          reason={me.error.code === 'SESSION_ENDED' ? me.error.message : undefined}
          returnTo={hereNow()}
        />
      );
    }
    return <ErrorNote error={me.error} />;
  }
  // Signed in a moment ago, and now any call answered 401: the session is over, and the page says so once.
  if (ended) {
    return (
      <SignInPage
        reason={
          ended.code === 'SESSION_ENDED'
            ? ended.message
            : 'You have been signed out: your session here has ended. Sign in again to go on where you were.'
        }
        returnTo={hereNow()}
        handle={me.data.handle ?? undefined}
      />
    );
  }
  return (
    <div className="shell">
      <a className="skip" href="#main">
        Skip to content
      </a>
      <Nav
        open={menuOpen}
        toggle={() => setMenuOpen((open) => !open)}
        who={me.data.handle ?? me.data.did}
        onSignOut={() => logout.mutate()}
      />
      <main id="main" className="page">
        <Outlet />
      </main>
    </div>
  );
}

/** The menu on a phone: going somewhere closes it; so does Escape. */
function useMenu() {
  const [menuOpen, setMenuOpen] = useState(false);
  const { pathname } = useLocation();
  useEffect(() => setMenuOpen(false), [pathname]);
  useEffect(() => {
    if (!menuOpen) return;
    const onKey = (e: KeyboardEvent) => e.key === 'Escape' && setMenuOpen(false);
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [menuOpen]);
  return [menuOpen, setMenuOpen] as const;
}

function Nav(props: { open: boolean; toggle: () => void; who: string; onSignOut: () => void }) {
  return (
    <nav className={props.open ? 'sidebar open' : 'sidebar'} aria-label="Main">
      <div className="bar">
        <div className="brand">AgentsVille</div>
        <button
          type="button"
          className="menu-toggle"
          aria-expanded={props.open}
          aria-controls="nav-links"
          onClick={props.toggle}
        >
          {props.open ? 'Close' : 'Menu'}
        </button>
      </div>
      <div id="nav-links" className="nav-links">
        <NavLink to="/" end>
          Conversations
        </NavLink>
        <NavLink to="/npcs">NPCs</NavLink>
        <NavLink to="/tools">Tools &amp; Memory</NavLink>
        <NavLink to="/usage">Usage</NavLink>
        <NavLink to="/village">Village</NavLink>
        <span className="nav-split" aria-hidden="true" />
        <NavLink to={`/profile/${props.who}`}>My published</NavLink>
        <NavLink to="/threads">All published</NavLink>
        <div className="who">
          <span>@{props.who}</span>
          <button type="button" className="link" onClick={props.onSignOut}>
            Sign out
          </button>
        </div>
      </div>
    </nav>
  );
}
