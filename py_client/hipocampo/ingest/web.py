"""Web pages and sites (issue 59 §3): fetch, extract the main text, keep the URL as the source.

A start URL is fetched and so, up to ``depth`` links away, are the pages it links to on the same
site (the same scheme, host and port as a start URL). A sitemap (any start URL answering an XML
``<urlset>`` or ``<sitemapindex>``) lists the pages instead: each is fetched as a start page.
robots.txt is read once per site and obeyed for hipocampo's user agent (``urllib.robotparser``),
its Crawl-delay too (at most 10 s); a URL it disallows is not fetched and is reported.

A page's main text is trafilatura's (navigation, headers and footers dropped; headings kept as
``#`` lines, so the chunker cuts by section); its tables become rows that keep their header, as
DOCX and PDF tables do. A linked PDF or DOCX goes through the file loaders. The page's URL (after
redirects) is the document's ``source_uri``.

Re-sync, the same command run again (by cron, for example): each page's HTTP validator (its ETag,
else its Last-Modified) is stored as the document's ``version``; a page whose links the crawl does
not need (a sitemap's pages, the pages at the last depth) is asked for with If-None-Match /
If-Modified-Since, and a 304 is unchanged without a download; a page whose text hashes as stored
costs no embedding either (the pipeline's content hash). A stored page that answers 404 or 410 is
deleted (pruned); with ``prune``, so is a stored page of the site that the crawl no longer reaches,
unless the crawl failed somewhere or stopped at ``max_pages``.
"""

from __future__ import annotations

import re
import tempfile
import time
import urllib.robotparser
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urldefrag, urljoin, urlsplit
from xml.etree import ElementTree

from ..errors import InvalidInputError, LoaderError, NotFoundError
from ..models import DocumentResult, IngestSummary
from .loaders import LoadedDocument, _grid_rows, load_path, normalize_text
from .pipeline import DocumentInput, ProgressHook, ingest_documents
from .scrub import ScrubProgress

if TYPE_CHECKING:
    import httpx

    from ..client import Hipocampo
    from ..embeddings.base import EmbeddingProvider

__all__ = ["USER_AGENT", "Crawl", "CrawlLimits", "crawl", "ingest_urls", "is_url"]

USER_AGENT = "hipocampo/0.1 (knowledge-base ingestion; +https://github.com/hipocampo/hipocampo)"
_HTML_TYPES = ("text/html", "application/xhtml+xml")
_FILE_TYPES = {
    "application/pdf": ".pdf",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
}
# Links to these are not followed (they are not pages; a PDF or DOCX link is).
_NOT_PAGES = re.compile(r"\.(?:png|jpe?g|gif|svg|webp|ico|css|js|zip|gz|tar|mp[34]|avi|mov|woff2?|ttf)$", re.I)
_MAX_CRAWL_DELAY_S = 10.0


def is_url(text: str) -> bool:
    """Whether ``text`` is an http(s) URL (what `hipocampo ingest` crawls instead of reading a path)."""
    return text.startswith(("http://", "https://"))


@dataclass(frozen=True)
class CrawlLimits:
    """How far a crawl goes: ``depth`` links from a start page (0..5; 0 = the start pages, or a
    sitemap's pages, only), ``max_pages`` fetched at most (1..10,000), ``timeout_s`` per request
    (1..120 s), ``max_page_mb`` per response body (0.1..100 MB; a bigger one fails)."""

    depth: int = 0
    max_pages: int = 200
    timeout_s: float = 20.0
    max_page_mb: float = 10.0

    def __post_init__(self) -> None:
        bounds = {
            "depth": (self.depth, 0, 5),
            "max_pages": (self.max_pages, 1, 10_000),
            "timeout_s": (self.timeout_s, 1, 120),
            "max_page_mb": (self.max_page_mb, 0.1, 100),
        }
        for name, (value, low, high) in bounds.items():
            if not low <= value <= high:
                raise InvalidInputError(f"{name} must be between {low:g} and {high:g} (got {value:g})", "22023")


@dataclass
class Crawl:
    """What a crawl found: ``pages`` fetched and read (each ``metadata["version"]`` its validator),
    ``unchanged`` URLs (304), ``failed`` (URL, reason), ``gone`` URLs (404 / 410), ``disallowed``
    by robots.txt, ``reached`` every URL asked for (a redirect's target included), and whether it
    stopped at ``max_pages`` (``truncated``)."""

    pages: list[LoadedDocument] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)
    disallowed: list[str] = field(default_factory=list)
    reached: set[str] = field(default_factory=set)
    truncated: bool = False


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def _normal(url: str) -> str:
    """The URL without its fragment (``#…``), as pages are told apart."""
    return urldefrag(url.strip())[0]


