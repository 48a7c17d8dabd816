/**
 * GENERATED CODE - DO NOT MODIFY
 */
import {
  type Auth,
  type Options as XrpcOptions,
  Server as XrpcServer,
  type StreamConfigOrHandler,
  type MethodConfigOrHandler,
  createServer as createXrpcServer,
} from '@atproto/xrpc-server'
import { schemas } from './lexicons.js'
import * as ClickAlignedChatGetThread from './types/click/aligned/chat/getThread.js'
import * as ClickAlignedChatListSessions from './types/click/aligned/chat/listSessions.js'

export function createServer(options?: XrpcOptions): Server {
  return new Server(options)
}

export class Server {
  xrpc: XrpcServer
  click: ClickNS
  com: ComNS

  constructor(options?: XrpcOptions) {
    this.xrpc = createXrpcServer(schemas, options)
    this.click = new ClickNS(this)
    this.com = new ComNS(this)
  }
}

export class ClickNS {
  _server: Server
  aligned: ClickAlignedNS

  constructor(server: Server) {
    this._server = server
    this.aligned = new ClickAlignedNS(server)
  }
}

export class ClickAlignedNS {
  _server: Server
  chat: ClickAlignedChatNS

  constructor(server: Server) {
    this._server = server
    this.chat = new ClickAlignedChatNS(server)
  }
}

export class ClickAlignedChatNS {
  _server: Server

  constructor(server: Server) {
    this._server = server
  }

  getThread<A extends Auth = void>(
    cfg: MethodConfigOrHandler<
      A,
      ClickAlignedChatGetThread.QueryParams,
      ClickAlignedChatGetThread.HandlerInput,
      ClickAlignedChatGetThread.HandlerOutput
    >,
  ) {
    const nsid = 'click.aligned.chat.getThread' // @ts-ignore
    return this._server.xrpc.method(nsid, cfg)
  }

  listSessions<A extends Auth = void>(
    cfg: MethodConfigOrHandler<
      A,
      ClickAlignedChatListSessions.QueryParams,
      ClickAlignedChatListSessions.HandlerInput,
      ClickAlignedChatListSessions.HandlerOutput
    >,
  ) {
    const nsid = 'click.aligned.chat.listSessions' // @ts-ignore
    return this._server.xrpc.method(nsid, cfg)
  }
}

export class ComNS {
  _server: Server
  atproto: ComAtprotoNS

  constructor(server: Server) {
    this._server = server
    this.atproto = new ComAtprotoNS(server)
  }
}

export class ComAtprotoNS {
  _server: Server
  repo: ComAtprotoRepoNS

  constructor(server: Server) {
    this._server = server
    this.repo = new ComAtprotoRepoNS(server)
  }
}

export class ComAtprotoRepoNS {
  _server: Server

  constructor(server: Server) {
    this._server = server
  }
}
