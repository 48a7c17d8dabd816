import { JSONParser, TokenType } from '@streamparser/json';

/**
 * JSON from a Player's file, parsed a slice at a time and measured while it is read: the first value past a limit
 * ends the parse with a JsonLimitError, before the rest is looked at. Between slices the event loop runs other
 * requests, so a big or hostile file never holds the process (issue 25: `JSON.parse` of 6.9 million `{}` stalled
 * every client for 26 s, and the walk after it grew the heap by a gigabyte).
 */
export interface JsonLimits {
  /** Values and keys in the whole document. */
  nodes: number;
  /** Containers within containers. */
  depth: number;
  /** Elements of one array, members of one object. */
  items: number;
  /** Characters (UTF-16 code units) of one string. */
  chars: number;
}

export class JsonLimitError extends Error {
  constructor(
    /** 413 for too much, 400 for not JSON or nested too deep. */
    readonly status: 400 | 413,
    readonly code: 'INVALID_JSON' | 'JSON_TOO_DEEP' | 'JSON_TOO_MANY_VALUES' | 'JSON_TEXT_TOO_LONG',
    message: string,
  ) {
    super(message);
  }
}

/**
 * One slice parsed per turn of the event loop: a few milliseconds of work on a quiet machine (the parser takes
 * ~0.3 µs a byte at worst, on a file of `{},` repeated), so other requests wait no longer than that.
 */
const SLICE = 16 * 1024;
const n = (x: number) => x.toLocaleString('en');

/** `what` names the document in the messages ("The file", "The card"). */
export async function parseBoundedJson(
  bytes: Uint8Array,
  limits: JsonLimits,
  what: string,
): Promise<unknown> {
  const reader = new BoundedJsonReader(limits, what);
  await reader.write(bytes);
  return reader.end();
}

/**
 * The same parse fed as the bytes arrive (a request body chunk by chunk): a file past a limit is refused at the
 * chunk that crosses it, so the server neither reads nor keeps the rest (issue 25: a 20 MB import of `{}` was read
 * and held whole, then refused after its first 150 KB). `write` parses a slice per turn of the event loop.
 */
export class BoundedJsonReader {
  private readonly parser = new JSONParser();
  private result: unknown;
  private done = false;
  private read = 0;
  /** Where the last token began: a run far longer than the longest string allowed is a string being too long. */
  private lastToken = 0;
  private failed: JsonLimitError | undefined;

  constructor(
    private readonly limits: JsonLimits,
    private readonly what: string,
  ) {
    // Every value is handed to onValue (a `paths` selector, matched per value, was twice as slow); the whole
    // document is the one with nothing above it.
    this.parser.onValue = ({ value, stack }) => {
      if (stack.length > 0) return;
      this.result = value;
      this.done = true;
    };
    const count = counter(limits, what);
    this.parser.onToken = ({ token, value, offset }) => {
      this.lastToken = offset;
      count(token, value);
    };
  }

  async write(chunk: Uint8Array): Promise<void> {
    if (this.failed) throw this.failed;
    let at = 0;
    // A byte-order mark some editors write is not JSON: it is skipped.
    if (this.read === 0 && chunk[0] === 0xef && chunk[1] === 0xbb && chunk[2] === 0xbf) {
      at = 3;
      this.read = 3;
    }
    try {
      while (at < chunk.length) {
        const slice = chunk.subarray(at, Math.min(at + SLICE, chunk.length));
        // Bytes after the document's end (trailing whitespace aside) make it not JSON: the parser says so.
        this.parser.write(slice);
        at += slice.length;
        this.read += slice.length;
        // \uXXXX spells one character in six bytes: past that many, no string within the limit is still open.
        if (this.read - this.lastToken > this.limits.chars * 6 + SLICE) throw tooLong(this.limits, this.what);
        if (at < chunk.length) await new Promise((resolve) => setImmediate(resolve));
      }
    } catch (e) {
      throw this.fail(e);
    }
  }

