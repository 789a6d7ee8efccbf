"""Web pages and sites (issue 59 §3): a small site served on loopback, crawled into the real
database with the real offline model; robots.txt, sitemaps, conditional re-sync and pruning."""

from __future__ import annotations

import hashlib
import json
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hipocampo import Hipocampo
from hipocampo.embeddings import count_tokens
from hipocampo.errors import InvalidInputError
from hipocampo.ingest.web import CrawlLimits, crawl, ingest_urls

from .conftest import CountingEmbedder

NAV = '<nav><a href="/">Início</a> <a href="/taxas.html">Taxas</a> <a href="/piscina.html">Piscina</a></nav>'
FOOT = "<footer><p>© 2026 Condomínio Sol. Todos os direitos reservados. Portal do morador.</p></footer>"


def page(title: str, body: str, links: str = "", nav: str = NAV) -> bytes:
    html = (
        f"<html><head><title>{title}</title></head><body>{nav}<main><article><h1>{title}</h1>{body}"
        f"{links}</article></main>{FOOT}</body></html>"
    )
    return html.encode("utf-8")


def site_pages() -> dict[str, tuple[str, bytes]]:
    html = "text/html; charset=utf-8"
    return {
        "/robots.txt": ("text/plain", b"User-agent: *\nDisallow: /privado/\n"),
        "/": (
            html,
            page(
                "Condomínio Sol",
                "<p>Bem-vindo ao portal do Condomínio Sol. Aqui ficam as regras e as taxas do prédio, "
                "publicadas pela administração para todos os moradores.</p>",
                '<p><a href="/taxas.html">Taxas</a> <a href="/piscina.html#horario">Piscina</a> '
                '<a href="/privado/atas.html">Atas</a> <a href="https://exemplo.org/fora.html">Fora</a> '
                '<a href="/logo.png">logo</a></p>',
            ),
        ),
        "/taxas.html": (
            html,
            page(
                "Taxas do condomínio",
                "<p>A taxa condominial vence todo dia 10 e o boleto chega por e-mail ao proprietário.</p>"
                "<table><tr><th>Unidade</th><th>Taxa</th></tr><tr><td>302</td><td>R$ 850,00</td></tr>"
                "<tr><td>401</td><td>R$ 920,00</td></tr></table>"
                "<p>Atrasos pagam multa de 2% mais juros de 1% ao mês.</p>",
                '<p><a href="/regras.html">Regras</a></p>',
            ),
        ),
        "/piscina.html": (
            html,
            page(
                "Piscina",
                "<p>A piscina abre às 9h e fecha às 21h, de terça a domingo; às segundas fica fechada"
                " para limpeza.</p>",
            ),
        ),
        "/regras.html": (
            html,
            page("Regras", "<p>O silêncio vale das 22h às 8h em todos os andares e nas áreas comuns do prédio.</p>"),
        ),
        "/privado/atas.html": (html, page("Atas", "<p>Ata secreta da assembleia, que ninguém deve ler.</p>")),
        "/sitemap.xml": (
            "application/xml",
            b'<?xml version="1.0" encoding="UTF-8"?>'
            b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            b"<url><loc>{base}/taxas.html</loc></url><url><loc>{base}/piscina.html</loc></url></urlset>",
        ),
    }


@dataclass
class Site:
    """The site: ``pages`` by path (content type, body), the requests it answered and how."""

    pages: dict[str, tuple[str, bytes]] = field(default_factory=site_pages)
    requests: Counter[str] = field(default_factory=Counter)
    answered: Counter[tuple[str, int]] = field(default_factory=Counter)
    base: str = ""


@pytest.fixture
def site() -> Iterator[Site]:
    s = Site()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            s.requests[self.path] += 1
            found = s.pages.get(self.path)
            if found is None:
                self.reply(404, "text/plain", b"not found")
                return
            kind, body = found
            body = body.replace(b"{base}", s.base.encode())
            etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
            if self.headers.get("If-None-Match") == etag:
                self.reply(304, kind, b"", etag)
                return
            self.reply(200, kind, body, etag)

        def reply(self, status: int, kind: str, body: bytes, etag: str | None = None) -> None:
            s.answered[(self.path, status)] += 1
            self.send_response(status)
            self.send_header("Content-Type", kind)
            if etag:
                self.send_header("ETag", etag)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    s.base = f"http://127.0.0.1:{server.server_port}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield s
    finally:
        server.shutdown()
        server.server_close()


def stored(client: Hipocampo, kb: str) -> dict[str, str]:
    """source_uri -> the document's chunk text, joined."""
    with client.transaction() as cur:
        cur.execute(
            "select d.source_uri, string_agg(c.content, ' ' order by c.chunk_index) as text"
            " from hipocampo_private.documents d join hipocampo_private.chunks c on c.document_id = d.id"
            " where d.kb_id = %s group by d.source_uri",
            (client.kb_id(kb),),
        )
        return {r["source_uri"]: r["text"] for r in cur.fetchall()}


