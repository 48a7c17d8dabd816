/**
 * GENERATED CODE - DO NOT MODIFY
 */
import { type ValidationResult, BlobRef } from '@atproto/lexicon'
import { CID } from 'multiformats/cid'
import { validate as _validate } from '../../../../lexicons.js'
import {
  type $Typed,
  is$typed as _is$typed,
  type OmitKey,
} from '../../../../util.js'
import type * as ComAtprotoRepoStrongRef from '../../../com/atproto/repo/strongRef.js'

const is$typed = _is$typed,
  validate = _validate
const id = 'click.aligned.chat.message'

export interface Main {
  $type: 'click.aligned.chat.message'
  /** The click.aligned.chat.session this turn belongs to. A plain at-uri, deliberately not a strongRef: the session may be retitled later, and a strongRef would pin a CID that then no longer exists. */
  session: string
  /** Who is speaking. */
  role: 'user' | 'assistant' | (string & {})
  /** When the turn happened. A withheld turn says only what its author chose: by default the time of the last turn published before it, or the start of its day (UTC) when none was. */
  createdAt: string
  /** What was said. The assistant's own words, so they are stored rather than referenced — there is nowhere else they exist. Runs of █ are redactions: spans the author covered rather than withhold the whole turn over, of a fixed width so the bar does not say how long the words were. The covered words were never published and are not recoverable from this record; a viewer that does nothing special shows the bars as text, which is the honest reading. */
  text?: string
  /** This turn happened and its content was not published. Every turn of a published conversation gets a record, so one published in part has visible holes rather than invisible ones — an answer to a question that was held back would otherwise read as an answer to whatever came before it. A conversation nobody published has no records at all, withheld ones included: a record saying only that somebody spoke at a time is a hole in nothing. Stated rather than inferred from an empty `text`, so a reader never has to guess whether a turn was withheld or simply empty. Absent means published. */
  withheld?: boolean
  /** The languages the text is in, as BCP-47 tags, most used first (as app.bsky.feed.post's langs). */
  langs?: string[]
  /** The model that produced an assistant turn, e.g. 'greenpt/minimax-m2.5'. Present on assistant turns so a reader never has to guess whether they are reading a person or a machine, and can tell which machine. */
  model?: string
  /** The tools the agent called on this turn, in order. Published because the point of a conversation like this is usually *how* the answer was reached; a reply with the working removed is the least interesting part of it. */
  steps?: Step[]
  /** Records this turn is about, as strong references. Pointed at, never copied: a copy would survive the author deleting the original, and it should not. A strongRef pins the CID, so a reader gets the version that was actually discussed and can tell when it has since changed — which is what you want for a post, whose text is the thing. */
  refs?: ComAtprotoRepoStrongRef.Main[]
  /** atproto accounts this turn is about, as DIDs. Deliberately not strongRefs to their profile records: a person is not a version of their bio, and pinning one would make a turn about someone go stale the next time they change their avatar. A DID is the identity, and it is the identity that was being discussed. */
  mentions?: string[]
  [k: string]: unknown
}

const hashMain = 'main'

export function isMain<V>(v: V) {
  return is$typed(v, id, hashMain)
}

export function validateMain<V>(v: V) {
  return validate<Main & V>(v, id, hashMain, true)
}

export {
  type Main as Record,
  isMain as isRecord,
  validateMain as validateRecord,
}

/** One tool call. The name and a short summary of what it was for — never the output, which is often large, often private, and reproducible by anyone holding the same tools. */
export interface Step {
  $type?: 'click.aligned.chat.message#step'
  /** Tool name as the agent called it, e.g. 'search-posts'. */
  name: string
  /** One line on what it was called for or what came back. */
  summary?: string
  /** Whether the call errored. Published rather than hidden: a workflow that shows only the calls that worked is a misleading picture of working with an agent. */
  failed?: boolean
}

const hashStep = 'step'

export function isStep<V>(v: V) {
  return is$typed(v, id, hashStep)
}

export function validateStep<V>(v: V) {
  return validate<Step & V>(v, id, hashStep)
}