  /** The document, once every byte was written; a document that is not whole is not JSON. */
  end(): unknown {
    if (this.failed) throw this.failed;
    try {
      if (!this.done) this.parser.end();
    } catch (e) {
      throw this.fail(e);
    }
    if (!this.done)
      throw this.fail(
        new JsonLimitError(400, 'INVALID_JSON', `${this.what} is not valid JSON (it is empty).`),
      );
    return this.result;
  }

  private fail(e: unknown): JsonLimitError {
    this.failed =
      e instanceof JsonLimitError
        ? e
        : new JsonLimitError(400, 'INVALID_JSON', `${this.what} is not valid JSON.`);
    return this.failed;
  }
}

/** What is counted as tokens arrive: every value and key, how deep, how wide each container, how long each string. */
function counter(limits: JsonLimits, what: string) {
  let nodes = 0;
  /** Per open container: true for an object, and how many items it has so far. */
  const open: { object: boolean; items: number }[] = [];
  const item = () => {
    const top = open.at(-1);
    if (top && ++top.items > limits.items)
      throw new JsonLimitError(
        413,
        'JSON_TOO_MANY_VALUES',
        `${what} has a list or object of more than ${n(limits.items)} items, more than this app keeps.`,
      );
  };
  return (token: TokenType, value: unknown) => {
    switch (token) {
      case TokenType.COMMA:
        return;
      case TokenType.COLON:
        return item();
      case TokenType.RIGHT_BRACE:
      case TokenType.RIGHT_BRACKET:
        open.pop();
        return;
    }
    if (++nodes > limits.nodes)
      throw new JsonLimitError(
        413,
        'JSON_TOO_MANY_VALUES',
        `${what} holds more than ${n(limits.nodes)} values, more than this app keeps.`,
      );
    if (token === TokenType.STRING && (value as string).length > limits.chars) throw tooLong(limits, what);
    // An object's members are counted at their colon; an array's elements as they start.
    if (!open.at(-1)?.object) item();
    if (token === TokenType.LEFT_BRACE || token === TokenType.LEFT_BRACKET) {
      open.push({ object: token === TokenType.LEFT_BRACE, items: 0 });
      if (open.length > limits.depth)
        throw new JsonLimitError(400, 'JSON_TOO_DEEP', `${what} nests deeper than ${limits.depth} levels.`);
    }
  };
}

const tooLong = (limits: JsonLimits, what: string) =>
  new JsonLimitError(
    413,
    'JSON_TEXT_TOO_LONG',
    `${what} has a text longer than ${n(limits.chars)} characters, more than this app keeps.`,
  );

/**
 * The same limits over a value already parsed (a JSON body of at most 1 MB, read by the JSON body reader), walked
 * without recursion, so both ways in are held to the same bounds.
 */
export function checkJsonLimits(value: unknown, limits: JsonLimits, what: string): void {
  const count = counter(limits, what);
  const stack: unknown[] = [value];
  // A marker closes a container once its members are walked.
  const CLOSE = Symbol('close');
  while (stack.length) {
    const v = stack.pop();
    if (v === CLOSE) count(TokenType.RIGHT_BRACE, undefined);
    else if (v instanceof Key) {
      count(TokenType.STRING, v.key);
      count(TokenType.COLON, undefined);
    } else if (Array.isArray(v)) {
      count(TokenType.LEFT_BRACKET, undefined);
      stack.push(CLOSE);
      for (let i = v.length - 1; i >= 0; i--) stack.push(v[i]);
    } else if (v && typeof v === 'object') {
      count(TokenType.LEFT_BRACE, undefined);
      stack.push(CLOSE);
      for (const [k, x] of Object.entries(v).reverse()) stack.push(x, new Key(k));
    } else if (typeof v === 'string') count(TokenType.STRING, v);
    else count(TokenType.NULL, null);
  }
}
class Key {
  constructor(readonly key: string) {}
}
