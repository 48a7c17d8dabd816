/**
 * GENERATED CODE - DO NOT MODIFY
 */
import {
  type LexiconDoc,
  Lexicons,
  ValidationError,
  type ValidationResult,
} from '@atproto/lexicon'
import { type $Typed, is$typed, maybe$typed } from './util.js'

export const schemaDict = {
  ClickAlignedChatDefs: {
    lexicon: 1,
    id: 'click.aligned.chat.defs',
    defs: {
      author: {
        type: 'object',
        description: 'Who published a session.',
        required: ['did'],
        properties: {
          did: {
            type: 'string',
            format: 'did',
          },
          handle: {
            type: 'string',
            format: 'handle',
            description: 'Absent when the handle does not resolve.',
          },
        },
      },
      sessionView: {
        type: 'object',
        required: ['uri', 'cid', 'author', 'record', 'indexedAt'],
        properties: {
          uri: {
            type: 'string',
            format: 'at-uri',
          },
          cid: {
            type: 'string',
            format: 'cid',
          },
          author: {
            type: 'ref',
            ref: 'lex:click.aligned.chat.defs#author',
          },
          record: {
            type: 'unknown',
            description: 'The click.aligned.chat.session record, as published.',
          },
          turns: {
            type: 'integer',
            minimum: 0,
            description: 'How many turns the index holds for this session.',
          },
          indexedAt: {
            type: 'string',
            format: 'datetime',
          },
        },
      },
      messageView: {
        type: 'object',
        required: ['uri', 'cid', 'record'],
        properties: {
          uri: {
            type: 'string',
            format: 'at-uri',
          },
          cid: {
            type: 'string',
            format: 'cid',
          },
          record: {
            type: 'unknown',
            description: 'The click.aligned.chat.message record, as published.',
          },
        },
      },
    },
  },
  ClickAlignedChatGetThread: {
    lexicon: 1,
    id: 'click.aligned.chat.getThread',
    defs: {
      main: {
        type: 'query',
        description:
          'A published session and its turns in reading (TID) order. Records that fail the lexicon are left out; deleted ones are gone.',
        parameters: {
          type: 'params',
          required: ['uri'],
          properties: {
            uri: {
              type: 'string',
              format: 'at-uri',
              description: 'The click.aligned.chat.session record.',
            },
          },
        },
        output: {
          encoding: 'application/json',
          schema: {
            type: 'object',
            required: ['session', 'messages'],
            properties: {
              session: {
                type: 'ref',
                ref: 'lex:click.aligned.chat.defs#sessionView',
              },
              messages: {
                type: 'array',
                items: {
                  type: 'ref',
                  ref: 'lex:click.aligned.chat.defs#messageView',
                },
              },
            },
          },
        },
        errors: [
          {
            name: 'NotFound',
            description:
              "No such session in the index, even after reading the author's repo.",
          },
        ],
      },
    },
  },
  ClickAlignedChatListSessions: {
    lexicon: 1,
    id: 'click.aligned.chat.listSessions',
    defs: {
      main: {
        type: 'query',
        description:
          "Published sessions, most recently indexed first: all of them, or one author's.",
        parameters: {
          type: 'params',
          properties: {
            actor: {
              type: 'string',
              format: 'at-identifier',
              description: "Only this author's sessions (handle or DID).",
            },
            limit: {
              type: 'integer',
              minimum: 1,
              maximum: 100,
              default: 30,
            },
            cursor: {
              type: 'string',
            },
          },
        },
        output: {
          encoding: 'application/json',
          schema: {
            type: 'object',
            required: ['sessions'],
            properties: {
              sessions: {
                type: 'array',
                items: {
                  type: 'ref',
                  ref: 'lex:click.aligned.chat.defs#sessionView',
                },
              },
              cursor: {
                type: 'string',
              },
            },
          },
        },
      },
    },
  },
  ClickAlignedChatMessage: {
    lexicon: 1,
    id: 'click.aligned.chat.message',
    description:
      "One turn of a published conversation with an agent. Records exist only for a conversation somebody published; within one, every turn has a record, in order, so the record key's TID ordering is the reading order.",
    defs: {
      main: {
        type: 'record',
        key: 'tid',
        record: {
          type: 'object',
          required: ['session', 'role', 'createdAt'],
          properties: {
            session: {
              type: 'string',
              format: 'at-uri',
              description:
                'The click.aligned.chat.session this turn belongs to. A plain at-uri, deliberately not a strongRef: the session may be retitled later, and a strongRef would pin a CID that then no longer exists.',
            },
            role: {
              type: 'string',
              maxLength: 32,
              knownValues: ['user', 'assistant'],
              description: 'Who is speaking.',
            },
            createdAt: {
              type: 'string',
              format: 'datetime',
              description:
                'When the turn happened. A withheld turn says only what its author chose: by default the time of the last turn published before it, or the start of its day (UTC) when none was.',
            },
            text: {
              type: 'string',
              maxLength: 150000,
              maxGraphemes: 15000,
              description:
                "What was said. The assistant's own words, so they are stored rather than referenced — there is nowhere else they exist. Runs of █ are redactions: spans the author covered rather than withhold the whole turn over, of a fixed width so the bar does not say how long the words were. The covered words were never published and are not recoverable from this record; a viewer that does nothing special shows the bars as text, which is the honest reading.",
            },
            withheld: {
              type: 'boolean',
              description:
                'This turn happened and its content was not published. Every turn of a published conversation gets a record, so one published in part has visible holes rather than invisible ones — an answer to a question that was held back would otherwise read as an answer to whatever came before it. A conversation nobody published has no records at all, withheld ones included: a record saying only that somebody spoke at a time is a hole in nothing. Stated rather than inferred from an empty `text`, so a reader never has to guess whether a turn was withheld or simply empty. Absent means published.',
            },
            langs: {
              type: 'array',
              maxLength: 3,
              items: {
                type: 'string',
                format: 'language',
                maxLength: 128,
              },
              description:
                "The languages the text is in, as BCP-47 tags, most used first (as app.bsky.feed.post's langs).",
            },
            model: {
              type: 'string',
              maxLength: 300,
              description:
                "The model that produced an assistant turn, e.g. 'greenpt/minimax-m2.5'. Present on assistant turns so a reader never has to guess whether they are reading a person or a machine, and can tell which machine.",
            },
            steps: {
              type: 'array',
              maxLength: 100,
              items: {
                type: 'ref',
                ref: 'lex:click.aligned.chat.message#step',
              },
              description:
                'The tools the agent called on this turn, in order. Published because the point of a conversation like this is usually *how* the answer was reached; a reply with the working removed is the least interesting part of it.',
            },
            refs: {
              type: 'array',
              maxLength: 50,
              items: {
                type: 'ref',
                ref: 'lex:com.atproto.repo.strongRef',
              },
              description:
                'Records this turn is about, as strong references. Pointed at, never copied: a copy would survive the author deleting the original, and it should not. A strongRef pins the CID, so a reader gets the version that was actually discussed and can tell when it has since changed — which is what you want for a post, whose text is the thing.',
            },
            mentions: {
              type: 'array',
              maxLength: 50,
              items: {
                type: 'string',
                format: 'did',
              },
              description:
                'atproto accounts this turn is about, as DIDs. Deliberately not strongRefs to their profile records: a person is not a version of their bio, and pinning one would make a turn about someone go stale the next time they change their avatar. A DID is the identity, and it is the identity that was being discussed.',
            },
          },
        },
      },
      step: {
        type: 'object',
        description:
          'One tool call. The name and a short summary of what it was for — never the output, which is often large, often private, and reproducible by anyone holding the same tools.',
        required: ['name'],
        properties: {
          name: {
            type: 'string',
            maxLength: 320,
            maxGraphemes: 64,
            description:
              "Tool name as the agent called it, e.g. 'search-posts'.",
          },
          summary: {
            type: 'string',
            maxLength: 1000,
            maxGraphemes: 250,
            description:
              'One line on what it was called for or what came back.',
          },
          failed: {
            type: 'boolean',
            description:
              'Whether the call errored. Published rather than hidden: a workflow that shows only the calls that worked is a misleading picture of working with an agent.',
          },
        },
      },
    },
  },
  ClickAlignedChatSession: {
    lexicon: 1,
    id: 'click.aligned.chat.session',
    description:
      'A published conversation with an agent. The container only: the turns are separate click.aligned.chat.message records pointing back at this one, so a session grows without ever being rewritten.',
    defs: {
      main: {
        type: 'record',
        key: 'tid',
        record: {
          type: 'object',
          required: ['title', 'createdAt'],
          properties: {
            title: {
              type: 'string',
              maxLength: 1000,
              maxGraphemes: 200,
              description:
                'What the conversation is called. Retitling rewrites this record alone (putRecord); the turns point at the session by at-uri, not by CID, so they stay valid.',
            },
            createdAt: {
              type: 'string',
              format: 'datetime',
              description:
                'When the conversation began: its first turn, not the moment it was published.',
            },
            agents: {
              type: 'array',
              maxLength: 20,
              items: {
                type: 'ref',
                ref: 'lex:click.aligned.chat.session#agent',
              },
              description:
                'Who the author talked to: the agents (characters) that speak in this session, so a reader knows who is who before reading a turn. Each assistant turn still names its own model.',
            },
          },
        },
      },
      agent: {
        type: 'object',
        description:
          'One agent in the conversation, as its author presented it. Not an account: agents have no identity on the network.',
        required: ['name'],
        properties: {
          name: {
            type: 'string',
            maxLength: 640,
            maxGraphemes: 64,
            description: "The agent's name, as its turns show it.",
          },
          role: {
            type: 'string',
            maxLength: 1000,
            maxGraphemes: 100,
            description: "What the agent is presented as, e.g. 'Librarian'.",
          },
          description: {
            type: 'string',
            maxLength: 3000,
            maxGraphemes: 300,
            description:
              'A sentence or two about the agent, as its author described it. Its full instructions are never published.',
          },
          model: {
            type: 'string',
            maxLength: 300,
            description:
              "The model the agent ran on when the session was published, e.g. 'anthropic/claude-sonnet'. Each turn records the model that actually produced it.",
          },
          avatar: {
            type: 'blob',
            accept: ['image/png', 'image/jpeg', 'image/webp', 'image/gif'],
            maxSize: 1000000,
            description:
              "The agent's picture, as its author chose to publish it: a blob in the author's repository. Optional; a reader without it shows the name alone.",
          },
        },
      },
    },
  },
  ComAtprotoRepoStrongRef: {
    lexicon: 1,
    id: 'com.atproto.repo.strongRef',
    description: 'A URI with a content-hash fingerprint.',
    defs: {
      main: {
        type: 'object',
        required: ['uri', 'cid'],
        properties: {
          uri: {
            type: 'string',
            format: 'at-uri',
          },
          cid: {
            type: 'string',
            format: 'cid',
          },
        },
      },
    },
  },
} as const satisfies Record<string, LexiconDoc>
export const schemas = Object.values(schemaDict) satisfies LexiconDoc[]
export const lexicons: Lexicons = new Lexicons(schemas)

export function validate<T extends { $type: string }>(
  v: unknown,
  id: string,
  hash: string,
  requiredType: true,
): ValidationResult<T>
export function validate<T extends { $type?: string }>(
  v: unknown,
  id: string,
  hash: string,
  requiredType?: false,
): ValidationResult<T>
export function validate(
  v: unknown,
  id: string,
  hash: string,
  requiredType?: boolean,
): ValidationResult {
  return (requiredType ? is$typed : maybe$typed)(v, id, hash)
    ? lexicons.validate(`${id}#${hash}`, v)
    : {
        success: false,
        error: new ValidationError(
          `Must be an object with "${hash === 'main' ? id : `${id}#${hash}`}" $type property`,
        ),
      }
}

export const ids = {
  ClickAlignedChatDefs: 'click.aligned.chat.defs',
  ClickAlignedChatGetThread: 'click.aligned.chat.getThread',
  ClickAlignedChatListSessions: 'click.aligned.chat.listSessions',
  ClickAlignedChatMessage: 'click.aligned.chat.message',
  ClickAlignedChatSession: 'click.aligned.chat.session',
  ComAtprotoRepoStrongRef: 'com.atproto.repo.strongRef',
} as const
