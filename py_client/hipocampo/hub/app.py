"""The knowledge-base hub (issue 21): server-rendered pages for a tenant's admins and members,
mounted by ``hipocampo serve`` at ``/hub``.

Every request acts as the signed-in user: the JWT in the session cookie is verified like a bearer
token of the API (the same verifier) and its role and claims are set on each database
transaction, so RLS and the caller model decide what a page shows and what a form may change.
Pages call the public RPCs only, through :class:`~hipocampo.client.Hipocampo`. Admin-only pages
(settings, uploads, document changes, metrics) answer 403 to members before they run anything;
the RPCs refuse them again underneath (42501).

Pages: sign-in (a pasted JWT, or the local development user of ``hipocampo serve --dev-user``),
knowledge bases (list, create, settings, rename, delete with confirmation), documents (upload
with live progress, list, metadata, delete), the query playground (search with the score
breakdown, ask with citations and timings), the memory inspector (a member's memories, staging,
a key's history and events, each view audited by ``hipocampo.inspect_user_memory``; correct,
promote, forget, export, erase with a confirmation that names the user) and metrics
(``hipocampo.tenant_metrics`` as charts).
Interface text in Brazilian Portuguese (default) or English (``hipocampo_lang`` cookie).
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any
from uuid import UUID

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from ..answers import Orchestrator
from ..answers.cross_check import cross_check_gap
from ..client import Actor, Hipocampo
from ..constraints import TEXT_SEARCH_LANGUAGES
from ..embeddings import EmbeddingProvider
from ..errors import HipocampoError, InvalidInputError, NotFoundError, PermissionDeniedError
from ..evaluation import MODES
from ..evaluation.kb_eval import Judged, KbEvaluation, evaluate_kb, parse_judged, store_confirmed, stored_judged
from ..ingest.pipeline import SOURCE_TYPES
from .config_form import agent_fields, agent_overrides, form_fields, form_patch
from .i18n import code_label, pick_language, text
from .present import AXIS_PX, Chart, bar_chart, highlight, shown_uri
from .security import (
    CSRF_COOKIE,
    CSRF_FIELD,
    LANG_COOKIE,
    SECURITY_HEADERS,
    SESSION_COOKIE,
    DevUser,
    csrf_matches,
    new_csrf_token,
)
from .uploads import UploadRegistry

__all__ = ["Hub", "mount_hub"]

HERE = Path(__file__).parent
MAX_UPLOAD_BYTES = 50 * 1024 * 1024  # per request (all files together)
#: Judged questions one evaluation page run takes (each is searched three times and asked once
#: while the page waits: ~0.05 s a question on 2 cores).
MAX_EVAL_QUESTIONS = 200
CONFIG_SECTIONS = ("rag", "retrieval")


class _SignIn(Exception):
    """No valid session: the page redirects to the sign-in page."""


class _Forbidden(Exception):
    """A member on an admin-only page (403)."""


@dataclass
class _Who:
    """The signed-in user of a request and the client acting as them."""

    client: Hipocampo
    user_id: str
    tenant_id: str
    role: str
    email: str
    tenant_name: str = ""
    tenant_slug: str = ""

    @property
    def admin(self) -> bool:
        return self.role == "admin"

    @cached_property
    def tenants(self) -> list[dict[str, Any]]:
        """Every tenant of the user (``my_tenants``), read when a page's header or the tenant switch
        asks, once per request (not by the JSON and form routes that never show them)."""
        return [dict(r) for r in self.client.rpc("my_tenants", {}, "rows")]


def _templates() -> Jinja2Templates:
    """The pages' templates, with the ``uri`` filter (:func:`present.shown_uri`)."""
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    templates.env.filters["uri"] = shown_uri
    return templates