def _validator(headers: Mapping[str, str]) -> str | None:
    """The response's validator as stored in ``version``: ``etag:<ETag>``, else
    ``last-modified:<date>``, else None."""
    if headers.get("etag"):
        return f"etag:{headers['etag']}"
    if headers.get("last-modified"):
        return f"last-modified:{headers['last-modified']}"
    return None


def _conditional(version: str | None) -> dict[str, str]:
    """The request headers that turn a stored ``version`` into a conditional GET."""
    if version and version.startswith("etag:"):
        return {"If-None-Match": version.removeprefix("etag:")}
    if version and version.startswith("last-modified:"):
        return {"If-Modified-Since": version.removeprefix("last-modified:")}
    return {}


def _pipe_tables(text: str) -> str:
    """trafilatura's Markdown tables (``| a | b |`` lines) as rows that keep their header
    (``Unidade: 302 · Taxa: R$ 850,00``, :func:`hipocampo.ingest.loaders._grid_rows`)."""
    out: list[str] = []
    grid: list[list[str]] = []

    def flush() -> None:
        if grid:
            out.append("\n".join(_grid_rows(grid)))
            grid.clear()

    for line in text.split("\n"):
        stripped = line.strip()
        if stripped.startswith("|") and stripped.endswith("|"):
            cells = [c.strip() for c in stripped.strip("|").split("|")]
            if not all(re.fullmatch(r":?-+:?", c) for c in cells if c):  # not the |---| rule
                grid.append(cells)
            continue
        flush()
        out.append(line)
    flush()
    return "\n".join(out)


def _read_html(html: str, url: str) -> LoadedDocument:
    """A page's main text (trafilatura) and title."""
    import trafilatura
    from trafilatura.settings import use_config

    # trafilatura falls back to its baseline (every text of the page in one line, navigation
    # included) when the main text is under 250 characters: a short page (a notice, a FAQ entry)
    # keeps its main text, headings and tables instead.
    config = use_config()
    config.set("DEFAULT", "MIN_EXTRACTED_SIZE", "1")
    text = trafilatura.extract(
        html,
        url=url,
        output_format="markdown",
        include_tables=True,
        include_comments=False,
        favor_recall=True,
        config=config,
    )
    if not text or not text.strip():
        raise LoaderError(f"{url}: no main text found in the page")
    meta = trafilatura.extract_metadata(html)
    title = (meta.title if meta is not None else None) or urlsplit(url).path.rsplit("/", 1)[-1] or url
    return LoadedDocument(title.strip(), normalize_text(_pipe_tables(text)), url)


def _read_file(body: bytes, suffix: str, url: str) -> list[LoadedDocument]:
    """A linked PDF or DOCX read by the file loaders, its URL as the source."""
    with tempfile.TemporaryDirectory(prefix="hipocampo-web-") as tmp:
        name = urlsplit(url).path.rsplit("/", 1)[-1] or "document"
        path = Path(tmp) / (name if name.lower().endswith(suffix) else name + suffix)
        path.write_bytes(body)
        docs = load_path(path)
    for n, d in enumerate(docs):
        d.source_uri = url if len(docs) == 1 else f"{url}#{n + 1}"
    return docs


def _links(html: str, base: str) -> list[str]:
    """The http(s) links of a page, absolute, without fragments, in page order."""
    from bs4 import BeautifulSoup

    out: list[str] = []
    for a in BeautifulSoup(html, "html.parser").find_all("a", href=True):
        href = _normal(urljoin(base, str(a["href"])))
        if is_url(href) and not _NOT_PAGES.search(urlsplit(href).path):
            out.append(href)
    return out


def _sitemap(body: bytes) -> tuple[str, list[str]] | None:
    """(``urlset`` | ``sitemapindex``, the ``<loc>`` URLs) when ``body`` is a sitemap, else None."""
    head = body[:512].lstrip()
    if not (head.startswith(b"<?xml") or head.startswith(b"<urlset") or head.startswith(b"<sitemapindex")):
        return None
    try:
        root = ElementTree.fromstring(body)
    except ElementTree.ParseError:
        return None
    kind = root.tag.rsplit("}", 1)[-1]
    if kind not in ("urlset", "sitemapindex"):
        return None
    locs = [(e.text or "").strip() for e in root.iter() if e.tag.rsplit("}", 1)[-1] == "loc"]
    return kind, [_normal(u) for u in locs if is_url(u.strip())]


