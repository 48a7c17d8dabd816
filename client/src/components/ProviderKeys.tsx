import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { type FormEvent, useState } from 'react';
import { ProviderKeysView } from '../../../src/wire/index.ts';
import { fetchAs } from '../api.ts';
import { useDialogs } from './Dialog.tsx';
import { ErrorNote } from './ErrorNote.tsx';
import { useToast } from './Toast.tsx';

const NAMES = { openai: 'OpenAI', anthropic: 'Anthropic', google: 'Google' } as const;
const ENV = {
  openai: 'OPENAI_API_KEY',
  anthropic: 'ANTHROPIC_API_KEY',
  google: 'GOOGLE_GENERATIVE_AI_API_KEY',
};
/** A Model to try first, said as an example only: the admin types the one they want. */
const EXAMPLE_MODEL = { openai: 'gpt-5-mini', anthropic: 'claude-sonnet-4-5', google: 'gemini-2.5-flash' };
type Provider = keyof typeof NAMES;

/**
 * A Village admin's Provider keys: paste one and the Provider is offered from the next turn. The server answers
 * with where each key comes from and its last four characters; the key typed here is cleared once sent.
 */
export function ProviderKeys() {
  const queryClient = useQueryClient();
  const keys = useQuery({
    queryKey: ['provider-keys'],
    queryFn: () => fetchAs(ProviderKeysView, '/api/village/keys'),
  });
  const [toast, toastElement] = useToast();
  const [dialogs, dialog] = useDialogs();
  const change = useMutation({
    mutationFn: ({ provider, apiKey }: { provider: Provider; apiKey: string | null }) =>
      fetchAs(ProviderKeysView, `/api/village/keys/${provider}`, {
        method: apiKey === null ? 'DELETE' : 'PUT',
        ...(apiKey === null ? {} : { body: { apiKey } }),
      }),
    onSuccess: (view, { provider, apiKey }) => {
      queryClient.setQueryData(['provider-keys'], view);
      queryClient.invalidateQueries({ queryKey: ['village'] });
      toast(
        apiKey === null
          ? `Removed the ${NAMES[provider]} key.`
          : `Saved the ${NAMES[provider]} key. NPCs using ${provider} can answer from their next turn.`,
      );
    },
  });
  if (!keys.data) return <ErrorNote error={keys.error} />;
  return (
    <section className="card provider-keys" aria-labelledby="keys-h">
      <h2 id="keys-h">Provider keys</h2>
      <p className="meta">
        Paste a key to talk to a real Model. It is stored encrypted and never shown again — only its last four
        characters. Then choose the Provider and a Model as the Village default below, or on an NPC.
      </p>
      {!keys.data.canStore && (
        <p className="notice">
          This server has no SECRETS_KEY, so it cannot store keys. Set SECRETS_KEY (see the README) and
          restart.
        </p>
      )}
      {keys.data.keys.map((k) => (
        <KeyRow
          key={k.provider}
          entry={k}
          disabled={!keys.data.canStore || change.isPending}
          onSave={(apiKey) => change.mutateAsync({ provider: k.provider, apiKey }).then(() => true)}
          onRemove={async () => {
            const yes = await dialogs.confirm({
              title: `Remove the ${NAMES[k.provider]} key?`,
              body: `NPCs using ${k.provider} then use the environment’s key if the server has one, else they stop answering until a key is set again.`,
              action: 'Remove',
              danger: true,
            });
            if (yes) change.mutate({ provider: k.provider, apiKey: null });
          }}
        />
      ))}
      <ErrorNote error={change.error} />
      {toastElement}
      {dialog}
    </section>
  );
}

function KeyRow({
  entry,
  disabled,
  onSave,
  onRemove,
}: {
  entry: ProviderKeysView['keys'][number];
  disabled: boolean;
  onSave: (apiKey: string) => Promise<boolean>;
  onRemove: () => void;
}) {
  const [value, setValue] = useState('');
  const p = entry.provider;
  const id = `key-${p}`;
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!value.trim()) return;
    if (await onSave(value).catch(() => false)) setValue('');
  };
  const state = entry.unreadable
    ? 'A stored key cannot be opened with this server’s SECRETS_KEY: paste it again.'
    : entry.source === 'app'
      ? `Set here, ends in …${entry.ending}.`
      : entry.source === 'environment'
        ? `Set by ${ENV[p]} in the environment, ends in …${entry.ending}. A key saved here takes its place.`
        : `Not set. Example Model once set: ${EXAMPLE_MODEL[p]}.`;
  return (
    <form className="key-row" onSubmit={submit} aria-label={`${NAMES[p]} key`}>
      <label htmlFor={id}>{NAMES[p]}</label>
      <p className="meta" id={`${id}-state`}>
        {state}
      </p>
      <div className="row">
        <input
          id={id}
          type="password"
          autoComplete="off"
          spellCheck={false}
          placeholder={entry.source ? 'Paste a new key' : 'Paste the API key'}
          aria-describedby={`${id}-state`}
          value={value}
          onChange={(e) => setValue(e.target.value)}
          disabled={disabled}
        />
        <button type="submit" disabled={disabled || !value.trim()}>
          Save key
        </button>
        {entry.source === 'app' && (
          <button type="button" className="secondary" onClick={onRemove} disabled={disabled}>
            Remove
          </button>
        )}
      </div>
    </form>
  );
}
