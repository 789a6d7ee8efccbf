-- What the Python package read from hipocampo_private directly gets an RPC (issue 17 §2: Python
-- calls the public surface only): the tenant of a slug (Hipocampo.tenant_id), the documents of a
-- knowledge base (the agents' store clear, and a document listing for clients), a user's
-- membership role (the CLI's "make the local user a member" without demoting an admin), the
-- caller's memories without a vector (Memory.embed_missing), and the active embedding model
-- (the backfills' check).

/*
tenant_by_slug(slug text) -> uuid

Purpose: the id of the tenant with this slug, as the caller may see it: any tenant for
  service_role, the caller's own tenant for a member (null for another tenant's slug).
Parameters: slug - the tenant's slug.
Returns: the tenant id, or null.
Errors: 42501 as _caller; 22023 "slug must not be null".
Example: select hipocampo.tenant_by_slug('demo');
*/
create function hipocampo.tenant_by_slug(slug text)
returns uuid
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    c record := hipocampo_private._caller();
begin
    if tenant_by_slug.slug is null then
        raise exception 'slug must not be null' using errcode = '22023';
    end if;
    return (
        select t.id from hipocampo_private.tenants as t
        where t.slug = tenant_by_slug.slug and (c.kind = 'service' or t.id = c.tenant_id)
    );
end;
$$;

/*
list_documents(kb_id uuid) -> table (id, title, source_uri, source_type, doc_type, status,
  trust_score, chunk_count, content_hash, published_at, expires_at, created_at, updated_at)

Purpose: the documents of a knowledge base, by source_uri (RLS: the caller's tenant).
Parameters: kb_id - the knowledge base.
Returns: one row per document; trust_score 0..1; chunk_count chunks of the document (all models).
Errors: 42501 as _caller; P0002 "unknown knowledge base: …".
Example: select title, chunk_count from hipocampo.list_documents('…');
*/
create function hipocampo.list_documents(kb_id uuid)
returns table (
    id uuid, title text, source_uri text, source_type text, doc_type text, status text, trust_score real,
    chunk_count integer, content_hash text, published_at timestamptz, expires_at timestamptz,
    created_at timestamptz, updated_at timestamptz
)
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    gate record := hipocampo_private._caller();  -- 42501 before any other work
    k hipocampo_private.knowledge_bases := hipocampo_private._kb(list_documents.kb_id);
begin
    return query
    select d.id, d.title, d.source_uri, d.source_type, d.doc_type, d.status, d.trust_score, d.chunk_count,
        d.content_hash, d.published_at, d.expires_at, d.created_at, d.updated_at
    from hipocampo_private.documents as d
    where d.kb_id = k.id
    order by d.source_uri;
end;
$$;

/*
membership_role(user_id uuid default null, tenant_id uuid default null) -> text

Purpose: a user's role in a tenant: admin | member, or null when not a member. A signed-in user
  asks about themselves; service_role names the user and the tenant.
Errors: 42501 as _memory_actor (no tenant / no user / user mismatch).
Example: select hipocampo.membership_role('…'::uuid, '…'::uuid);  -- as service_role
*/
create function hipocampo.membership_role(user_id uuid default null, tenant_id uuid default null)
returns text
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    a record := hipocampo_private._memory_actor(membership_role.user_id, membership_role.tenant_id);
begin
    return (
        select m.role from hipocampo_private.memberships as m
        where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user
    );
end;
$$;

/*
memories_without_embedding(keys text[] default null, user_id uuid default null,
  tenant_id uuid default null) -> table (id uuid, key text, description text)

Purpose: the user's active personal memories stored without a vector (written in SQL, e.g. by
  seed_profile), optionally only these keys, for the client to embed (set_memory_embeddings).
Errors: 42501 as _memory_actor.
Example: select * from hipocampo.memories_without_embedding();
*/
create function hipocampo.memories_without_embedding(
    keys text[] default null, user_id uuid default null, tenant_id uuid default null
)
returns table (id uuid, key text, description text)
language plpgsql
stable
security invoker
set search_path = ''
as $$
declare
    a record := hipocampo_private._memory_actor(memories_without_embedding.user_id,
        memories_without_embedding.tenant_id);
begin
    return query
    select m.id, m.key, m.description
    from hipocampo_private.memories as m
    where m.tenant_id = a.actor_tenant and m.user_id = a.actor_user and m.scope = 'personal'
      and m.status = 'active' and m.embedding is null
      and (memories_without_embedding.keys is null or m.key = any(memories_without_embedding.keys))
    order by m.key;
end;
$$;

/*
active_embedding_model() -> table (name text, provider text, dims integer, distance text)

Purpose: the embedding model search reads (the registry's active row); no row when none is
  active.
Errors: 42501 as _caller.
Example: select name, dims from hipocampo.active_embedding_model();
*/
create function hipocampo.active_embedding_model()
returns table (name text, provider text, dims integer, distance text)
language plpgsql
stable
security invoker
set search_path = ''
as $$
begin
    perform hipocampo_private._caller();
    return query
    select e.name, e.provider, e.dims, e.distance from hipocampo_private.embedding_models as e where e.active;
end;
$$;

grant execute on function hipocampo.tenant_by_slug(text) to authenticated, service_role;
grant execute on function hipocampo.list_documents(uuid) to authenticated, service_role;
grant execute on function hipocampo.membership_role(uuid, uuid) to authenticated, service_role;
grant execute on function hipocampo.memories_without_embedding(text[], uuid, uuid) to authenticated, service_role;
grant execute on function hipocampo.active_embedding_model() to authenticated, service_role;

comment on function hipocampo.tenant_by_slug(text) is 'The id of the tenant with this slug, as the caller may see it.';
comment on function hipocampo.list_documents(uuid) is 'The documents of a knowledge base.';
comment on function hipocampo.membership_role(uuid, uuid) is 'A user''s role in a tenant (admin | member | null).';
comment on function hipocampo.memories_without_embedding(text[], uuid, uuid) is
'The user''s active personal memories stored without a vector.';
comment on function hipocampo.active_embedding_model() is 'The active embedding model of the registry.';

-- Revoke by default: PUBLIC keeps no EXECUTE; only the explicit grants above hold.
revoke execute on all functions in schema hipocampo from public;
revoke execute on all functions in schema hipocampo_private from public;
