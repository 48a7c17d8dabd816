import { readFileSync } from 'node:fs';
import path from 'node:path';
import { RelaxNGValidator, XmlDocument, type XmlElement } from 'libxml2-wasm';

// An Atom feed checked as a feed validator does: libxml2 (compiled to WebAssembly, no native build) parses it —
// a document that is not well-formed XML is refused there — and validates it against RFC 4287's RELAX NG
// schema (./atom.rng); then the rules the RFC states beside the schema (its Appendix B's Schematron and
// sections 4.1.1, 4.1.2, 4.2.6), which RELAX NG cannot say.

const NS = { atom: 'http://www.w3.org/2005/Atom' };
let schema: RelaxNGValidator | undefined;
function validator(): RelaxNGValidator {
  if (!schema) {
    const rng = XmlDocument.fromString(readFileSync(path.join(import.meta.dirname, 'atom.rng'), 'utf8'));
    try {
      schema = RelaxNGValidator.fromDoc(rng);
    } finally {
      rng.dispose();
    }
  }
  return schema;
}

const absoluteIri = (s: string) => {
  try {
    return !!new URL(s).protocol;
  } catch {
    return false;
  }
};

/** The RFC's rules the schema cannot express, for a feed or an entry element. */
function ruleErrors(feed: XmlElement): string[] {
  const errors: string[] = [];
  const text = (e: XmlElement, xpath: string) => (e.get(xpath, NS) as XmlElement | null)?.content ?? null;
  const entries = feed.find('atom:entry', NS) as XmlElement[];
  for (const [where, el] of [
    ['feed', feed],
    ...entries.map((e, i) => [`entry ${i + 1}`, e] as const),
  ] as const) {
    // 4.2.6: an id is an absolute IRI.
    const id = text(el, 'atom:id');
    if (id !== null && !absoluteIri(id.trim()))
      errors.push(`${where}: atom:id is not an absolute IRI: ${id}`);
    // 4.1.1 / 4.1.2: no two alternate links with the same type and hreflang.
    const alternates = (el.find("atom:link[not(@rel) or @rel='alternate']", NS) as XmlElement[]).map(
      (l) => `${l.attr('type')?.value ?? ''}|${l.attr('hreflang')?.value ?? ''}`,
    );
    if (new Set(alternates).size !== alternates.length)
      errors.push(`${where}: two alternate links share a type and hreflang`);
    for (const l of el.find('atom:link', NS) as XmlElement[]) {
      const href = l.attr('href')?.value ?? '';
      if (!URL.canParse(href, 'http://base.invalid/'))
        errors.push(`${where}: link href is not an IRI: ${href}`);
    }
  }
  // 4.1.1: a feed has an author unless every entry names its own.
  if (!feed.get('atom:author', NS))
    for (const [i, e] of entries.entries())
      if (!e.get('atom:author | atom:source/atom:author', NS))
        errors.push(`entry ${i + 1}: no atom:author, and the feed has none`);
  for (const [i, e] of entries.entries()) {
    // 4.1.2: an entry without content has an alternate link; content by reference asks for a summary.
    if (!e.get('atom:content', NS) && !e.get("atom:link[not(@rel) or @rel='alternate']", NS))
      errors.push(`entry ${i + 1}: neither atom:content nor an alternate link`);
    if (e.get('atom:content[@src]', NS) && !e.get('atom:summary', NS))
      errors.push(`entry ${i + 1}: content by reference without atom:summary`);
  }
  return errors;
}

/** Why the document is not a valid Atom feed (an empty list when it is). */
export function atomErrors(xml: string): string[] {
  let doc: XmlDocument;
  try {
    doc = XmlDocument.fromString(xml);
  } catch (e) {
    return [`not well-formed XML: ${(e as Error).message}`];
  }
  try {
    try {
      validator().validate(doc);
    } catch (e) {
      const details = (e as { details?: { message: string; line?: number }[] }).details;
      return details?.length
        ? details.map((d) => `line ${d.line ?? '?'}: ${d.message.trim()}`)
        : [(e as Error).message];
    }
    const root = doc.root;
    if (root.name !== 'feed') return [`the root is atom:${root.name}, not atom:feed`];
    return ruleErrors(root);
  } finally {
    doc.dispose();
  }
}
