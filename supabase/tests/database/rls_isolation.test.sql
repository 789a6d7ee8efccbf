-- Tenant and user isolation through the real roles and JWT claims, as PostgREST and the edge
-- functions run them: two tenants, two members of tenant A, one of tenant B. Everything is
-- created inside this transaction and rolled back.
begin;
select plan(19);

-- A unit vector of the active model's dimensions with 1 at position k (not a real embedding).
create function pg_temp.unit_vector(k integer) returns real[]
language sql as $$
    select array_fill(0::real, array[k - 1]) || 1::real
        || array_fill(0::real, array[(select e.dims from hipocampo_private.embedding_models as e where e.active) - k])
$$;

create function pg_temp.act(role text, sub text, tenant text) returns void
language plpgsql as $$
begin
    perform set_config('role', act.role, true);
    perform set_config('request.jwt.claims', jsonb_build_object(
        'role', act.role, 'sub', act.sub, 'app_metadata', jsonb_build_object('tenant_id', act.tenant)
    )::text, true);
end;
$$;

set local role service_role;
do $$
declare
    user_a uuid := gen_random_uuid();
    user_b uuid := gen_random_uuid();
    tenant_a uuid := hipocampo.create_tenant('pgTAP A', 'pgtap-a-' || left(gen_random_uuid()::text, 8), user_a);
    tenant_b uuid := hipocampo.create_tenant('pgTAP B', 'pgtap-b-' || left(gen_random_uuid()::text, 8), user_b);
    kb_a uuid := hipocampo.create_knowledge_base('kb', tenant_id => tenant_a);
    kb_b uuid := hipocampo.create_knowledge_base('kb', tenant_id => tenant_b);
    user_a2 uuid := gen_random_uuid();
    x record;
begin
    perform hipocampo.add_member(tenant_a, user_a2, 'member');
    for x in select * from (values (kb_a, 'a', 30), (kb_b, 'b', 45)) as v (kb, t, days) loop
        perform hipocampo.ingest_document(
            x.kb,
            jsonb_build_object('title', 'regulamento ' || x.t, 'source_uri', 'pgtap://' || x.t,
                'content_hash', 'pgtap-' || x.t),
            jsonb_build_array(jsonb_build_object(
                'chunk_index', 0, 'content', 'Prazo de trancamento de matrícula: ' || x.days || ' dias.',
                'content_hash', 'pgtap-' || x.t || '-0', 'token_count', 8,
                'embedding', to_jsonb(pg_temp.unit_vector(1))
            )),
            (select e.name from hipocampo_private.embedding_models as e where e.active)
        );
    end loop;
    perform set_config('t.user_a', user_a::text, true), set_config('t.user_a2', user_a2::text, true),
        set_config('t.user_b', user_b::text, true), set_config('t.tenant_a', tenant_a::text, true),
        set_config('t.tenant_b', tenant_b::text, true), set_config('t.kb_b', kb_b::text, true),
        set_config('t.v1', pg_temp.unit_vector(1)::extensions.vector::text, true),
        set_config('t.v2', pg_temp.unit_vector(2)::extensions.vector::text, true),
        set_config('t.v3', pg_temp.unit_vector(3)::extensions.vector::text, true);
end;
$$;
reset role;

-- Knowledge bases. found(): what a search for the deadline returns to the current claims.
create function pg_temp.found() returns setof text
language sql as $$
    select h.content from hipocampo.hybrid_search('prazo de trancamento',
        current_setting('t.v1')::extensions.vector, min_similarity => -1) as h
$$;
select pg_temp.act('authenticated', current_setting('t.user_a'), current_setting('t.tenant_a'));
select results_eq(
    'select * from pg_temp.found()', $$ values ('Prazo de trancamento de matrícula: 30 dias.') $$,
    'a member of tenant A finds only tenant A''s chunk'
);
select is((select count(*) from hipocampo_private.chunks), 1::bigint, 'a member of tenant A reads one chunk (RLS)');
select is((select count(*) from hipocampo_private.documents), 1::bigint, 'a member of tenant A reads one document (RLS)');
select throws_ok(
    format(
        'select hipocampo.hybrid_search(%L, %L::extensions.vector, kb_ids => array[%L]::uuid[])',
        'prazo', current_setting('t.v1')::extensions.vector, current_setting('t.kb_b')
    ),
    'P0002', 'unknown knowledge base: ' || current_setting('t.kb_b'),
    'tenant B''s knowledge base does not exist for a member of tenant A'
);
select pg_temp.act('authenticated', current_setting('t.user_b'), current_setting('t.tenant_b'));
select results_eq(
    'select * from pg_temp.found()', $$ values ('Prazo de trancamento de matrícula: 45 dias.') $$,
    'a member of tenant B finds only tenant B''s chunk'
);
select pg_temp.act('authenticated', current_setting('t.user_b'), current_setting('t.tenant_a'));
select throws_ok(
    $$ select hipocampo.hybrid_search('prazo', current_setting('t.v1')::extensions.vector) $$,
    '42501', 'no tenant: the JWT claims name no tenant this user belongs to',
    'claims naming a tenant the user is not a member of give no tenant'
);
select is(
    (select count(*) from hipocampo_private.chunks), 0::bigint,
    'and no chunk is readable with such claims'
);
select pg_temp.act('anon', null, null);
select throws_ok(
    $$ select hipocampo.hybrid_search('prazo', current_setting('t.v1')::extensions.vector) $$,
    '42501', 'permission denied for function hybrid_search',
    'anon cannot search'
);
select throws_ok(
    'select count(*) from hipocampo_private.chunks', '42501', 'permission denied for schema hipocampo_private',
    'anon cannot read chunks'
);

