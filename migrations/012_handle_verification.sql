-- When an author's handle was last verified both ways (handle -> DID -> handle). Null: verify before showing.
alter table index_actors add column verified_at timestamptz;
