/**
 * Which versions of a batch's records to write, and in what order, so that the index ends as the same events
 * applied one at a time would leave it. A batch upsert may not touch a row twice: each stage holds a record once,
 * and most batches are one stage.
 *
 * One at a time, a version with a rev replaces only a row of an older rev (or of none); one without (a Jetstream
 * commit whose rev is not a TID) replaces whatever is there, and the row keeps its rev. So of one record's versions
 * in a batch two matter, written in the batch's order: the last without a rev, and the newest by rev (the last
 * of those no earlier one is newer than; the others are refused by it, or overwritten with it). If the newest
 * comes first, the row keeps its rev under the version without; if it comes after, it replaces that version
 * unless the row is newer still. A backfill's versions are decided by time and carry no revs: one stage, the
 * newest by rev, else the last.
 */
export function stagesOf<T extends { uri: string; rev?: string }>(records: T[], byTime: boolean): T[][] {
  if (byTime) {
    const newest = new Map<string, T>();
    for (const r of records) {
      const seen = newest.get(r.uri);
      if (!seen?.rev || !r.rev || r.rev >= seen.rev) newest.set(r.uri, r);
    }
    return [[...newest.values()]];
  }
  const versions = new Map<string, { withRev?: T; without?: T; withoutLast?: boolean }>();
  for (const r of records) {
    const v = versions.get(r.uri) ?? {};
    versions.set(r.uri, v);
    if (!r.rev) {
      v.without = r;
      v.withoutLast = true;
    } else if (!v.withRev || r.rev >= v.withRev.rev!) {
      v.withRev = r;
      v.withoutLast = false;
    }
  }
  const first: T[] = [];
  const second: T[] = [];
  for (const { withRev, without, withoutLast } of versions.values()) {
    const order = withoutLast ? [withRev, without] : [without, withRev];
    const [a, b] = order.filter((x) => x !== undefined);
    first.push(a!);
    if (b) second.push(b);
  }
  return second.length ? [first, second] : [first];
}
