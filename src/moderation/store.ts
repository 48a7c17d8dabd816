import { playerDid } from '../auth/index.ts';
import type { Fragment, Queryable, Sql } from '../db/index.ts';

export interface Takedown {
  id: string;
  subject: string;
  reason: string;
  createdBy: string;
  createdAt: Date;
  liftedBy: string | null;
  liftedAt: Date | null;
  liftReason: string | null;
}
export interface Block extends Omit<Takedown, 'subject'> {
  did: string;
}
export interface Report {
  id: string;
  subject: string;
  reason: string;
  reporterDid: string | null;
  createdAt: Date;
}

const LIST_LIMIT = 200;
const audit = (sql: Sql) => sql`reason, created_by as "createdBy", created_at as "createdAt",
  lifted_by as "liftedBy", lifted_at as "liftedAt", lift_reason as "liftReason"`;

/** Hides `subject`; an active takedown of it already there is kept as it is (null then). */
export async function takeDown(sql: Sql, subject: string, reason: string, by: string) {
  const [row] = await sql<Takedown[]>`insert into takedowns (subject, reason, created_by)
    values (${subject}, ${reason}, ${by}) on conflict (subject) where lifted_at is null do nothing
    returning id, subject, ${audit(sql)}`;
  return row ?? null;
}

/**
 * True in the caller's statement when an admin took down one of `subjects` (columns or values of that statement,
 * as a list: a thread's URI, its author's DID) and has not lifted it: appview/ serves such a thread to no one.
 */
export const takenDown = (sql: Queryable, subjects: ReturnType<Queryable>) =>
  sql`exists (select 1 from takedowns t where t.lifted_at is null and t.subject in (${subjects}))`;

export async function liftTakedown(sql: Sql, id: string, reason: string, by: string) {
  const [row] = await sql<
    Takedown[]
  >`update takedowns set lifted_by = ${by}, lifted_at = now(), lift_reason = ${reason}
    where id = ${id} and lifted_at is null returning id, subject, ${audit(sql)}`;
  return row ?? null;
}

export function listTakedowns(sql: Sql) {
  return sql<Takedown[]>`select id, subject, ${audit(sql)} from takedowns
    order by created_at desc limit ${LIST_LIMIT}`;
}

/** Stops the Player `playerId` (whose DID is `did`); an active block of them already there is kept (null then). */
export async function block(sql: Sql, playerId: string, did: string, reason: string, by: string) {
  const [row] = await sql<Block[]>`insert into player_blocks (player_id, reason, created_by)
    values (${playerId}, ${reason}, ${by})
    on conflict (player_id) where lifted_at is null do nothing
    returning id, ${did} as did, ${audit(sql)}`;
  return row ?? null;
}

export async function liftBlock(sql: Sql, id: string, reason: string, by: string) {
  const [row] = await sql<
    Block[]
  >`update player_blocks b set lifted_by = ${by}, lifted_at = now(), lift_reason = ${reason}
    where b.id = ${id} and b.lifted_at is null
    returning b.id, ${playerDid(sql, sql`b.player_id`)} as did, b.reason, b.created_by as "createdBy", b.created_at as "createdAt",
      b.lifted_by as "liftedBy", b.lifted_at as "liftedAt", b.lift_reason as "liftReason"`;
  return row ?? null;
}

export function listBlocks(sql: Sql) {
  return sql<
    Block[]
  >`select b.id, ${playerDid(sql, sql`b.player_id`)} as did, b.reason, b.created_by as "createdBy",
      b.created_at as "createdAt", b.lifted_by as "liftedBy", b.lifted_at as "liftedAt", b.lift_reason as "liftReason"
    from player_blocks b order by b.created_at desc limit ${LIST_LIMIT}`;
}

/** Whether the Player (an id or a subquery giving it) is blocked, as an expression of a larger statement. */
export const blockedSql = (q: Queryable, player: Fragment) =>
  q`exists (select 1 from player_blocks b where b.player_id = ${player} and b.lifted_at is null)`;

export async function report(sql: Sql, subject: string, reason: string, reporterDid: string | null) {
  const [row] = await sql<Report[]>`insert into thread_reports (subject, reason, reporter_did)
    values (${subject}, ${reason}, ${reporterDid})
    returning id, subject, reason, reporter_did as "reporterDid", created_at as "createdAt"`;
  return row!;
}

export function listReports(sql: Sql) {
  return sql<Report[]>`select id, subject, reason, reporter_did as "reporterDid", created_at as "createdAt"
    from thread_reports order by created_at desc limit ${LIST_LIMIT}`;
}
