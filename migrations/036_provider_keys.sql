-- Provider keys a Village admin adds in the app (ADR 0055). Only ciphertext is stored: AES-256-GCM under the
-- instance's SECRETS_KEY, the provider id as associated data (a row's key cannot be moved to another provider).
-- `ending` is the key's last four characters, the most of it the app ever shows again.
create table provider_keys (
  provider_id text primary key check (provider_id in ('openai', 'anthropic', 'google')),
  iv bytea not null check (length(iv) = 12),
  ciphertext bytea not null check (length(ciphertext) between 1 and 2048),
  tag bytea not null check (length(tag) = 16),
  ending text not null check (length(ending) <= 4),
  updated_by text not null,
  updated_at timestamptz not null default now()
);
