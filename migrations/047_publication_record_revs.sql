-- The rev of the commit that last wrote each published record (the PDS gives it with applyWrites). The index's
-- write-through carries it, so the event stream's copy of an older version, arriving after a publish, is refused
-- instead of replacing what was just written (a ticked avatar undone by the untick's late event). Null for rows
-- written before this, or whose answer was lost: those stay "newest whatever comes", as before.
alter table publication_records add column rev text;
