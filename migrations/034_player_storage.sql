-- What each Player makes us store, by kind, against one quota (issue 25 item 5, ADR 0053). The totals are kept by
-- triggers, in the transaction of every write and delete (cascades included), so no write path can forget them;
-- the quota is checked by the writers against these totals (storage/).

alter table village_settings
  add column player_storage_mb integer not null default 200 check (player_storage_mb between 1 and 10000000);

-- A Message's size: its Parts as JSON text (the flat `text` column is derived from them), or its text on rows
-- from before Parts. Also what a transcript page's byte budget counts.
alter table messages add column stored_bytes integer not null
  generated always as (coalesce(octet_length(parts::text), octet_length(text))) stored;

create table player_storage (
  player_id uuid primary key references players (id) on delete cascade,
  message_bytes bigint not null default 0,
  attachment_bytes bigint not null default 0,
  sandbox_bytes bigint not null default 0,
  memory_bytes bigint not null default 0
);

-- Adds each Player's deltas, one row per Player in Player order (two statements touching the same Players
-- lock their rows in the same order: no deadlock). A Player being deleted (no longer visible) is skipped.
create function storage_add(deltas jsonb) returns void language sql as $$
  insert into player_storage as s (player_id, message_bytes, attachment_bytes, sandbox_bytes, memory_bytes)
  select d.player_id, sum(d.m), sum(d.a), sum(d.s), sum(d.r)
  from jsonb_to_recordset(deltas) as d (player_id uuid, m bigint, a bigint, s bigint, r bigint)
  where exists (select 1 from players p where p.id = d.player_id)
  group by d.player_id
  having sum(d.m) <> 0 or sum(d.a) <> 0 or sum(d.s) <> 0 or sum(d.r) <> 0
  order by d.player_id
  on conflict (player_id) do update set
    message_bytes = s.message_bytes + excluded.message_bytes,
    attachment_bytes = s.attachment_bytes + excluded.attachment_bytes,
    sandbox_bytes = s.sandbox_bytes + excluded.sandbox_bytes,
    memory_bytes = s.memory_bytes + excluded.memory_bytes
$$;

-- Messages: through their Conversation's Player. Rows deleted with their Conversation find it gone: the
-- Conversation's own trigger took them off. An import inserts its Messages with counting deferred (a setting local
-- to its transaction) and counts them once at the end, so it holds the Player's row only for its last moment: the
-- instance's checkpoint batch, which may hold this Player's reply, never waits out a whole import.
create function storage_of_messages() returns trigger language plpgsql as $$
begin
  if TG_OP = 'INSERT' and current_setting('agentsville.defer_message_storage', true) = 'on' then
    return null;
  end if;
  if TG_OP = 'INSERT' then
    perform storage_add(coalesce(jsonb_agg(jsonb_build_object('player_id', c.player_id, 'm', x.b, 'a', 0, 's', 0, 'r', 0)), '[]'))
    from (select conversation_id, sum(stored_bytes) as b from new_rows group by 1) x
    join conversations c on c.id = x.conversation_id;
  elsif TG_OP = 'UPDATE' then
    perform storage_add(coalesce(jsonb_agg(jsonb_build_object('player_id', c.player_id, 'm', x.b, 'a', 0, 's', 0, 'r', 0)), '[]'))
    from (select n.conversation_id, sum(n.stored_bytes - o.stored_bytes) as b
          from new_rows n join old_rows o on o.id = n.id
          where n.stored_bytes <> o.stored_bytes group by 1) x
    join conversations c on c.id = x.conversation_id;
  else
    perform storage_add(coalesce(jsonb_agg(jsonb_build_object('player_id', c.player_id, 'm', -x.b, 'a', 0, 's', 0, 'r', 0)), '[]'))
    from (select conversation_id, sum(stored_bytes) as b from old_rows group by 1) x
    join conversations c on c.id = x.conversation_id;
  end if;
  return null;
end $$;
create trigger storage_messages_insert after insert on messages
  referencing new table as new_rows for each statement execute function storage_of_messages();
create trigger storage_messages_update after update on messages
  referencing old table as old_rows new table as new_rows for each statement execute function storage_of_messages();
create trigger storage_messages_delete after delete on messages
  referencing old table as old_rows for each statement execute function storage_of_messages();

-- Sandbox files: each file its content's size (each use counted, as attachments are) and its path.
create function storage_of_sandbox() returns trigger language plpgsql as $$
begin
  if TG_OP = 'INSERT' then
    perform storage_add(coalesce(jsonb_agg(jsonb_build_object('player_id', c.player_id, 'm', 0, 'a', 0, 's', x.b, 'r', 0)), '[]'))
    from (select n.conversation_id, sum(octet_length(n.path) + coalesce(b.size, 0)) as b
          from new_rows n left join blobs b on b.id = n.blob_id group by 1) x
    join conversations c on c.id = x.conversation_id;
  elsif TG_OP = 'UPDATE' then
    perform storage_add(coalesce(jsonb_agg(jsonb_build_object('player_id', c.player_id, 'm', 0, 'a', 0, 's', x.b, 'r', 0)), '[]'))
    from (select n.conversation_id,
            sum(octet_length(n.path) + coalesce(nb.size, 0) - octet_length(o.path) - coalesce(ob.size, 0)) as b
          from new_rows n join old_rows o on o.conversation_id = n.conversation_id and o.path = n.path
          left join blobs nb on nb.id = n.blob_id left join blobs ob on ob.id = o.blob_id group by 1) x
    join conversations c on c.id = x.conversation_id;
  else
    perform storage_add(coalesce(jsonb_agg(jsonb_build_object('player_id', c.player_id, 'm', 0, 'a', 0, 's', -x.b, 'r', 0)), '[]'))
    from (select o.conversation_id, sum(octet_length(o.path) + coalesce(b.size, 0)) as b
          from old_rows o left join blobs b on b.id = o.blob_id group by 1) x
    join conversations c on c.id = x.conversation_id;
  end if;
  return null;
