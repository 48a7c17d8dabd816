/** What the reader pages show: the server's answer (src/appview/thread.ts), as the browser receives it. */
export interface ThreadData {
  uri: string;
  author: { did: string; handle: string | null };
  session: {
    title: string;
    createdAt: string;
    /** `avatar`: a blob in the author's repo (ADR 0065), as the record says it (unchecked: see avatarSrc). */
    agents?: { name: string; role?: string; description?: string; avatar?: unknown }[];
  };
  messages: {
    uri: string;
    rkey: string;
    record: {
      role: string;
      createdAt: string;
      text?: string;
      withheld?: boolean;
      model?: string;
      steps?: { name: string; summary?: string; failed?: boolean }[];
    };
    refs: { uri: string; state: 'same' | 'changed' | 'deleted' | 'unchecked'; text: string | null }[];
    mentions: { did: string; handle: string | null }[];
    /** Labels of followed moderation services on this turn that warn: a notice in the turn's place. */
    labels?: { src: string; val: string }[];
    /** A followed moderation service hid this turn: it is a hole (`record.withheld`). */
    hidden?: boolean;
  }[];
  /** Labels of followed moderation services that warn rather than hide: shown as a notice first. */
  labels?: { src: string; val: string }[];
}

export interface SessionItem {
  uri: string;
  author: { did: string; handle?: string };
  record: { title?: string; createdAt?: string; agents?: { name: string }[] };
  turns: number;
}

/** What a server-rendered page hands its script, to hydrate the same tree. */
export type ReaderData =
  | { page: 'thread'; actor: string; rkey: string; thread: ThreadData }
  | { page: 'list'; actor: string | null; sessions: SessionItem[] };
