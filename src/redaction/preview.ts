/**
 * What the publish editor is answered: the server's plan, every record exactly as it will be written, and what
 * must be fixed first. One contract for the server (which builds it) and the browser (which shows it).
 */
/** Something that must be fixed before publishing, naming the turn. */
export interface Problem {
  messageId: string | null;
  turn: number | null;
  code:
    | 'TEXT_TOO_LONG'
    | 'SUMMARY_TOO_LONG'
    | 'UNRESOLVED_REF'
    | 'UNRESOLVED_MENTION'
    | 'BAD_REF'
    | 'COVERED_REFERENCE'
    | 'TOO_MANY_STEPS'
    | 'INVALID_RECORD';
  message: string;
}

export interface Preview {
  /** The session record's at-uri. */
  uri: string;
  /** The title as it will be written (covered). */
  title: string;
  /** The title made from the published text, used when the Player writes none. */
  defaultTitle: string;
  /** The title the Player wrote, as kept in the draft (null: the default). */
  chosenTitle: string | null;
  records: {
    rkey: string;
    collection: string;
    messageId: string | null;
    record: unknown;
    /** The write the record still needs: create, update, delete, or null when the PDS holds it. */
    write: 'create' | 'update' | 'delete' | null;
  }[];
  problems: Problem[];
  /**
   * Links and mentions of published turns not looked up yet: a preview looks up only the turns the Player asks
   * it to check (a lookup reaches whoever the link names), and publishing looks up the rest.
   */
  unchecked: { messageId: string; turn: number; links: string[] }[];
  /**
   * The NPCs the session names, with their own descriptions: shown to the Player to start from, published only
   * in the Player's words (an agent choice). `avatarUrl`: the NPC's picture in the app, when it has one that can be
   * published (an accepted image within the lexicon's size), shown beside the tick that publishes it.
   */
  agents: { npcId: string; name: string; jobTitle: string; description: string; avatarUrl: string | null }[];
  /** The PDS rate-limit points the writes cost. */
  points: number;
}