end $$;
create trigger storage_sandbox_insert after insert on sandbox_files
  referencing new table as new_rows for each statement execute function storage_of_sandbox();
create trigger storage_sandbox_update after update on sandbox_files
  referencing old table as old_rows new table as new_rows for each statement execute function storage_of_sandbox();
create trigger storage_sandbox_delete after delete on sandbox_files
  referencing old table as old_rows for each statement execute function storage_of_sandbox();

-- A Conversation going takes its Messages and sandbox files along: taken off here, while it is still visible.
create function storage_of_conversation() returns trigger language plpgsql as $$
begin
  perform storage_add(jsonb_build_array(jsonb_build_object('player_id', old.player_id,
    'm', -(select coalesce(sum(stored_bytes), 0) from messages where conversation_id = old.id),
    'a', 0,
    's', -(select coalesce(sum(octet_length(f.path) + coalesce(b.size, 0)), 0)
           from sandbox_files f left join blobs b on b.id = f.blob_id where f.conversation_id = old.id),
    'r', 0)));
  return old;
end $$;
create trigger storage_conversation_delete before delete on conversations
  for each row execute function storage_of_conversation();

-- Attachments and Memory name their Player.
create function storage_of_attachments() returns trigger language plpgsql as $$
begin
  if TG_OP = 'INSERT' then
    perform storage_add(coalesce(jsonb_agg(jsonb_build_object('player_id', player_id, 'm', 0, 'a', b, 's', 0, 'r', 0)), '[]'))
    from (select player_id, sum(size) as b from new_rows group by 1) x;
  else
    perform storage_add(coalesce(jsonb_agg(jsonb_build_object('player_id', player_id, 'm', 0, 'a', -b, 's', 0, 'r', 0)), '[]'))
    from (select player_id, sum(size) as b from old_rows group by 1) x;
  end if;
  return null;
end $$;
create trigger storage_attachments_insert after insert on attachments
  referencing new table as new_rows for each statement execute function storage_of_attachments();
create trigger storage_attachments_delete after delete on attachments
  referencing old table as old_rows for each statement execute function storage_of_attachments();

create function storage_of_memories() returns trigger language plpgsql as $$
begin
  if TG_OP = 'INSERT' then
    perform storage_add(coalesce(jsonb_agg(jsonb_build_object('player_id', player_id, 'm', 0, 'a', 0, 's', 0, 'r', b)), '[]'))
    from (select player_id, sum(octet_length(text) + coalesce(octet_length(npc_name), 0)) as b from new_rows group by 1) x;
  elsif TG_OP = 'UPDATE' then
    perform storage_add(coalesce(jsonb_agg(jsonb_build_object('player_id', player_id, 'm', 0, 'a', 0, 's', 0, 'r', b)), '[]'))
    from (select n.player_id, sum(octet_length(n.text) + coalesce(octet_length(n.npc_name), 0)
            - octet_length(o.text) - coalesce(octet_length(o.npc_name), 0)) as b
          from new_rows n join old_rows o on o.id = n.id group by 1) x;
  else
    perform storage_add(coalesce(jsonb_agg(jsonb_build_object('player_id', player_id, 'm', 0, 'a', 0, 's', 0, 'r', -b)), '[]'))
    from (select player_id, sum(octet_length(text) + coalesce(octet_length(npc_name), 0)) as b from old_rows group by 1) x;
  end if;
  return null;
end $$;
create trigger storage_memories_insert after insert on memories
  referencing new table as new_rows for each statement execute function storage_of_memories();
create trigger storage_memories_update after update on memories
  referencing old table as old_rows new table as new_rows for each statement execute function storage_of_memories();
create trigger storage_memories_delete after delete on memories
  referencing old table as old_rows for each statement execute function storage_of_memories();

-- What everyone stores today.
insert into player_storage (player_id, message_bytes, attachment_bytes, sandbox_bytes, memory_bytes)
select p.id,
  (select coalesce(sum(m.stored_bytes), 0) from messages m join conversations c on c.id = m.conversation_id
    where c.player_id = p.id),
  (select coalesce(sum(a.size), 0) from attachments a where a.player_id = p.id),
  (select coalesce(sum(octet_length(f.path) + coalesce(b.size, 0)), 0) from sandbox_files f
    join conversations c on c.id = f.conversation_id left join blobs b on b.id = f.blob_id where c.player_id = p.id),
  (select coalesce(sum(octet_length(r.text) + coalesce(octet_length(r.npc_name), 0)), 0) from memories r
    where r.player_id = p.id)
from players p;
