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
const id = 'click.aligned.chat.defs'

/** Who published a session. */
export interface Author {
  $type?: 'click.aligned.chat.defs#author'
  did: string
  /** Absent when the handle does not resolve. */
  handle?: string
}

const hashAuthor = 'author'

export function isAuthor<V>(v: V) {
  return is$typed(v, id, hashAuthor)
}

export function validateAuthor<V>(v: V) {
  return validate<Author & V>(v, id, hashAuthor)
}

export interface SessionView {
  $type?: 'click.aligned.chat.defs#sessionView'
  uri: string
  cid: string
  author: Author
  /** The click.aligned.chat.session record, as published. */
  record: { [_ in string]: unknown }
  /** How many turns the index holds for this session. */
  turns?: number
  indexedAt: string
}

const hashSessionView = 'sessionView'

export function isSessionView<V>(v: V) {
  return is$typed(v, id, hashSessionView)
}

export function validateSessionView<V>(v: V) {
  return validate<SessionView & V>(v, id, hashSessionView)
}

export interface MessageView {
  $type?: 'click.aligned.chat.defs#messageView'
  uri: string
  cid: string
  /** The click.aligned.chat.message record, as published. */
  record: { [_ in string]: unknown }
}

const hashMessageView = 'messageView'

export function isMessageView<V>(v: V) {
  return is$typed(v, id, hashMessageView)
}

export function validateMessageView<V>(v: V) {
  return validate<MessageView & V>(v, id, hashMessageView)
}
