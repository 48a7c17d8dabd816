import { confusablesMap } from 'confusables';

/**
 * Letters that a reader takes for Latin ones but that compatibility decomposition (NFKD) leaves alone: the
 * `confusables` library's map (Latin look-alikes across scripts: IPA, Greek, Cyrillic, Cherokee, Lisu, …), and a
 * small table of our own before it for what the map lacks or reads otherwise: small capitals, the negative
 * circled and squared letters, regional indicators, and the Cyrillic and Greek letters that look like Latin ones. Parenthesised letters (⒫, 🄟) decompose to "(p)" and are
 * read as the letter by `unparenthesised`. Keys are code points as written (before case folding: Greek "Η"
 * looks like "H", its lower case "η" like "n").
 */
const TABLE: Record<string, string> = {};

const add = (from: string, to: string) => {
  const f = [...from];
  for (const [i, c] of f.entries()) TABLE[c] = to[i]!;
};

// Small capitals (IPA extensions and phonetic extensions); there is no small capital X.
add('ᴀʙᴄᴅᴇꜰɢʜɪᴊᴋʟᴍɴᴏᴘꞯʀꜱᴛᴜᴠᴡʏᴢ', 'abcdefghijklmnopqrstuvwyz');
// Cyrillic and Greek letters shaped like Latin ones, capitals and small letters.
add('АВЕКМНОРСТУХІЈЅаеорсухіјѕԁһӏԛԝ', 'ABEKMHOPCTYXIJSaeopcyxijsdhlqw');
add('ΑΒΕΖΗΙΚΜΝΟΡΤΥΧοινρυχκ', 'ABEZHIKMNOPTYXoivpuxk');

/** Blocks of 26 letters A–Z: negative circled, negative squared, regional indicators. */
const RUNS = [0x1f150, 0x1f170, 0x1f1e6];

/** `g` (one grapheme) with each look-alike replaced by the Latin letter it shows; `g` itself when none. */
export function unconfused(g: string): string {
  let out = '';
  let changed = false;
  for (const c of g) {
    const cp = c.codePointAt(0)!;
    let to = TABLE[c];
    if (to === undefined && cp >= 0x1f150 && cp < 0x1f200) {
      const run = RUNS.find((r) => cp >= r && cp < r + 26);
      if (run !== undefined) to = String.fromCharCode(65 + cp - run);
    }
    // Past Latin Extended-B only: below it NFKD and case folding read letters better (the map takes ß for B).
    if (to === undefined && cp >= 0x250) {
      const mapped = confusablesMap.get(c);
      if (mapped !== undefined && /^[A-Za-z]$/.test(mapped)) to = mapped;
    }
    if (to !== undefined) changed = true;
    out += to ?? c;
  }
  return changed ? out : g;
}

const PARENTHESISED = /^\(([\p{L}\p{N}]+)\)$/u;

/** A decomposed "(p)" (from ⒫ or 🄟) as the letter it encloses; anything else as it is. */
export function unparenthesised(decomposed: string): string {
  return PARENTHESISED.exec(decomposed)?.[1] ?? decomposed;
}