def test_a_site_is_crawled_synced_and_pruned(site: Site, service_client: Hipocampo, counting: CountingEmbedder) -> None:
    base = site.base
    limits = CrawlLimits(depth=2)
    s1 = ingest_urls(service_client, "portal", [base + "/"], counting, count_tokens, limits=limits)
    docs = stored(service_client, "portal")
    assert sorted(docs) == [base + "/", base + "/piscina.html", base + "/regras.html", base + "/taxas.html"]
    assert s1.documents_ingested == 4 and s1.documents_failed == 0
    # robots.txt obeyed (the page never asked for), reported; other sites and images not followed.
    assert site.requests["/privado/atas.html"] == 0 and s1.disallowed == [base + "/privado/atas.html"]
    assert site.requests["/logo.png"] == 0
    # The main text: navigation and footer dropped, the table's rows keep their header.
    assert "Unidade: 302 · Taxa: R$ 850,00" in docs[base + "/taxas.html"]
    assert not any("direitos reservados" in t or "Início" in t for t in docs.values())
    question = "quanto paga o apartamento 302 de condomínio?"
    kb = service_client.kb_id("portal")
    hits = service_client.search(question, counting.embed_query(question), kb_ids=[kb], match_count=1)
    assert hits[0].source_uri == base + "/taxas.html"

    # Again: a sync. The pages at the last depth are asked for conditionally (304, no download),
    # the others read again and found unchanged by their hash: no embedding call at all.
    counting.calls = 0
    s2 = ingest_urls(service_client, "portal", [base + "/"], counting, count_tokens, limits=limits)
    assert (s2.documents_unchanged, s2.documents_ingested, counting.calls) == (4, 0, 0)
    assert site.answered[("/regras.html", 304)] == 1

    # A page changes and one is removed: the changed one alone is embedded; the removed is pruned.
    site.pages["/piscina.html"] = ("text/html", page("Piscina", "<p>A piscina agora abre às 7h, todos os dias.</p>"))
    del site.pages["/regras.html"]
    s3 = ingest_urls(service_client, "portal", [base + "/"], counting, count_tokens, limits=limits)
    assert (s3.documents_ingested, s3.documents_unchanged, s3.pruned) == (1, 2, [base + "/regras.html"])
    assert counting.calls == 1 and s3.documents_failed == 0
    docs = stored(service_client, "portal")
    assert base + "/regras.html" not in docs and "7h" in docs[base + "/piscina.html"]

    # Not linked any more: kept, unless --prune.
    reform = "<p>Portal em reforma; volte em breve para ver as regras.</p>"
    site.pages["/"] = ("text/html", page("Condomínio Sol", reform, nav=""))
    s4 = ingest_urls(service_client, "portal", [base + "/"], counting, count_tokens, limits=limits)
    assert s4.pruned == [] and len(stored(service_client, "portal")) == 3
    s5 = ingest_urls(service_client, "portal", [base + "/"], counting, count_tokens, limits=limits, prune=True)
    assert s5.pruned == [base + "/piscina.html", base + "/taxas.html"]
    assert sorted(stored(service_client, "portal")) == [base + "/"]


def test_a_sitemap_lists_the_pages(site: Site) -> None:
    found = crawl([site.base + "/sitemap.xml"])
    assert sorted(d.source_uri for d in found.pages) == [site.base + "/piscina.html", site.base + "/taxas.html"]
    assert all(d.metadata["version"].startswith("etag:") for d in found.pages)
    assert site.requests["/"] == 0  # depth 0: no link followed


def test_what_a_crawl_cannot_read_fails_with_its_reason(site: Site) -> None:
    site.pages["/planilha.xlsx"] = ("application/vnd.ms-excel", b"PK\x03\x04")
    site.pages["/vazia.html"] = ("text/html", b"<html><body><script>var menu = 1;</script></body></html>")
    found = crawl([site.base + "/planilha.xlsx", site.base + "/vazia.html", site.base + "/nada.html"])
    assert sorted(found.failed) == [
        (site.base + "/planilha.xlsx", "not a page hipocampo reads (application/vnd.ms-excel)"),
        (site.base + "/vazia.html", "no main text found in the page"),
    ]
    assert found.gone == [site.base + "/nada.html"]
    assert crawl([site.base + "/"], limits=CrawlLimits(depth=2, max_pages=2)).truncated
    with pytest.raises(InvalidInputError, match="depth must be between 0 and 5"):
        CrawlLimits(depth=9)
    with pytest.raises(InvalidInputError, match="not an http"):
        crawl(["ftp://example.org/"])


def test_the_cli_ingests_a_site(site: Site, database_url: str, tmp_path: Path) -> None:
    from hipocampo.cli import app

    env: dict[str, str] = {}
    tenant = f"web-{uuid.uuid4().hex[:8]}"
    run = CliRunner().invoke
    assert run(app, ["tenant", "create", "Portal", "--slug", tenant]).exit_code == 0
    args = ["ingest", site.base + "/", "--kb", "portal", "--tenant", tenant, "--create-kb", "--depth", "1", "--json"]
    res = run(app, args, env=env)
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["documents_ingested"] == 3 and out["disallowed"] == [site.base + "/privado/atas.html"]
    res = run(app, [*args[:-1]], env=env)
    assert res.exit_code == 0 and "0 ingested, 3 unchanged" in res.output
    mixed = run(app, ["ingest", site.base + "/", str(tmp_path), "--kb", "portal", "--tenant", tenant], env=env)
    assert mixed.exit_code == 1 and "pass files or URLs, not both in one run" in mixed.output
