-- Readers look authors up by handle (resolveActor) at every request that names one.
create index index_actors_handle on index_actors (handle);
