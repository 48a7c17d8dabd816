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
import type * as ClickAlignedChatDefs from './defs.js'

const is$typed = _is$typed,
  validate = _validate
const id = 'click.aligned.chat.listSessions'

export type QueryParams = {
  /** Only this author's sessions (handle or DID). */
  actor?: string
  limit: number
  cursor?: string
}
export type InputSchema = undefined

export interface OutputSchema {
  sessions: ClickAlignedChatDefs.SessionView[]
  cursor?: string
}

export type HandlerInput = void

export interface HandlerSuccess {
  encoding: 'application/json'
  body: OutputSchema
  headers?: { [key: string]: string }
}

export interface HandlerError {
  status: number
  message?: string
}

export type HandlerOutput = HandlerError | HandlerSuccess