class _Crawler:
    """One crawl's state: the HTTP client, robots.txt per site, the queue and what was found."""

    def __init__(
        self, http: httpx.Client, starts: Sequence[str], versions: Mapping[str, str | None], limits: CrawlLimits
    ) -> None:
        self.http = http
        self.versions = versions
        self.limits = limits
        self.sites = {_origin(u) for u in starts}
        self.robots: dict[str, urllib.robotparser.RobotFileParser] = {}
        self.last_request: dict[str, float] = {}
        self.out = Crawl()
        self.queue: deque[tuple[str, int]] = deque((_normal(u), 0) for u in starts)
        self.fetched = 0

    def robots_for(self, url: str) -> urllib.robotparser.RobotFileParser:
        import httpx

        site = _origin(url)
        if site not in self.robots:
            rp = urllib.robotparser.RobotFileParser(f"{site}/robots.txt")
            try:
                r = self.http.get(f"{site}/robots.txt")
                lines = r.text.splitlines() if r.status_code == 200 else []
                if r.status_code in (401, 403):
                    rp.parse(["User-agent: *", "Disallow: /"])  # robots.txt itself forbidden: keep out
                else:
                    rp.parse(lines)  # 404 and the like: everything allowed
            except httpx.HTTPError:  # unreachable robots.txt: as if it allowed everything
                rp.parse([])
            self.robots[site] = rp
        return self.robots[site]

    def polite(self, url: str) -> None:
        """Wait the site's Crawl-delay since its last request."""
        delay = self.robots_for(url).crawl_delay(USER_AGENT)
        site = _origin(url)
        if delay and site in self.last_request:
            wait = min(float(delay), _MAX_CRAWL_DELAY_S) - (time.monotonic() - self.last_request[site])
            if wait > 0:
                time.sleep(wait)
        self.last_request[site] = time.monotonic()

    def get(self, url: str, conditional: bool) -> tuple[httpx.Response, bytes]:
        headers = _conditional(self.versions.get(url)) if conditional else {}
        limit = int(self.limits.max_page_mb * 1_000_000)
        with self.http.stream("GET", url, headers=headers) as r:
            body = bytearray()
            for part in r.iter_bytes():
                body += part
                if len(body) > limit:
                    raise LoaderError(f"{url}: the page is over {self.limits.max_page_mb:g} MB")
        return r, bytes(body)

    def run(self) -> Crawl:
        seen: set[str] = set()
        while self.queue:
            url, depth = self.queue.popleft()
            if url in seen or _origin(url) not in self.sites:
                continue
            seen.add(url)
            if not self.robots_for(url).can_fetch(USER_AGENT, url):
                self.out.disallowed.append(url)
                continue
            if self.fetched >= self.limits.max_pages:
                self.out.truncated = True
                break
            self.fetched += 1
            self.visit(url, depth)
        return self.out

    def visit(self, url: str, depth: int) -> None:
        import httpx

        self.polite(url)
        leaf = depth >= self.limits.depth
        self.out.reached.add(url)
        try:
            r, body = self.get(url, conditional=leaf)
        except LoaderError as exc:
            self.out.failed.append((url, exc.message.removeprefix(f"{url}: ")))
            return
        except httpx.HTTPError as exc:
            self.out.failed.append((url, f"could not fetch it ({type(exc).__name__}: {exc})"))
            return
        final = _normal(str(r.url))
        self.out.reached.add(final)
        if r.status_code == 304:
            self.out.unchanged.append(url)
        elif r.status_code in (404, 410):
            self.out.gone.append(url)
        elif r.status_code != 200:
            self.out.failed.append((url, f"HTTP {r.status_code}"))
        elif _origin(final) not in self.sites:
            self.out.failed.append((url, f"redirected off the site, to {final}"))
        else:
            self.read(final, depth, r, body)

    def read(self, url: str, depth: int, r: httpx.Response, body: bytes) -> None:
        kind = r.headers.get("content-type", "").split(";")[0].strip().lower()
        found = _sitemap(body) if "xml" in kind or kind in ("", "text/plain") else None
        version = _validator(r.headers)
        try:
            if found is not None:
                self.queue.extend((u, 0) for u in found[1])  # a sitemap's pages are start pages
                return
            if kind in _HTML_TYPES:
                html = body.decode(r.charset_encoding or "utf-8", "replace")
                doc = _read_html(html, url)
                if depth < self.limits.depth:
                    self.queue.extend((u, depth + 1) for u in _links(html, url))
                docs = [doc]
            elif kind in _FILE_TYPES:
                docs = _read_file(body, _FILE_TYPES[kind], url)
            elif kind == "text/plain":
                text = body.decode(r.charset_encoding or "utf-8", "replace")
                docs = [LoadedDocument(url.rsplit("/", 1)[-1] or url, normalize_text(text), url)]
            else:
                raise LoaderError(f"{url}: not a page hipocampo reads ({kind or 'no content type'})")
        except LoaderError as exc:
            self.out.failed.append((url, exc.message.split(": ", 1)[-1]))
            return
        for d in docs:
            d.metadata["version"] = version
        self.out.pages.extend(docs)