@dataclass
class Hub:
    """The hub's state: the service pool, the token verifier, the embedder and the uploads."""

    root: Hipocampo
    verify: Callable[[str], Actor]
    embedder: Callable[[], EmbeddingProvider]
    dev_user: DevUser | None = None
    uploads: UploadRegistry = field(default_factory=UploadRegistry)
    templates: Jinja2Templates = field(default_factory=_templates)

    # -- request context --------------------------------------------------------------------
    def who(self, request: Request) -> _Who:
        """The signed-in user, from the session cookie (verified on every request).

        Raises:
            _SignIn: no cookie, or a token that no longer verifies (expired, another key).
        """
        token = request.cookies.get(SESSION_COOKIE)
        if not token:
            raise _SignIn("no session")
        return self.user_of(token)

    def user_of(self, token: str) -> _Who:
        """The user a JWT signs in: verified, role authenticated, a live membership.

        Raises:
            _SignIn: the verifier's refusal, a service key, or no membership (42501), in words.
        """
        try:
            actor = self.verify(token)
        except Exception as exc:  # the verifier's own error types: any failure means sign in again
            raise _SignIn(str(exc)) from exc
        if actor.role != "authenticated":
            # The hub is for a tenant's users; service keys stay on servers.
            raise _SignIn("the hub signs in users (role authenticated), not service keys")
        client = self.root.as_actor(actor)
        try:
            tenant = client.rpc("current_tenant", {}, "row") or {}
        except PermissionDeniedError as exc:
            raise _SignIn(exc.message) from exc
        claims = actor.claims
        return _Who(
            client,
            str(claims.get("sub")),
            str(tenant.get("id") or ""),
            str(tenant.get("role") or ""),
            str(claims.get("email") or ""),
            str(tenant.get("name") or ""),
            str(tenant.get("slug") or ""),
        )

    def admin(self, request: Request) -> _Who:
        """The signed-in user, who must be an admin of their tenant (else _Forbidden)."""
        who = self.who(request)
        if not who.admin:
            raise _Forbidden
        return who

    @staticmethod
    def language(request: Request) -> str:
        """The request's language: its cookie, else its Accept-Language (hub.i18n.pick_language)."""
        return pick_language(request.cookies.get(LANG_COOKIE), request.headers.get("accept-language"))

    @classmethod
    def words(cls, request: Request) -> dict[str, str]:
        """The hub's words in the request's language (hub.i18n.text)."""
        return text(cls.language(request))

    def render(
        self, request: Request, name: str, ctx: dict[str, Any] | None = None, status: int = 200, who: _Who | None = None
    ) -> HTMLResponse:
        """A page: the template with the language's words, the CSRF token and the user."""
        lang = self.language(request)
        csrf = request.cookies.get(CSRF_COOKIE) or new_csrf_token()
        context = {"t": text(lang), "lang": lang, "csrf": csrf, "who": who, "path": request.url.path}
        context |= ctx or {}
        context["notice"] = context.get("notice") or text(lang).get(request.query_params.get("done", ""), "")
        response = self.templates.TemplateResponse(request, name, context, status_code=status)
        if request.cookies.get(CSRF_COOKIE) != csrf:
            response.set_cookie(
                CSRF_COOKIE, csrf, httponly=True, samesite="strict", path="/hub", secure=_https(request)
            )
        return response

    async def form(self, request: Request) -> dict[str, Any]:
        """The POST's form fields, after the CSRF check (403 page on mismatch)."""
        if int(request.headers.get("content-length") or 0) > MAX_UPLOAD_BYTES:
            raise _TooLarge
        data = await request.form()
        sent = data.get(CSRF_FIELD) or request.headers.get("x-csrf-token")
        if not csrf_matches(request.cookies.get(CSRF_COOKIE), str(sent) if sent else None):
            raise _CsrfError
        return {k: data.getlist(k) if k in ("files", "kb_ids") else data.get(k) for k in data}

    def error_text(self, exc: HipocampoError) -> str:
        """An RPC error as the page shows it: 'SQLSTATE: message'."""
        return f"{exc.sqlstate}: {exc.message}" if exc.sqlstate else exc.message


class _CsrfError(Exception):
    """A POST whose CSRF token does not match its cookie."""


class _TooLarge(Exception):
    """A POST larger than MAX_UPLOAD_BYTES (413)."""


def _https(request: Request) -> bool:
    return request.url.scheme == "https" or request.headers.get("x-forwarded-proto") == "https"


