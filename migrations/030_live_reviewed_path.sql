-- Live publishing follows only the path the Player reviewed (issue 24): the Message ids, in reading order, the
-- Player last looked over and published. A live append goes out only while the path shown still starts with
-- them, and then extends them; a branch shown, an edit or a regenerated reply that leaves them pauses it.
alter table publications add column reviewed_path uuid[] not null default '{}';
-- Publications so far: what they published is what was reviewed.
update publications p set reviewed_path = coalesce((
    select array_agg(r.message_id order by r.position) from publication_records r
    where r.conversation_id = p.conversation_id and r.message_id is not null
      and r.pending is distinct from 'delete'), '{}');
