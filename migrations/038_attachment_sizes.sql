-- A picture's size in pixels, read from its header at upload (issue 28): the transcript reserves each picture's
-- box from it, so a Conversation opens at its newest Message before the pictures have loaded. Null: not a
-- picture, or one uploaded before this (shown in a box of fixed size).
alter table attachments add column width integer check (width > 0);
alter table attachments add column height integer check (height > 0);

-- Attachments of imported Conversations point at nothing here (the file carries names only): marked, so the
-- transcript shows their names instead of broken pictures and links. New imports mark them as they are stored.
update messages m set parts = (
  select jsonb_agg(case when p->>'type' in ('file', 'url') then p || '{"missing": true}'::jsonb else p end
    order by i)
  from jsonb_array_elements(m.parts) with ordinality as e(p, i))
where m.imported and jsonb_typeof(m.parts) = 'array'
  and exists (select 1 from jsonb_array_elements(m.parts) p where p->>'type' in ('file', 'url'));
