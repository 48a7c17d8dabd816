import { useMutation, useQuery } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { LoginResponse, SignInOptions } from '../../../src/wire/index.ts';
import { fetchAs } from '../api.ts';
import { ErrorNote } from '../components/ErrorNote.tsx';
import { useDocumentTitle } from '../title.ts';

/**
 * Signing in: a handle, or a demo account in offline mode. `reason` says why the Player is here when their session
 * ended (said once, here, in place of the app); `returnTo` is the page they go back to once signed in.
 */
export function SignInPage({
  reason,
  returnTo,
  handle,
}: {
  reason?: string;
  returnTo?: string;
  handle?: string;
}) {
  useDocumentTitle(reason ? 'Signed out' : 'Sign in');
  const [identifier, setIdentifier] = useState(handle ?? '');
  const options = useQuery({
    queryKey: ['auth-options'],
    queryFn: () => fetchAs(SignInOptions, '/api/auth/options'),
  });
  const login = useMutation({
    mutationFn: (id: string) =>
      fetchAs(LoginResponse, '/api/auth/login', {
        body: { identifier: id, ...(returnTo && returnTo !== '/' ? { returnTo } : {}) },
      }),
    onSuccess: ({ url }) => window.location.assign(url),
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    login.mutate(identifier);
  };
  const demo = options.data?.demoAccounts ?? [];
  const offline = options.data?.network === 'local';
  return (
    <main className="signin" id="main">
      <h1>AgentsVille</h1>
      <p>Talk with AI characters, and publish the conversations you choose to your own Bluesky repo.</p>
      {reason && (
        <p className="notice" role="alert">
          {reason}
        </p>
      )}
      <form onSubmit={submit} className="signin-form">
        <label htmlFor="identifier">Your handle</label>
        <div className="row">
          <input
            id="identifier"
            autoComplete="username"
            placeholder={offline ? (demo[0]?.handle ?? 'alice.test') : 'alice.bsky.social'}
            value={identifier}
            onChange={(e) => setIdentifier(e.target.value)}
            required
          />
          <button type="submit" disabled={login.isPending}>
            Sign in
          </button>
        </div>
      </form>
      {offline && (
        <p className="meta" id="offline-note">
          Offline mode: this AgentsVille runs its own small ATProto network, so only its local accounts exist
          — a Bluesky handle cannot sign in here. Use a demo account below.
        </p>
      )}
      <ErrorNote error={login.error} />
      {demo.length > 0 && (
        <section aria-labelledby="demo-heading" className="demo">
          <h2 id="demo-heading">Demo accounts (offline mode)</h2>
          <ul>
            {demo.map((a) => (
              <li key={a.handle}>
                <button type="button" onClick={() => login.mutate(a.handle)}>
                  Sign in as {a.handle}
                </button>{' '}
                password <code>{a.password}</code>
              </li>
            ))}
          </ul>
        </section>
      )}
    </main>
  );
}
