-- Memories proposed from what the user says (issue 59 §6), offline: explicit first-person
-- statements found by rules a reader can check ("meu nome é …", "moro no apto …", "prefiro …",
-- "sou alérgico a …", and their English forms), each passed through the memory gate (_remember:
-- consent, forbidden kinds, personal data, duplicates, the explicit-user rule, staging by
-- intensity) with source 'conversation' and the message it came from (source_ref 'message:<id>').

/*
_memory_proposals(content text) -> table (key text, value jsonb, description text, category text, rule text)

Purpose: the memory candidates of one message by the offline rules, in the order below; at most
  one per rule. name: "meu nome é / me chamo / pode me chamar de / my name is" and one to four
  capitalised words (identity.name); unit: "moro no / na, sou do / da, meu apartamento é o, I live
  in" then apto / apartamento / unidade / casa / apartment / unit and a number (identity.unit);
  preference: "prefiro / I prefer" and what follows, to the end of the sentence, 3..120
  characters (preference.<its first three words>); allergy: "sou alérgico / alérgica a, tenho
  alergia a, I'm / I am allergic to" and what follows, to a comma or the end of the sentence
  (health.allergy; the gate's forbidden kind health_data refuses it unless the operator allows
  health data).
Parameters: content - a user's message (any length; only its first 4,000 characters are read).
Returns: zero to four rows.
Errors: none.
Example: select * from hipocampo_private._memory_proposals('Oi, meu nome é Ana Souza e moro no apto 302.');
*/
create or replace function hipocampo_private._memory_proposals(content text)
returns table (key text, value jsonb, description text, category text, rule text)
language plpgsql
immutable
security invoker
set search_path = ''
as $$
declare
    body text := left(coalesce(content, ''), 4000);
    upper_word constant text := '[A-ZÀ-Ý][a-zà-ÿA-ZÀ-Ý''-]+';
    found text[];
    words text;
begin
    found := regexp_match(body, '(?:^|[^[:alpha:]])(?:[Mm]eu nome (?:é|e)|[Mm]e chamo|[Pp]ode me chamar de|[Mm]y name is|[Cc]all me)\s+('
        || upper_word || '(?:\s+(?:d[aeo]s?\s+)?' || upper_word || '){0,3})');
    if found is not null then
        return query select 'identity.name', to_jsonb(found[1]), 'Nome: ' || found[1], 'identity_profile', 'name';
    end if;
    found := regexp_match(body, '(?:^|[^[:alpha:]])(?:[Mm]oro n[oa]|[Ss]ou d[oa]|[Mm]eu apartamento (?:é|e) o|I live in)\s+'
        || '(?:(?:o |a |the )?(?:apto\.?|apartamento|ap\.?|unidade|casa|apartment|unit|flat)\s*)(?:n[º°o]\.?\s*)?(\d{1,5}[A-Za-z]?)\M');
    if found is not null then
        return query select 'identity.unit', to_jsonb(found[1]), 'Mora na unidade ' || found[1], 'identity_profile', 'unit';
    end if;
    found := regexp_match(body, '(?:^|[^[:alpha:]])(?:[Ee]u )?(?:[Pp]refiro|I prefer)\s+([^.!?\n]{3,120})');
    if found is not null then
        words := array_to_string((regexp_split_to_array(hipocampo_private._plain_words(found[1]), '\s+'))[1:3], '_');
        if words ~ '^[a-z0-9_]+$' then
            return query select 'preference.' || words, to_jsonb(btrim(found[1])), 'Prefere ' || btrim(found[1]),
                'preference', 'preference';
        end if;
    end if;
    found := regexp_match(body, '(?:^|[^[:alpha:]])(?:[Ss]ou al[ée]rgic[oa] (?:a|ao|à)|[Tt]enho alergia (?:a|ao|à)|I''?m allergic to|I am allergic to)\s+([^.!?,;\n]{2,80})');
    if found is not null then
        return query select 'health.allergy', to_jsonb(btrim(found[1])), 'Alergia a ' || btrim(found[1]),
            'identity_profile', 'allergy';
    end if;
end;
$$;

/*
_propose_memories(tenant_id uuid, user_id uuid, conversation_id uuid, message_id bigint, content text) -> integer

Purpose: pass the memory candidates of a user's message (_memory_proposals) through the memory
  gate (_remember with source 'conversation', confidence 0.8, source_ref 'message:<id>', the
  conversation), when memory.propose_from_messages is on (default) and the user has consented to
  long-term memory (without consent nothing is proposed, and nothing recorded). Each attempt is
  in memory_events as any write's is (created, unchanged, duplicate, rejected with its reason);
  a memory the user stated or corrected (explicit_user) is never overridden.
Parameters: the message's tenant, user, conversation, id and text (add_message's, role user).
Returns: how many candidates the gate took (created, updated or staged).
Errors: none of its own; _remember's raised errors (42501 as _memory_actor) propagate.
Example: select hipocampo_private._propose_memories(t, u, c, 42, 'meu nome é Ana');
*/
create or replace function hipocampo_private._propose_memories(
    tenant_id uuid, user_id uuid, conversation_id uuid, message_id bigint, content text
)
returns integer
language plpgsql
security invoker
set search_path = ''
as $$
declare
    p record;
    out_ jsonb;
    taken integer := 0;
begin
    if not coalesce((hipocampo.effective_config(_propose_memories.tenant_id) #>> '{memory,propose_from_messages}')::boolean, true)
        or not hipocampo_private._has_consent(_propose_memories.tenant_id, _propose_memories.user_id) then
        return 0;
    end if;
    for p in select * from hipocampo_private._memory_proposals(_propose_memories.content) loop
        out_ := hipocampo_private._remember(
            p.key, p.value, p.description, p.category, null, 'personal', 0.8, 'conversation',
            'message:' || _propose_memories.message_id, _propose_memories.conversation_id,
            array[p.category, 'from_conversation'], null, null, null, false, null, null,
            _propose_memories.user_id, _propose_memories.tenant_id, 'auto'
        );
        if out_ ->> 'status' in ('created', 'updated', 'staged') then
            taken := taken + 1;
        end if;
    end loop;
    return taken;
end;
$$;
