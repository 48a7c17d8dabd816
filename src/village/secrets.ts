import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** What is stored for one secret: AES-256-GCM's nonce, ciphertext and tag. */
export interface Sealed {
  iv: Buffer;
  ciphertext: Buffer;
  tag: Buffer;
}

/**
 * Seals and opens secrets (Provider keys) with one 32-byte key. AES-256-GCM, a fresh 96-bit nonce per seal, and
 * the secret's name as associated data: a ciphertext copied to another row does not open there. Pure apart from
 * the random nonce.
 */
export class SecretBox {
  readonly #key: Buffer;
  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error('a secrets key is 32 bytes');
    this.#key = key;
  }

  seal(name: string, plaintext: string): Sealed {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    cipher.setAAD(Buffer.from(name));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return { iv, ciphertext, tag: cipher.getAuthTag() };
  }

  /** The plaintext, or undefined when it does not open (another key, another name, altered bytes). */
  open(name: string, sealed: Sealed): string | undefined {
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#key, sealed.iv);
      decipher.setAAD(Buffer.from(name));
      decipher.setAuthTag(sealed.tag);
      return Buffer.concat([decipher.update(sealed.ciphertext), decipher.final()]).toString('utf8');
    } catch {
      return undefined;
    }
  }
}

/** SECRETS_KEY as written in the environment: 64 hex digits or base64 of 32 bytes. */
export function parseSecretsKey(value: string): Buffer | undefined {
  const v = value.trim();
  const bytes = /^[0-9a-f]{64}$/i.test(v) ? Buffer.from(v, 'hex') : Buffer.from(v, 'base64');
  return bytes.length === 32 ? bytes : undefined;
}

/**
 * Offline mode's key when SECRETS_KEY is unset: made once into DATA_DIR/secrets.key (readable by this user
 * only), so `npm start` works with no setup and keys survive a restart. Whoever reads the data folder can open
 * the keys stored beside it: production sets SECRETS_KEY and keeps it elsewhere.
 */
export async function localSecretsKey(dataDir: string): Promise<Buffer> {
  const file = path.resolve(dataDir, 'secrets.key');
  try {
    const key = parseSecretsKey(await readFile(file, 'utf8'));
    if (key) return key;
  } catch {}
  await mkdir(path.dirname(file), { recursive: true });
  const key = randomBytes(32);
  await writeFile(file, `${key.toString('hex')}\n`, { mode: 0o600 });
  return key;
}
