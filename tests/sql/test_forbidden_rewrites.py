"""Forbidden sources hold in the database and survive rewriting (issue 57 §6): the 14 rewritten
secrets and records that `hipocampo ingest` stored go through an admin's ``ingest_document`` (the
RPC PostgREST exposes, without the CLI's checks) and none is stored: a credential is quarantined
(no text, no chunks), a transcript or a statement refused (22023, nothing written); a quarantined
file written again with its key split stays quarantined; the database's token rules are
detect-secrets' own (tools/secret_rules.py); what only resembles them is stored."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tools.secret_rules import denylist, rules, to_postgres

from ..conftest import MODEL, World, unit_vector

pytestmark = pytest.mark.any_model

Conn = psycopg.Connection[dict[str, Any]]

AWS = "AKIAIOSFODNN7EXAMPLE"
GHP = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
SK_PROJ = "sk-proj-" + "Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90"
PEM_BODY = "\n".join(["MIIEowIBAAKCAQEA" + "x" * 48] + ["A" * 32 + "b" * 32] * 4)

# name -> (text, the kind found); each got through as a stored, active document before
REWRITES = {
    "AWS key split across two lines": ("Config:\nchave = AKIAIOSF\nODNN7EXAMPLE\nfim", "credentials"),
    "AWS key with zero-width spaces": ("chave " + "\u200b".join(AWS), "credentials"),
    "AWS key in groups of 4": ("chave " + " ".join(AWS[i : i + 4] for i in range(0, 20, 4)), "credentials"),
    "AWS key in base64": ("chave " + base64.b64encode(f"aws_access_key_id = {AWS}".encode()).decode(), "credentials"),
    "ghp_ token hyphenated across a line": (f"token {GHP[:20]}-\n{GHP[20:]}", "credentials"),
    "sk-proj- key in groups of 8": (
        "key " + " ".join(SK_PROJ[i : i + 8] for i in range(0, len(SK_PROJ), 8)),
        "credentials",
    ),
    "a password in a sentence": ("A senha do wifi da portaria é Portaria#2024, não divulgue.", "credentials"),
    "a full-width senha:": ("ｓｅｎｈａ: Segredo123", "credentials"),
    "a PEM body without its BEGIN line": (
        "chave privada:\n" + PEM_BODY + "\n-----END RSA PRIVATE KEY-----",
        "credentials",
    ),
    "a PEM body alone": ("chave:\n" + PEM_BODY + "\n", "credentials"),
    "a transcript labelled U:/A:": (
        "U: oi\nA: olá, como posso ajudar?\nU: qual a taxa?\nA: R$ 850,00\nU: obrigado",
        "transcript",
    ),
    "a statement with amounts followed by BRL": (
        "Extrato da conta\n" + "\n".join(f"0{i}/01 PIX RECEBIDO 1.234,5{i} BRL" for i in range(1, 7)),
        "financial_statement",
    ),
    "a statement as CSV": (
        "Extrato bancário\ndata;descricao;valor;moeda\n"
        + "\n".join(f"0{i}/01/2026;PIX;-1.234,5{i};BRL" for i in range(1, 7)),
        "financial_statement",
    ),
    "a ghp_ token as written": (f"token {GHP}", "credentials"),
}

# What only resembles them (a condominium's documents): stored.
RESEMBLING = [
    "P: Qual a senha do wifi?\nR: A senha é fornecida na portaria.\nAPARTAMENTO 302 BLOCO B",
    "A senha deve ter 8 caracteres. A senha é pessoal e intransferível.",
    "Q: What is the fee?\nA: 850 BRL.\nQ: When?\nA: Monthly.",
    "Prestação de contas de março\n" + "\n".join(f"0{i}/03 Água 1.234,5{i}" for i in range(1, 7)),
]


def ingest(db: Conn, world: World, uri: str, text: str, content_hash: str = "v1") -> dict[str, Any]:
    chunks = [
        {
            "chunk_index": i,
            "content": part,
            "token_count": 5,
            "content_hash": f"{uri}-{content_hash}-{i}",
            "embedding": unit_vector(i),
        }
        for i, part in enumerate(text.split("\n\n"))
    ]
    doc = {"title": uri, "source_uri": uri, "content_hash": content_hash, "source_type": "other"}
    row = db.execute(
        "select hipocampo.ingest_document(%s, %s::jsonb, %s::jsonb, %s) as r",
        (world.kb_a, json.dumps(doc), json.dumps(chunks), MODEL),
    ).fetchone()
    assert row is not None
    return dict(row["r"])


def stored(db: Conn, uri: str) -> dict[str, Any] | None:
    return db.execute(
        "select d.status, d.quarantine, (select count(*) from hipocampo_private.chunks as c where c.document_id = d.id)"
        " as chunks from hipocampo_private.documents as d where d.source_uri = %s",
        (uri,),
    ).fetchone()


@pytest.mark.parametrize("name", REWRITES)
def test_an_admins_ingest_document_stores_no_rewritten_secret(db: Conn, world: World, name: str) -> None:
    text, kind = REWRITES[name]
    world.act("authenticated", world.admin_a, world.tenant_a)
    uri = f"test://rewrite/{name}"
    if kind == "credentials":  # forbidden_sources.credentials = quarantine
        result = ingest(db, world, uri, text)
        assert result["status"] == "quarantined" and result["chunks"] == 0, result
        assert result["quarantine"]["kind"] == "credentials"
        row = stored(db, uri)
        assert row is not None and row["status"] == "quarantined" and row["chunks"] == 0
    else:  # transcript and financial_statement = refuse
        with pytest.raises(psycopg.errors.InvalidParameterValue, match=f"forbidden kind \\({kind}\\)"):
            ingest(db, world, uri, text)
        db.rollback()
        world.act("authenticated", world.admin_a, world.tenant_a)
        assert stored(db, uri) is None


def test_the_reason_never_carries_the_secret(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    result = ingest(db, world, "test://rewrite/reason", REWRITES["AWS key in groups of 4"][0])
    assert result["quarantine"]["reason"] == "a credential (AWSKeyDetector) written split or spaced"
    assert "IOSF" not in json.dumps(result)


def test_a_quarantined_file_written_again_with_its_key_split_stays_quarantined(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    uri = "test://rewrite/again"
    assert ingest(db, world, uri, f"chave {AWS}", "v1")["status"] == "quarantined"
    assert ingest(db, world, uri, "chave AKIAIOSF\nODNN7EXAMPLE", "v2")["status"] == "quarantined"
    row = stored(db, uri)
    assert row is not None and row["status"] == "quarantined" and row["chunks"] == 0
    # Its secret removed, it is an ordinary document again.
    assert ingest(db, world, uri, "chave removida", "v3")["status"] == "replaced"
    row = stored(db, uri)
    assert row is not None and row["status"] == "active" and row["chunks"] == 1


def test_the_bulk_path_quarantines_the_one_and_writes_the_others(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    items = [
        {
            "document": {"title": uri, "source_uri": uri, "content_hash": "v1", "source_type": "other"},
            "chunks": [
                {"chunk_index": 0, "content": text, "token_count": 3, "content_hash": uri, "embedding": unit_vector(n)}
            ],
        }
        for n, (uri, text) in enumerate(
            [("test://bulk/a", "Regimento"), ("test://bulk/b", f"token {GHP}"), ("test://bulk/c", "Ata")]
        )
    ]
    row = db.execute(
        "select hipocampo.ingest_documents(%s, %s::jsonb, %s) as r", (world.kb_a, json.dumps(items), MODEL)
    ).fetchone()
    assert row is not None
    assert [r["status"] for r in row["r"]] == ["inserted", "quarantined", "inserted"]
    assert [r["chunks"] for r in row["r"]] == [1, 0, 1]


def test_a_source_type_that_allows_a_kind_stores_it(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    text = REWRITES["a statement as CSV"][0]
    chunks = [
        {"chunk_index": 0, "content": text, "token_count": 9, "content_hash": "metric", "embedding": unit_vector(1)}
    ]
    doc = {"title": "Contas", "source_uri": "test://rewrite/metric", "content_hash": "v1", "source_type": "metric"}
    row = db.execute(
        "select hipocampo.ingest_document(%s, %s::jsonb, %s::jsonb, %s) as r",
        (world.kb_a, json.dumps(doc), json.dumps(chunks), MODEL),
    ).fetchone()
    assert row is not None and row["r"]["status"] == "inserted"  # by_source_type.metric.financial_statement = allow


@pytest.mark.parametrize("text", RESEMBLING)
def test_what_only_resembles_them_is_stored(db: Conn, world: World, text: str) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    assert ingest(db, world, f"test://resembling/{hash(text)}", text)["status"] == "inserted"


def test_the_databases_token_rules_are_detect_secrets(db: Conn, world: World) -> None:
    world.act("authenticated", world.admin_a, world.tenant_a)
    in_db = db.execute("select name, pattern, ignore_case from hipocampo_private._secret_rules()").fetchall()
    assert [(r["name"], r["pattern"], r["ignore_case"]) for r in in_db] == rules()
    for r in in_db:  # every one compiles as PostgreSQL reads it
        db.execute("select '' ~ %s", (r["pattern"],))


def test_every_credential_rule_has_literals(db: Conn) -> None:
    """_credential_found tries, on a text its screen lets through, only the rules whose literal
    the text holds: a rule without literals would never be tried, a literal of no rule is stale."""
    rows = db.execute(
        "select r.name, l.name as literal_of from (select name from hipocampo_private._secret_rules()"
        " union select name from hipocampo_private._own_credential_rules()) as r"
        " full join (select distinct name from hipocampo_private._credential_rule_literals()) as l"
        " on l.name = r.name where r.name is null or l.name is null"
    ).fetchall()
    assert rows == []


DENYLIST = denylist()

# A match of each of hipocampo's own rules (_own_credential_rules), as the screen must let it through.
OWN_MATCHES = [
    "A senha do wifi da portaria é Portaria#2024",
    "the wifi password is Tr0ub4dor&3",
    "Código de acesso é 4455#",
    "PIN = 1234",
    "-----END EC PRIVATE KEY-----",
    PEM_BODY + "\n",
    SK_PROJ,
    "token=AKCp8abcdefghij1 ",
    "chave AP6xyz12345678 ",
]

# Tokens of small letters only (no capital, digit or _+=\\ in their run of 20): the screen finds
# them by the rule's literal or the name before the value.
SMALL_LETTER_TOKENS = [
    "12345678:" + "a" * 35,  # Telegram
    "cloudant_key = " + "a" * 24,
    "token = " + "a" * 44,  # IBM Cloud IAM
    "secret_key = " + "a" * 48,  # IBM COS HMAC
    "https://api.softlayer.com/soap/v3/" + "a" * 64,
    "aws_key = '" + "a" * 40 + "'",
    "a" * 32 + "-us1",  # Mailchimp
    "sk-proj-" + "a" * 20,
    "glpat-" + "a" * 20,
    "\n".join(["x"] + ["a" * 64] * 3 + [""]),  # PEM lines
]


@pytest.mark.parametrize("n", range(len(DENYLIST)), ids=[f"{i}-{name}" for i, (name, _) in enumerate(DENYLIST)])
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_match_of_a_token_rule_is_found_past_the_screen(db: Conn, n: int, data: st.DataObject) -> None:
    """_credential_found screens a text (small expressions, one of which every rule's match
    satisfies), then tries the rules whose literal it holds; a text the rule matches, as
    PostgreSQL reads the rule, after the PII normalizer, is found: neither the screen nor the
    literals hide a credential."""
    name, pattern = DENYLIST[n]
    text = data.draw(st.from_regex(pattern, alphabet=st.characters(codec="ascii", exclude_characters="\x00")))
    row = db.execute(
        "select case when %(folded)s then v[1] ~* %(p)s else v[1] ~ %(p)s end as matches,"
        " hipocampo_private._credential_found(%(t)s, '{}') as found"
        " from hipocampo_private._forbidden_views(%(t)s) as v",
        {"t": text, "p": to_postgres(pattern.pattern), "folded": bool(pattern.flags & re.IGNORECASE)},
    ).fetchone()
    assert row is not None
    if row["matches"]:
        assert row["found"] is not None, (name, text)


@pytest.mark.parametrize("text", OWN_MATCHES + SMALL_LETTER_TOKENS)
def test_every_listed_match_is_found_past_the_screen(db: Conn, text: str) -> None:
    """Matches hypothesis does not draw: hipocampo's own rules (written for PostgreSQL) and tokens
    of small letters only, which the screen finds by a literal or the name before the value;
    each past the rules' literals too."""
    row = db.execute(
        "select exists (select 1 from (select * from hipocampo_private._secret_rules()"
        " union all select * from hipocampo_private._own_credential_rules()) as r"
        " where case when r.ignore_case then v[1] ~* r.pattern else v[1] ~ r.pattern end) as matches,"
        " hipocampo_private._credential_found(%(t)s, '{}') as found"
        " from hipocampo_private._forbidden_views(%(t)s) as v",
        {"t": text},
    ).fetchone()
    assert row is not None and row["matches"], text
    assert row["found"] is not None, text