def crawl(
    starts: Sequence[str],
    versions: Mapping[str, str | None] | None = None,
    limits: CrawlLimits | None = None,
    http: httpx.Client | None = None,
) -> Crawl:
    """Crawl ``starts`` (page or sitemap URLs) as the module says; ``versions`` maps stored page
    URLs to their ``version`` (the validator a conditional GET sends back).

    Raises:
        InvalidInputError (22023): a start that is not an http(s) URL.
    """
    for u in starts:
        if not is_url(u):
            raise InvalidInputError(f"not an http(s) URL: {u}", "22023")
    import httpx

    limits = limits or CrawlLimits()
    own = http is None
    client = http or httpx.Client(follow_redirects=True, timeout=limits.timeout_s, headers={"User-Agent": USER_AGENT})
    try:
        return _Crawler(client, starts, versions or {}, limits).run()
    finally:
        if own:
            client.close()


def ingest_urls(
    client: Hipocampo,
    kb_name: str,
    urls: Sequence[str],
    embedder: EmbeddingProvider,
    count_tokens: Callable[[str], int],
    *,
    limits: CrawlLimits | None = None,
    source_type: str = "other",
    trust_score: float | None = None,
    prune: bool = False,
    on_document: ProgressHook | None = None,
    create_kb: bool = True,
    on_total: Callable[[int], None] | None = None,
    on_scrub: ScrubProgress | None = None,
    http: httpx.Client | None = None,
) -> IngestSummary:
    """Crawl ``urls`` (:func:`crawl`) and ingest the pages into ``kb_name`` as
    :func:`hipocampo.ingest.ingest_paths` ingests files: a page that fails is a failed document
    (a 404 of a page never stored included), a 304 an unchanged one. Then the stored pages of
    these sites that answered 404 / 410 are deleted and, with ``prune``, those the crawl no longer
    reaches (never when a page failed or the crawl stopped at ``max_pages``); their URLs are the
    summary's ``pruned``, robots.txt's refusals its ``disallowed``.

    Raises:
        InvalidInputError: a URL that is not http(s), limits out of their bounds.
        NotFoundError: unknown knowledge base and ``create_kb`` false.
        PermissionDeniedError: the actor may not write this tenant's KB.
    """
    sites = {_origin(u) for u in urls}
    try:
        stored = client.document_hashes(client.kb_id(kb_name), embedder.model_name)
    except NotFoundError:
        stored = {}
    mine = {u: s for u, s in stored.items() if is_url(u) and _origin(u) in sites}
    # Asked for conditionally only when a 304 leaves nothing to do: embedded by this model, of
    # the source type and trust asked for (else the page is read and compared as a file is).
    same = {
        u: s.version
        for u, s in mine.items()
        if s.embedded
        and s.source_type == source_type
        and (trust_score is None or abs(s.trust_score - trust_score) <= 1e-6)
    }
    found = crawl(urls, same, limits, http)
    gone = [u for u in found.gone if u in mine]
    failures = [DocumentResult(source_uri=u, title=u, status="failed", error=e) for u, e in found.failed]
    failures += [
        DocumentResult(source_uri=u, title=u, status="failed", error="HTTP 404 (not found)")
        for u in found.gone
        if u not in mine
    ]
    unchanged = [DocumentResult(source_uri=u, title=u, status="unchanged") for u in found.unchanged]
    if on_total is not None:
        on_total(len(found.pages) + len(failures) + len(unchanged))
    summary = ingest_documents(
        client,
        kb_name,
        [DocumentInput(d, source_type, trust_score) for d in found.pages],
        embedder,
        count_tokens,
        failures=failures,
        unchanged=unchanged,
        on_document=on_document,
        create_kb=create_kb,
        on_scrub=on_scrub,
    )
    summary.disallowed = found.disallowed
    if prune and not found.failed and not found.truncated:
        gone += [u for u in mine if u not in found.reached and u not in gone]
    for u in gone:
        client.delete_document(mine[u].document_id)
    summary.pruned = sorted(gone)
    return summary