-- Memories: personal ones are the user's own; tenant_shared ones are the tenant's.
select pg_temp.act('authenticated', current_setting('t.user_a'), current_setting('t.tenant_a'));
select hipocampo.set_memory_consent(true);
select is(
    hipocampo.remember(
        'prefs.short_answers', 'true', 'Prefere respostas curtas', 'preference',
        current_setting('t.v2')::extensions.vector
    ) ->> 'status',
    'created', 'user A stores a personal memory'
);
select is(
    hipocampo.remember(
        'tenant.wifi_policy', '"guest"', 'Wi-fi de visitantes é separado', 'operating_model',
        current_setting('t.v3')::extensions.vector, scope => 'tenant_shared'
    ) ->> 'status',
    'created', 'user A (admin) stores a tenant_shared memory'
);
select pg_temp.act('authenticated', current_setting('t.user_a2'), current_setting('t.tenant_a'));
select results_eq(
    $$ select key from hipocampo.lookup_memories() $$,
    $$ values ('tenant.wifi_policy') $$,
    'user A2 of the same tenant sees the shared memory, not user A''s personal one'
);
select is(
    hipocampo.remember('prefs.x', '1', 'Gosta de jazz', 'preference') ->> 'reason',
    'no_consent', 'user A2 has not consented: nothing is stored'
);
select pg_temp.act('authenticated', current_setting('t.user_b'), current_setting('t.tenant_b'));
select is((select count(*) from hipocampo.lookup_memories()), 0::bigint, 'tenant B sees no memory of tenant A');

-- Conversation history and sessions are the user's own, even within the tenant.
select pg_temp.act('authenticated', current_setting('t.user_a'), current_setting('t.tenant_a'));
select set_config('t.conversation', gen_random_uuid()::text, true);
select hipocampo.add_message(current_setting('t.conversation')::uuid, 'user', 'Meu voo para Recife sai às 9h.');
select set_config('t.session', hipocampo.open_session() ->> 'session_id', true);
select is(
    (select count(*) from hipocampo.search_history('voo para Recife')), 1::bigint,
    'user A finds their own message'
);
select pg_temp.act('authenticated', current_setting('t.user_a2'), current_setting('t.tenant_a'));
select is(
    (select count(*) from hipocampo.search_history('voo para Recife')), 0::bigint,
    'user A2 of the same tenant does not find user A''s message'
);
select throws_ok(
    format('select hipocampo.get_session(%L)', current_setting('t.session')),
    'P0002', 'unknown or expired session: ' || current_setting('t.session'),
    'user A2 cannot read user A''s session'
);

-- A message's tokens (history search's re-rank, migration 003500) are written by its owner only.
select pg_temp.act('authenticated', current_setting('t.user_a'), current_setting('t.tenant_a'));
select set_config('t.message', hipocampo.add_message(
    current_setting('t.conversation')::uuid, 'user', 'Chego em Recife ao meio-dia.',
    embedding => pg_temp.unit_vector(3)::extensions.vector
)::text, true);
select set_config(
    't.bits', repeat('1', (
        select e.dims from hipocampo_private.embedding_models as e
        where e.active
    )), true
);
select lives_ok(
    format(
        'select hipocampo.set_message_tokens(%s, array[2054], array[%L::varbit])',
        current_setting('t.message'), current_setting('t.bits')
    ),
    'user A stores the tokens of their own message'
);
select pg_temp.act('authenticated', current_setting('t.user_a2'), current_setting('t.tenant_a'));
select throws_ok(
    format(
        'select hipocampo.set_message_tokens(%s, array[2054], array[%L::varbit])',
        current_setting('t.message'), current_setting('t.bits')
    ),
    'P0002', 'unknown message: ' || current_setting('t.message'),
    'user A2 cannot write the tokens of user A''s message'
);

select * from finish();
rollback;