def _redirect(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


def _uuid(value: str) -> UUID:
    try:
        return UUID(value)
    except ValueError as exc:
        raise NotFoundError(f"not a uuid: {value!r}", "22023") from exc


def mount_hub(app: FastAPI, hub: Hub) -> None:
    """Mount the hub's pages at ``/hub`` and its static files at ``/hub/static`` on ``app``,
    with the security headers on every hub response."""
    router = APIRouter(prefix="/hub", include_in_schema=False)
    _session_routes(router, hub)
    _kb_routes(router, hub)
    _feedback_routes(router, hub)
    _document_routes(router, hub)
    _query_routes(router, hub)
    _memory_routes(router, hub)
    _agent_routes(router, hub)
    _embedding_routes(router, hub)
    app.include_router(router)
    app.mount("/hub/static", StaticFiles(directory=str(HERE / "static")), name="hub-static")

    @app.middleware("http")
    async def headers(request: Request, call_next: Callable[[Request], Any]) -> Response:
        response: Response = await call_next(request)
        if request.url.path.startswith("/hub"):
            response.headers.update(SECURITY_HEADERS)
        return response

    @app.exception_handler(_SignIn)
    async def sign_in(request: Request, exc: _SignIn) -> Response:
        response = _redirect(
            "/hub/signin?done=session_expired" if request.cookies.get(SESSION_COOKIE) else "/hub/signin"
        )
        response.delete_cookie(SESSION_COOKIE, path="/hub")
        return response

    @app.exception_handler(_Forbidden)
    async def forbidden(request: Request, exc: _Forbidden) -> Response:
        who = None
        with contextlib.suppress(_SignIn):
            who = hub.who(request)
        return hub.render(request, "error.html", {"message_key": "forbidden"}, 403, who)

    @app.exception_handler(_CsrfError)
    async def csrf(request: Request, exc: _CsrfError) -> Response:
        return hub.render(request, "error.html", {"message_key": "csrf"}, 403)

    @app.exception_handler(_TooLarge)
    async def too_large(request: Request, exc: _TooLarge) -> Response:
        return hub.render(request, "error.html", {"message_key": "too_large"}, 413)

    @app.exception_handler(NotFoundError)
    async def not_found(request: Request, exc: NotFoundError) -> Response:
        if not request.url.path.startswith("/hub"):
            return JSONResponse({"error": exc.message}, 404)
        return hub.render(request, "error.html", {"message_key": "not_found", "detail": hub.error_text(exc)}, 404)


def _session_routes(router: APIRouter, hub: Hub) -> None:
    @router.get("")
    @router.get("/")
    def home() -> Response:
        return _redirect("/hub/kbs")

    @router.get("/signin")
    def signin_page(request: Request) -> Response:
        return hub.render(request, "signin.html", {"dev_user": hub.dev_user is not None})

    @router.post("/signin")
    async def signin(request: Request) -> Response:
        form = await hub.form(request)
        token = str(form.get("token") or "").strip()
        return _start_session(hub, request, token)

    @router.post("/signin/dev")
    async def signin_dev(request: Request) -> Response:
        await hub.form(request)
        if hub.dev_user is None:
            raise NotFoundError("no local development user on this server", "P0002")
        return _start_session(hub, request, hub.dev_user.token())

    @router.post("/tenant")
    async def switch_tenant(request: Request) -> Response:
        """Act in another tenant of the user (issue 58 §2): with the local development user, a
        token of this server's for that tenant; a Supabase token names one tenant, so otherwise
        the sign-in page says to sign in with a token for it."""
        who = hub.who(request)
        form = await hub.form(request)
        wanted = next((t for t in who.tenants if str(t["id"]) == str(form.get("tenant_id") or "")), None)
        if wanted is None:
            raise NotFoundError("not a tenant of yours", "P0002")
        dev = hub.dev_user
        if dev is not None and str(dev.user_id) == who.user_id:
            return _start_session(hub, request, replace(dev, tenant_id=UUID(str(wanted["id"]))).token())
        words = hub.words(request)
        ctx = {"dev_user": dev is not None, "notice": words["switch_sign_in"].format(name=wanted["name"])}
        return hub.render(request, "signin.html", ctx)

    @router.post("/signout")
    async def signout(request: Request) -> Response:
        await hub.form(request)
        response = _redirect("/hub/signin")
        response.delete_cookie(SESSION_COOKIE, path="/hub")
        return response

    @router.post("/lang")
    async def language(request: Request) -> Response:
        form = await hub.form(request)
        lang = "en" if form.get("lang") == "en" else "pt-BR"
        back = str(form.get("back") or "/hub/kbs")
        response = _redirect(back if back.startswith("/hub") and "//" not in back else "/hub/kbs")
        response.set_cookie(LANG_COOKIE, lang, samesite="strict", path="/hub", max_age=365 * 86400)
        return response


def _start_session(hub: Hub, request: Request, token: str) -> Response:
    """Verify ``token`` and the membership it names (``Hub.user_of``), then set the session cookie."""
    try:
        hub.user_of(token)
    except (_SignIn, HipocampoError) as exc:  # the verifier's and the database's refusals alike
        message = getattr(exc, "message", None) or str(exc)
        return hub.render(request, "signin.html", {"dev_user": hub.dev_user is not None, "error": message}, 401)
    response = _redirect("/hub/kbs")
    response.set_cookie(SESSION_COOKIE, token, httponly=True, samesite="strict", path="/hub", secure=_https(request))
    return response


def _kb_routes(router: APIRouter, hub: Hub) -> None:
    @router.get("/kbs")
    def kbs(request: Request) -> Response:
        who = hub.who(request)
        return hub.render(request, "kbs.html", _kbs_page(who), who=who)

    @router.post("/kbs")
    async def create_kb(request: Request) -> Response:
        who = hub.admin(request)
        form = await hub.form(request)
        try:
            kb = who.client.create_kb(
                str(form.get("name") or "").strip(),
                description=str(form.get("description") or "").strip() or None,
                language=str(form.get("language") or "portuguese"),
            )
        except HipocampoError as exc:
            return hub.render(request, "kbs.html", _kbs_page(who, hub.error_text(exc)), 422, who)
        return _redirect(f"/hub/kbs/{kb}?done=created")

    @router.get("/kbs/{kb_id}")
    def kb_page(request: Request, kb_id: str) -> Response:
        who = hub.who(request)
        kb = _kb(who, kb_id)
        ctx = {"kb": kb, "source_types": SOURCE_TYPES, "model": _model(who)}
        return hub.render(request, "kb.html", ctx | _doc_page(who, kb.id, request.query_params.get("after")), who=who)

    @router.get("/kbs/{kb_id}/evaluate")
    def evaluate_page(request: Request, kb_id: str) -> Response:
        who = hub.admin(request)
        return hub.render(request, "evaluate.html", {"kb": _kb(who, kb_id)}, who=who)

    @router.post("/kbs/{kb_id}/evaluate")
    async def evaluate(request: Request, kb_id: str) -> Response:
        who = hub.admin(request)
        form = await hub.form(request)
        kb = _kb(who, kb_id)
        ctx: dict[str, Any] = {"kb": kb}
        try:
            ctx |= await _evaluation(hub, who, kb.id, form)
        except HipocampoError as exc:
            ctx["error"] = hub.error_text(exc)
        return hub.render(request, "evaluate.html", ctx, 422 if "error" in ctx else 200, who)

    @router.get("/kbs/{kb_id}/settings")
    def settings_page(request: Request, kb_id: str) -> Response:
        who = hub.admin(request)
        return _settings(hub, request, who, kb_id)

    @router.post("/kbs/{kb_id}/settings")
    async def rename(request: Request, kb_id: str) -> Response:
        who = hub.admin(request)
        form = await hub.form(request)
        args = {"kb_id": _kb(who, kb_id).id, "name": str(form.get("name") or "").strip() or None}
        args["description"] = str(form.get("description") or "")
        try:
            who.client.rpc("update_knowledge_base", args)
        except HipocampoError as exc:
            return _settings(hub, request, who, kb_id, hub.error_text(exc))
        return _redirect(f"/hub/kbs/{kb_id}/settings?done=saved")

    @router.post("/kbs/{kb_id}/config")
    async def config(request: Request, kb_id: str) -> Response:
        who = hub.admin(request)
        form = await hub.form(request)
        section = str(form.get("section") or "")
        try:
            if section not in CONFIG_SECTIONS:
                raise InvalidInputError(f"section must be one of {', '.join(CONFIG_SECTIONS)}", "22023")
            kb = _kb(who, kb_id)
            patch = form_patch(who.client.effective_config(kb.id)[section], form)
            if patch:
                who.client.set_kb_config(kb.id, section, patch)
        except HipocampoError as exc:
            return _settings(hub, request, who, kb_id, hub.error_text(exc), section=section)
        return _redirect(f"/hub/kbs/{kb_id}/settings?done=saved")

    @router.post("/kbs/{kb_id}/delete")
    async def delete(request: Request, kb_id: str) -> Response:
        who = hub.admin(request)
        form = await hub.form(request)
        kb = _kb(who, kb_id)
        if str(form.get("confirm") or "").strip() != kb.name:
            return _settings(hub, request, who, kb_id, key="confirm_mismatch")
        try:
            who.client.delete_kb(kb.id)
        except HipocampoError as exc:
            return _settings(hub, request, who, kb_id, hub.error_text(exc))
        return _redirect("/hub/kbs?done=deleted")


def _settings(
    hub: Hub,
    request: Request,
    who: _Who,
    kb_id: str,
    error: str | None = None,
    key: str | None = None,
    section: str | None = None,
) -> Response:
    """The knowledge base's settings page: name, the config sections as forms (the one an error
    is about open), deletion."""
    kb = _kb(who, kb_id)
    effective = who.client.effective_config(kb.id)
    ctx = {
        "kb": kb,
        "sections": CONFIG_SECTIONS,
        "fields": {s: form_fields(effective[s], kb.overrides.get(s) or {}) for s in CONFIG_SECTIONS},
        "open_section": section,
        "error": error,
        "error_key": key,
    }
    return hub.render(request, "settings.html", ctx, 422 if error or key else 200, who)


def _feedback_routes(router: APIRouter, hub: Hub) -> None:
    @router.get("/kbs/{kb_id}/feedback")
    def feedback_page(request: Request, kb_id: str) -> Response:
        """What users said of the knowledge base's replies (issue 59 §5): per week, and the replies
        marked not useful, each with a one-click judge of the document that answers it."""
        who = hub.admin(request)
        return _feedback(hub, request, who, kb_id)

    @router.post("/kbs/{kb_id}/feedback/judge")
    async def judge(request: Request, kb_id: str) -> Response:
        who = hub.admin(request)
        form = await hub.form(request)
        try:
            who.client.judge_feedback(str(form.get("trace_id") or ""), [_uuid(str(form.get("document_id") or ""))])
        except HipocampoError as exc:
            return _feedback(hub, request, who, kb_id, hub.error_text(exc))
        return _redirect(f"/hub/kbs/{kb_id}/feedback?done=judged_saved")


def _feedback(hub: Hub, request: Request, who: _Who, kb_id: str, error: str | None = None) -> Response:
    """The knowledge base's feedback page: the weeks, the replies marked not useful with the
    documents to judge them by (those cited first, then the knowledge base's, at most 200)."""
    kb = _kb(who, kb_id)
    summary = who.client.feedback_summary(kb.id)
    documents = who.client.list_documents(kb.id, limit=200)
    ctx = {"kb": kb, "summary": summary, "documents": documents, "error": error}
    return hub.render(request, "feedback.html", ctx, 422 if error else 200, who)


async def _evaluation(hub: Hub, who: _Who, kb: UUID, form: Any) -> dict[str, Any]:
    """The evaluation form's run: kb_eval.evaluate_kb over the uploaded questions (with the
    answers when ticked; with the tuning box, the choices, and store_confirmed storing what the
    held-out half confirms), in a worker thread; the template's context.

    Raises:
        HipocampoError: as _judged_upload, evaluate_kb and store_confirmed.
    """
    upload = form.get("questions")
    with_stored = bool(form.get("stored"))
    has_file = isinstance(upload, UploadFile) and bool(upload.filename)
    judged = await _judged_upload(upload) if has_file or not with_stored else []
    if with_stored:  # the judged questions made from feedback (issue 59 §5)
        judged += await run_in_threadpool(stored_judged, who.client, kb)
        if not judged:
            raise InvalidInputError("this knowledge base has no judged questions from feedback yet", "22023")
    tune = bool(form.get("tune"))

    def run() -> KbEvaluation:
        result = evaluate_kb(who.client, kb, judged, hub.embedder(), answers=bool(form.get("answers")), tune=tune)
        if tune:
            store_confirmed(who.client, kb, result)
        return result

    result = await run_in_threadpool(run)
    return {
        "retrieval": result.retrieval,
        "answers": result.answers,
        "tuned": tune,
        "weight": result.dense_weight,
        "gate": result.min_confidence,
        "model": result.model,
    }


async def _judged_upload(upload: Any) -> list[Judged]:
    """The judged questions of the evaluation form's JSON Lines file (kb_eval's format), at most
    MAX_EVAL_QUESTIONS (the page waits for them; `hipocampo kb eval` has no limit).

    Raises:
        InvalidInputError (22023): no file, not UTF-8, a malformed line (named), too many questions.
    """
    if not isinstance(upload, UploadFile) or not upload.filename:
        raise InvalidInputError("choose a JSON Lines file of questions", "22023")
    try:
        body = (await upload.read()).decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInputError(f"{upload.filename}: not UTF-8 text", "22023") from None
    judged = parse_judged(body, upload.filename)
    if len(judged) > MAX_EVAL_QUESTIONS:
        raise InvalidInputError(
            f"{upload.filename}: {len(judged)} questions; at most {MAX_EVAL_QUESTIONS} here "
            "(`hipocampo kb eval` takes any number)",
            "22023",
        )
    return judged


def _kb(who: _Who, kb_id: str) -> Any:
    """The knowledge base ``kb_id`` of the user's tenant (NotFoundError otherwise)."""
    wanted = _uuid(kb_id)
    for kb in who.client.list_kbs():
        if kb.id == wanted:
            return kb
    raise NotFoundError(f"unknown knowledge base: {kb_id}", "P0002")


def _model(who: _Who) -> str:
    return who.client.active_embedding_model() or ""


def _trust(text: str, refusal: str) -> float | None:
    """An upload's trust score from its form field: None when empty, else a number in [0, 1].

    Raises:
        ValueError: ``refusal`` (in the page's language) for anything else.
    """
    if not text:
        return None
    try:
        trust = float(text)
    except ValueError:
        raise ValueError(refusal) from None
    if not 0 <= trust <= 1:  # also refuses nan
        raise ValueError(refusal)
    return trust


def _document_routes(router: APIRouter, hub: Hub) -> None:
    @router.post("/kbs/{kb_id}/uploads")
    async def upload(request: Request, kb_id: str) -> Response:
        who = hub.admin(request)
        form = await hub.form(request)
        kb = _kb(who, kb_id)
        files = [f for f in form.get("files") or [] if isinstance(f, UploadFile) and f.filename]
        payload = [(str(f.filename), await f.read()) for f in files]
        source_type = str(form.get("source_type") or "")
        trust_text = str(form.get("trust_score") or "").strip()
        words = hub.words(request)
        try:
            if not source_type:  # a required choice (issue 58 §2): "other" cannot answer alone
                raise ValueError(words["choose_a_source_type"])
            if source_type not in SOURCE_TYPES:
                raise ValueError(words["unknown_source_type"].format(value=source_type))
            trust = _trust(trust_text, words["trust_in_range"])
            if not payload:
                raise ValueError(words["choose_a_file"])
        except ValueError as exc:
            ctx = {"kb": kb, "source_types": SOURCE_TYPES, "model": _model(who), "error": f"22023: {exc}"}
            return hub.render(request, "kb.html", ctx | _doc_page(who, kb.id, None), 422, who)
        gap = cross_check_gap(who.client, str(kb.id), source_type, trust)  # before any work starts
        note = asdict(gap) if gap else None
        up = hub.uploads.start(
            who.client, str(kb.id), kb.name, who.user_id, payload, hub.embedder, source_type, trust, note
        )
        if "application/json" in request.headers.get("accept", ""):
            return JSONResponse(up.as_json(), 202)
        return _redirect(f"/hub/uploads/{up.id}")

    @router.get("/uploads/{upload_id}")
    def progress_page(request: Request, upload_id: str) -> Response:
        who = hub.who(request)
        up = hub.uploads.get(upload_id, who.user_id)
        if up is None:
            raise NotFoundError(f"unknown upload: {upload_id}", "P0002")
        return hub.render(request, "upload.html", {"up": up.as_json()}, who=who)

    @router.get("/uploads/{upload_id}/progress")
    def progress(request: Request, upload_id: str) -> Response:
        who = hub.who(request)
        up = hub.uploads.get(upload_id, who.user_id)
        if up is None:
            return JSONResponse({"error": "unknown upload"}, 404)
        return JSONResponse(up.as_json())

    @router.get("/kbs/{kb_id}/documents/{doc_id}")
    def document_page(request: Request, kb_id: str, doc_id: str) -> Response:
        who = hub.admin(request)
        return _document(hub, request, who, kb_id, doc_id)

    @router.post("/kbs/{kb_id}/documents/{doc_id}")
    async def document_metadata(request: Request, kb_id: str, doc_id: str) -> Response:
        who = hub.admin(request)
        form = await hub.form(request)
        meta: dict[str, Any] = {"source_type": form.get("source_type")}
        try:
            meta["trust_score"] = float(str(form.get("trust_score")))
        except ValueError:
            meta["trust_score"] = str(form.get("trust_score"))  # the RPC names the problem (22023)
        meta["expires_at"] = str(form.get("expires_at") or "").strip() or None
        meta["published_at"] = str(form.get("published_at") or "").strip() or None
        try:
            who.client.set_document_metadata(_uuid(doc_id), meta)
        except HipocampoError as exc:
            return _document(hub, request, who, kb_id, doc_id, hub.error_text(exc))
        return _redirect(f"/hub/kbs/{kb_id}?done=saved")

    @router.post("/kbs/{kb_id}/documents/{doc_id}/delete")
    async def document_delete(request: Request, kb_id: str, doc_id: str) -> Response:
        who = hub.admin(request)
        await hub.form(request)
        try:
            who.client.delete_document(_uuid(doc_id))
        except HipocampoError as exc:
            return _document(hub, request, who, kb_id, doc_id, hub.error_text(exc))
        return _redirect(f"/hub/kbs/{kb_id}?done=deleted")


# Documents per page of a knowledge base's page (keyset pages by source URI, ?after=).
DOC_PAGE = 200


def _doc_page(who: _Who, kb_id: UUID, after: str | None) -> dict[str, Any]:
    """One page of the knowledge base's documents: ``docs``, and ``next_after`` (the source URI
    to continue after) when more follow."""
    docs, next_after = who.client.document_page(kb_id, after=after or None, limit=DOC_PAGE)
    return {"docs": docs, "after": after, "next_after": next_after}


def _document(hub: Hub, request: Request, who: _Who, kb_id: str, doc_id: str, error: str | None = None) -> Response:
    kb = _kb(who, kb_id)
    doc = who.client.get_document(_uuid(doc_id))
    if doc is None or doc.kb_id != kb.id:
        raise NotFoundError(f"unknown document: {doc_id}", "P0002")
    babble = who.client.documents_not_language(kb.id, [doc.source_uri])
    ctx = {"kb": kb, "doc": doc, "source_types": SOURCE_TYPES, "error": error, "reads_as_language": not babble}
    ctx["text"] = who.client.document_text(doc.id)
    return hub.render(request, "document.html", ctx, 422 if error else 200, who)


def _query_routes(router: APIRouter, hub: Hub) -> None:
    @router.get("/playground")
    def playground(request: Request) -> Response:
        who = hub.who(request)
        return hub.render(request, "playground.html", _playground(hub, who, request), who=who)

    @router.post("/playground")
    async def run_query(request: Request) -> Response:
        who = hub.who(request)
        form = await hub.form(request)
        q = {k: str(form.get(k) or "").strip() for k in ("question", "kb", "mode", "mmr", "action")}
        ctx = _playground(hub, who, request, q)
        try:
            kb_ids = [_uuid(q["kb"])] if q["kb"] else [kb.id for kb in ctx["kbs"]]
            if q["action"] == "ask":
                ans = Orchestrator(who.client, hub.embedder()).ask(q["question"], kb_ids=kb_ids)
                ctx["answer"] = ans
            else:
                ctx["hits"] = _search(hub, who, q, kb_ids)
        except ValueError as exc:
            ctx["error"] = f"22023: {exc}"
        except HipocampoError as exc:
            ctx["error"] = hub.error_text(exc)
        return hub.render(request, "playground.html", ctx, 422 if "error" in ctx else 200, who)

    @router.post("/playground/feedback")
    async def playground_feedback(request: Request) -> Response:
        """The signed-in user marks the reply they just got useful or not (issue 59 §5)."""
        who = hub.who(request)
        form = await hub.form(request)
        ctx = _playground(hub, who, request)
        try:
            who.client.record_feedback(
                str(form.get("trace_id") or ""),
                form.get("useful") == "true",
                str(form.get("comment") or "").strip() or None,
                str(form.get("question") or "") or None,
            )
            ctx["notice"] = hub.words(request)["feedback_thanks"]
        except HipocampoError as exc:
            ctx["error"] = hub.error_text(exc)
        return hub.render(request, "playground.html", ctx, 422 if "error" in ctx else 200, who)

    @router.get("/metrics")
    def metrics(request: Request) -> Response:
        who = hub.admin(request)
        m = who.client.rpc("tenant_metrics", {"days": 30}) or {}
        words = hub.words(request)
        return hub.render(request, "metrics.html", {"m": m, "charts": _charts(m, words), "axis_px": AXIS_PX}, who=who)


def _kbs_page(who: _Who, error: str | None = None) -> dict[str, Any]:
    """The knowledge-base list's context: the user's knowledge bases, the active model, the text-search
    languages a new one may have (constraints.TEXT_SEARCH_LANGUAGES) and an error, if any."""
    ctx = {"kbs": who.client.list_kbs(), "model": _model(who), "kb_languages": TEXT_SEARCH_LANGUAGES}
    return {**ctx, "error": error} if error else ctx


def _playground(hub: Hub, who: _Who, request: Request, q: dict[str, str] | None = None) -> dict[str, Any]:
    """The playground page's context: the user's knowledge bases, the form's values (hybrid by
    default) and who writes the answers."""
    answered_by = _answered_by(who, hub.words(request))
    return {"kbs": who.client.list_kbs(), "q": q or {"mode": "hybrid"}, "answered_by": answered_by}


def _answered_by(who: _Who, words: dict[str, str]) -> str:
    """Who writes the tenant's answers, in the page's language (generation.answering_parts of its
    rag config: the extractive answer offline, or the chat model and where it is served)."""
    from ..answers.generation import answering_parts

    kind, names = answering_parts(who.client.rag_config_json(None))
    if kind == "openai" and not names["where"]:
        names["where"] = words["openai_api"]
    return words["answered_" + kind].format(**names)


def _search(hub: Hub, who: _Who, q: dict[str, str], kb_ids: list[UUID] | None) -> list[dict[str, Any]]:
    """The playground's search: the mode's weights (evaluation.MODES), MMR λ when given."""
    mode = q["mode"] if q["mode"] in ("hybrid", "dense", "lexical") else "hybrid"
    opts: dict[str, Any] = dict(MODES.get(mode, {}))
    if q["mmr"]:
        lam = float(q["mmr"])
        if not math.isfinite(lam) or not 0 <= lam <= 1:
            raise ValueError("MMR λ must lie in [0, 1]")
        opts["mmr_lambda"] = lam
    if not q["question"]:
        raise ValueError("type a question")
    embedding = hub.embedder().embed_query(q["question"])
    hits = who.client.search(q["question"], embedding, kb_ids=kb_ids, **opts)
    return [{"hit": h, "pieces": highlight(h.content, q["question"])} for h in hits]


def _charts(m: dict[str, Any], words: dict[str, str]) -> dict[str, Any]:
    """The metrics page's bar charts, from tenant_metrics' json; reason codes in the page's
    language (``words``)."""
    answers = m.get("answers") or []
    writes: dict[str, float] = {}
    for e in m.get("memory_events") or []:
        if e.get("event") in ("memory.created", "memory.updated", "memory.staged"):
            writes[str(e["day"])] = writes.get(str(e["day"]), 0) + float(e["events"])
    return {
        "queries": bar_chart([(str(a["day"]), float(a["query_count"])) for a in answers]),
        "searches": bar_chart([(str(s["day"]), float(s["query_count"])) for s in m.get("searches") or []]),
        "p50": bar_chart([(str(a["day"]), float(a["latency_p50_ms"] or 0)) for a in answers]),
        "p95": bar_chart([(str(a["day"]), float(a["latency_p95_ms"] or 0)) for a in answers]),
        "cache": bar_chart([(str(a["day"]), float(a["cache_hit_rate"] or 0)) for a in answers]),
        "refusals": bar_chart(
            [(code_label(words, "why_", str(r["reason"])), float(r["refusals"])) for r in m.get("refusals") or []]
        ),
        "writes": bar_chart(sorted(writes.items())),
        "rejections": bar_chart(
            [
                (code_label(words, "why_", str(r["reason"])), float(r["rejected"]))
                for r in m.get("memory_rejections") or []
            ]
        ),
        "similarity": bar_chart(
            [(str(x["day"]), float(x["similarity_7d"] or 0)) for x in m.get("memory_similarity") or []]
        ),
        **{f"p95_{rpc}": _read_p95(m, rpc) for rpc in ("search_memories", "search_history", "hybrid_search")},
    }


def _read_p95(m: dict[str, Any], rpc: str) -> Chart:
    """A bar chart of one read RPC's p95 latency (ms) per day, from tenant_metrics' ``reads``."""
    return bar_chart(
        [(str(r["day"]), float(r["latency_p95_ms"] or 0)) for r in m.get("reads") or [] if r.get("rpc") == rpc]
    )


def _agent_routes(router: APIRouter, hub: Hub) -> None:
    """The agents page: the tenant's agent bindings (knowledge bases and rag overrides), set and
    deleted by its admins (issue 45 §5)."""

    def page(
        request: Request,
        who: _Who,
        error: str | None = None,
        sent: dict[str, Any] | None = None,
    ) -> Response:
        """The list and the form: empty, ``?edit=<name>``'s agent, or the form as it was sent
        (``sent``: name, kb_ids, and the rag keys' texts) when ``error`` refused it."""
        agents = who.client.list_agent_bindings()
        rag = who.client.effective_config(None)["rag"]
        editing = next((a for a in agents if a.name == request.query_params.get("edit")), None)
        if sent is not None:
            form = {"name": sent["name"], "kb_ids": sent["kb_ids"]}
            fields = agent_fields(rag, {}, texts=sent["texts"])
        elif editing is not None:
            form = {"name": editing.name, "kb_ids": [str(k) for k in editing.kb_ids]}
            fields = agent_fields(rag, editing.rag_overrides)
        else:
            form, fields = {"name": "", "kb_ids": []}, agent_fields(rag, {})
        ctx = {"agents": agents, "kbs": who.client.list_kbs(), "error": error, "form": form, "rag_fields": fields}
        return hub.render(request, "agents.html", ctx, 200 if error is None else 422, who)

    @router.get("/agents")
    def agents(request: Request) -> Response:
        return page(request, hub.admin(request))

    @router.post("/agents")
    async def set_agent(request: Request) -> Response:
        who = hub.admin(request)
        form = await hub.form(request)
        name = str(form.get("name") or "").strip()
        sent = {
            "name": name,
            "kb_ids": [str(k) for k in form.get("kb_ids") or []],
            "texts": {k[4:]: str(v) for k, v in form.items() if k.startswith("rag:") and str(v).strip()},
        }
        try:
            overrides = agent_overrides(who.client.effective_config(None)["rag"], form)
            who.client.set_agent_binding(name, [_uuid(k) for k in sent["kb_ids"]], overrides)
        except HipocampoError as exc:
            return page(request, who, hub.error_text(exc), sent)
        return _redirect("/hub/agents?done=saved")

    @router.post("/agents/delete")
    async def delete_agent(request: Request) -> Response:
        who = hub.admin(request)
        form = await hub.form(request)
        try:
            who.client.delete_agent_binding(str(form.get("name") or ""))
        except HipocampoError as exc:
            return page(request, who, hub.error_text(exc))
        return _redirect("/hub/agents?done=deleted")


def _embedding_routes(router: APIRouter, hub: Hub) -> None:
    """The embedding-queue page (issue 45 §6): the tenant's rows waiting for a vector, retrying
    and dead-lettered per kind, the newest dead letters with their error, and requeueing them."""

    @router.get("/embeddings")
    def queue(request: Request) -> Response:
        who = hub.admin(request)
        requeued = request.query_params.get("requeued", "")
        words = hub.words(request)
        notice = words["requeued"].format(n=int(requeued)) if requeued.isdigit() else ""
        return hub.render(request, "embeddings.html", {"q": who.client.embedding_queue(), "notice": notice}, who=who)

    @router.post("/embeddings/requeue")
    async def requeue(request: Request) -> Response:
        who = hub.admin(request)
        form = await hub.form(request)
        try:
            n = who.client.requeue_embeddings(str(form.get("kind") or "") or None)
        except HipocampoError as exc:
            ctx = {"q": who.client.embedding_queue(), "error": hub.error_text(exc)}
            return hub.render(request, "embeddings.html", ctx, 422, who)
        return _redirect(f"/hub/embeddings?requeued={n}")


def _memory_routes(router: APIRouter, hub: Hub) -> None:
    @router.get("/memory")
    def members(request: Request) -> Response:
        who = hub.admin(request)
        rows = who.client.rpc("list_members", {"tenant_id": who.tenant_id}, "rows")
        return hub.render(request, "members.html", {"members": rows}, who=who)

    @router.get("/memory/{user_id}")
    def inspect(request: Request, user_id: str) -> Response:
        who = hub.admin(request)
        return _inspector(hub, request, who, user_id, request.query_params.get("key") or None)

    @router.post("/memory/{user_id}/forget")
    async def forget(request: Request, user_id: str) -> Response:
        who = hub.admin(request)
        form = await hub.form(request)
        try:
            who.client.rpc("forget_user_memory", {"memory_id": _uuid(str(form.get("memory_id")))})
        except HipocampoError as exc:
            return _inspector(hub, request, who, user_id, None, hub.error_text(exc))
        return _redirect(f"/hub/memory/{_uuid(user_id)}?done=forgotten")

    @router.post("/memory/{user_id}/correct")
    async def correct(request: Request, user_id: str) -> Response:
        who = hub.admin(request)
        form = await hub.form(request)
        description = str(form.get("description") or "").strip()
        raw = str(form.get("value") or "").strip()
        try:
            value = json.loads(raw) if raw[:1] in ('"', "{", "[") or raw in ("true", "false", "null") else raw
        except ValueError:
            value = raw  # plain text is a JSON string
        args = {
            "memory_id": _uuid(str(form.get("memory_id"))),
            "value": json.dumps(value, ensure_ascii=False),  # JSON text: a str is sent as it is
            "description": description,
            "embedding": list(hub.embedder().embed_documents([description])[0]) if description else None,
        }
        try:
            who.client.rpc("correct_user_memory", args)
        except HipocampoError as exc:
            return _inspector(hub, request, who, user_id, None, hub.error_text(exc))
        return _redirect(f"/hub/memory/{_uuid(user_id)}?done=corrected")

    @router.post("/memory/{user_id}/promote")
    async def promote(request: Request, user_id: str) -> Response:
        who = hub.admin(request)
        form = await hub.form(request)
        try:
            args = {
                "staging_id": _uuid(str(form.get("staging_id"))),
                "intensity": float(str(form.get("intensity") or "")),
                "override": form.get("override") == "on",
            }
            result = who.client.rpc("promote_user_memory", args)
        except ValueError:
            return _inspector(hub, request, who, user_id, None, "22023: intensity must be a number from 0 to 10")
        except HipocampoError as exc:
            return _inspector(hub, request, who, user_id, None, hub.error_text(exc))
        done = "promoted" if (result or {}).get("status") != "kept" else "kept"
        return _redirect(f"/hub/memory/{_uuid(user_id)}?done={done}")

    @router.post("/memory/{user_id}/export")
    async def export(request: Request, user_id: str) -> Response:
        who = hub.admin(request)
        await hub.form(request)
        data = who.client.rpc("export_user_data", {"user_id": _uuid(user_id)})
        name = f"hipocampo-export-{_uuid(user_id)}.json"
        body = json.dumps(data, ensure_ascii=False, indent=2, default=str)
        headers = {"Content-Disposition": f'attachment; filename="{name}"'}
        return Response(body, media_type="application/json", headers=headers)

    @router.post("/memory/{user_id}/erase")
    async def erase(request: Request, user_id: str) -> Response:
        who = hub.admin(request)
        form = await hub.form(request)
        subject = _uuid(user_id)
        if str(form.get("confirm") or "").strip().lower() != str(subject):
            return _inspector(hub, request, who, user_id, None, key_error="confirm_user_mismatch")
        try:
            who.client.rpc("erase_user", {"user_id": subject})
        except HipocampoError as exc:
            return _inspector(hub, request, who, user_id, None, hub.error_text(exc))
        return _redirect("/hub/memory?done=erased")


def _inspector(
    hub: Hub,
    request: Request,
    who: _Who,
    user_id: str,
    key: str | None,
    error: str | None = None,
    *,
    key_error: str | None = None,
) -> Response:
    """The memory inspector's page for ``user_id``: one audited ``inspect_user_memory`` call."""
    seen = who.client.rpc("inspect_user_memory", {"user_id": _uuid(user_id), "key": key, "history_limit": 50})
    keys = sorted({m["key"] for m in seen.get("memories") or []})
    ctx = {"seen": seen, "key": key, "keys": keys, "error": error, "error_key": key_error}
    return hub.render(request, "memory.html", ctx, 422 if error or key_error else 200, who)
