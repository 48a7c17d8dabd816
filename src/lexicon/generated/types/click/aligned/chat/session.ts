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

const is$typed = _is$typed,
  validate = _validate
const id = 'click.aligned.chat.session'

export interface Main {
  $type: 'click.aligned.chat.session'
  /** What the conversation is called. Retitling rewrites this record alone (putRecord); the turns point at the session by at-uri, not by CID, so they stay valid. */
  title: string
  /** When the conversation began: its first turn, not the moment it was published. */
  createdAt: string
  /** Who the author talked to: the agents (characters) that speak in this session, so a reader knows who is who before reading a turn. Each assistant turn still names its own model. */
  agents?: Agent[]
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

/** One agent in the conversation, as its author presented it. Not an account: agents have no identity on the network. */
export interface Agent {
  $type?: 'click.aligned.chat.session#agent'
  /** The agent's name, as its turns show it. */
  name: string
  /** What the agent is presented as, e.g. 'Librarian'. */
  role?: string
  /** A sentence or two about the agent, as its author described it. Its full instructions are never published. */
  description?: string
  /** The model the agent ran on when the session was published, e.g. 'anthropic/claude-sonnet'. Each turn records the model that actually produced it. */
  model?: string
  /** The agent's picture, as its author chose to publish it: a blob in the author's repository. Optional; a reader without it shows the name alone. */
  avatar?: BlobRef
}

const hashAgent = 'agent'

export function isAgent<V>(v: V) {
  return is$typed(v, id, hashAgent)
}

export function validateAgent<V>(v: V) {
  return validate<Agent & V>(v, id, hashAgent)
}
