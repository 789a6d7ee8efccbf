"""The CLI against the session's server (HIPOCAMPO_DATA_DIR points at the embedded one;
HIPOCAMPO_DATABASE_URL at a scratch server given by HIPOCAMPO_TEST_SERVER_URL)."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

from typer.testing import CliRunner

from hipocampo.cli import app

runner = CliRunner()


def test_db_status_and_url(database_url: str) -> None:
    res = runner.invoke(app, ["db", "status"])
    # A scratch server of another PostgreSQL version (HIPOCAMPO_TEST_SERVER_URL) is external.
    expected = "external database configured" if os.environ.get("HIPOCAMPO_TEST_SERVER_URL") else "running: True"
    assert res.exit_code == 0 and expected in res.output
    res = runner.invoke(app, ["db", "url"])
    assert res.exit_code == 0 and res.output.strip() == database_url


def test_tenant_kb_ingest_search(database_url: str, tmp_path: Path) -> None:
    slug = f"cli-{uuid.uuid4().hex[:8]}"
    res = runner.invoke(app, ["tenant", "create", "Condomínio", "--slug", slug])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["tenant", "create", "Outro", "--slug", slug])
    assert res.exit_code == 1 and f"tenant slug already exists: {slug}" in res.output
    assert runner.invoke(app, ["kb", "create", "regras", "--tenant", slug]).exit_code == 0
    (tmp_path / "r.txt").write_text("Art. 1º O salão de festas fecha à meia-noite.", encoding="utf-8")
    res = runner.invoke(
        app, ["ingest", str(tmp_path), "--kb", "regras", "--tenant", slug, "--source-type", "regulation", "--json"]
    )
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    assert summary["documents_ingested"] == 1 and summary["chunks_written"] == 1
    res = runner.invoke(app, ["kb", "list", "--tenant", slug, "--json"])
    assert json.loads(res.output)[0]["status"] == "ready"
    res = runner.invoke(app, ["search", "quando fecha o salão de festas", "--kb", "regras", "--tenant", slug, "--json"])
    assert res.exit_code == 0, res.output
    hits = json.loads(res.output)
    assert hits[0]["content"].startswith("Art. 1º") and hits[0]["source_uri"].startswith("file://")
    res = runner.invoke(app, ["search", "salão", "--tenant", slug])
    assert res.exit_code == 0 and "Art. 1º" in res.output


def test_ingest_with_the_index_deferred_builds_it_after(database_url: str, tmp_path: Path) -> None:
    """Issue 18 §3: --defer-index drops the model's HNSW index for the load and builds it after."""
    import psycopg

    slug = f"cli-{uuid.uuid4().hex[:8]}"
    assert runner.invoke(app, ["tenant", "create", "Carga", "--slug", slug]).exit_code == 0
    for i in range(3):
        (tmp_path / f"art{i}.txt").write_text(f"Art. {i}º A quadra {i} fecha às {i + 20}h.", encoding="utf-8")
    res = runner.invoke(app, ["ingest", str(tmp_path), "--kb", "carga", "--create-kb", "--tenant", slug,
                              "--defer-index", "--json"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["documents_ingested"] == 3
    with psycopg.connect(database_url) as conn:
        model = conn.execute("select name from hipocampo_private.embedding_models where active").fetchone()
        assert model is not None
        found = conn.execute(
            "select count(*) from pg_indexes where indexname = 'chunks_embedding_hnsw_' || substr(md5(%s), 1, 12)",
            (model[0],),
        ).fetchone()
    assert found == (1,)
    res = runner.invoke(app, ["search", "quando fecha a quadra 1", "--kb", "carga", "--tenant", slug, "--json"])
    assert res.exit_code == 0 and "quadra 1" in json.loads(res.output)[0]["content"]


def test_ingest_says_what_it_did(database_url: str, tmp_path: Path) -> None:
    """Issue 58 §3: an empty folder said "0 ingested … 0 failed" with exit 0, a PNG renamed .txt
    was stored as text, and every ingest printed a blank line to stderr."""
    slug = f"cli-{uuid.uuid4().hex[:8]}"
    assert runner.invoke(app, ["tenant", "create", "Vazio", "--slug", slug]).exit_code == 0
    assert runner.invoke(app, ["kb", "create", "docs", "--tenant", slug]).exit_code == 0
    (tmp_path / "vazia").mkdir()
    res = runner.invoke(app, ["ingest", str(tmp_path / "vazia"), "--kb", "docs", "--tenant", slug])
    assert res.exit_code == 1 and f"error [22023]: nothing to ingest: no file under {tmp_path / 'vazia'}" in res.output
    (tmp_path / "pasta").mkdir()
    (tmp_path / "pasta" / "foto.txt").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR binary")
    (tmp_path / "pasta" / "aviso.txt").write_text("Art. 1º A piscina fecha às 22h.", encoding="utf-8")
    res = runner.invoke(app, ["ingest", str(tmp_path / "pasta"), "--kb", "docs", "--tenant", slug])
    assert res.exit_code == 1 and not res.output.startswith("\n"), res.output
    assert "foto.txt: the content is image/png (.png), not text" in res.output
    assert "docs: 1 ingested, 0 unchanged, 0 metadata updated, 1 failed" in res.output


def test_errors_are_clear(database_url: str) -> None:
    assert runner.invoke(app, ["kb", "create", "padrao"]).exit_code == 0  # creates the tenant "default"
    res = runner.invoke(app, ["ask", "qual o prazo?", "--tenant", "default"])  # issue 58 §4: was "pass kb_ids"
    assert res.exit_code == 1 and "error [22023]: no knowledge base: pass --kb <name> or --agent <name>" in res.output
    res = runner.invoke(app, ["tenant", "create", "X", "--slug", "Bad Slug!"])
    assert res.exit_code == 1 and "a tenant's slug must be 1 to 63 characters" in res.output
    assert "tenants_slug_format" not in res.output
    res = runner.invoke(app, ["search", "", "--tenant", "default"])
    assert res.exit_code == 1 and "error [22023]: query_text must be 1..2000 characters" in res.output
    res = runner.invoke(app, ["search", "x", "--kb", "nao-existe", "--tenant", "default"])
    assert res.exit_code == 1 and "error [P0002]: unknown knowledge base: nao-existe" in res.output
    res = runner.invoke(app, ["kb", "list", "--tenant", "nobody-here"])
    assert res.exit_code == 1 and "error [P0002]: unknown tenant 'nobody-here'" in res.output


def test_worker_runs_the_maintenance_jobs_once(database_url: str) -> None:
    res = runner.invoke(app, ["worker", "--once"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert set(out) == {
        "reads",
        "decayed",
        "deactivated",
        "expired",
        "staging_purged",
        "sessions_purged",
        "retention",
        "transient",
        "ingestion",
        "tenant_graphs",
    }
    assert set(out["tenant_graphs"]) == {"min_chunks", "built", "dropped"}
    assert set(out["retention"]) == {"documents", "chunks", "data_access_log", "answer_audit", "memory_events"}
    assert set(out["transient"]) == {"answer_cache", "rate_limit_buckets"}


def test_worker_embeds_what_search_cannot_read(database_url: str) -> None:
    # With --embed-missing each run also embeds rows without a vector of the active model and
    # stores the tokens of messages that have none (tests/test_backfill.py checks what).
    res = runner.invoke(app, ["worker", "--once", "--embed-missing"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert set(out["embedded"]) == {"chunks", "memories", "memory_staging", "messages"}
    assert isinstance(out["message_tokens_stored"], int)
    res = runner.invoke(app, ["worker", "--once", "--embed-missing"])
    out = json.loads(res.output)
    assert (
        out["embedded"] == {"chunks": 0, "memories": 0, "memory_staging": 0, "messages": 0}
        and out["message_tokens_stored"] == 0
    )


def test_ingest_needs_create_kb_and_exits_1_on_any_failure(database_url: str, tmp_path: Path) -> None:
    """Issue 19 §1.4, §1.6, §1.8: a --kb typo created a KB silently; a folder with failed files
    exited 0; a failure line printed the path twice."""
    slug = f"cli-{uuid.uuid4().hex[:8]}"
    assert runner.invoke(app, ["tenant", "create", "Condomínio", "--slug", slug]).exit_code == 0
    (tmp_path / "regimento.txt").write_text("Art. 1º O salão de festas fecha à meia-noite.", encoding="utf-8")
    (tmp_path / "quebrado.pdf").write_bytes(b"%PDF-1.4 not really")
    res = runner.invoke(app, ["ingest", str(tmp_path), "--kb", "regras", "--tenant", slug])
    assert res.exit_code == 1
    assert "error [P0002]: unknown knowledge base 'regras'" in res.output and "--create-kb" in res.output
    assert f"`hipocampo kb create regras --tenant {slug}`" in res.output  # issue 45 §6: the hint names the tenant
    res = runner.invoke(app, ["kb", "list", "--tenant", slug, "--json"])
    assert json.loads(res.output) == []
    res = runner.invoke(
        app, ["ingest", str(tmp_path), "--kb", "regras", "--create-kb", "--tenant", slug, "--source-type", "regulation"]
    )
    assert res.exit_code == 1, res.output
    assert "1 ingested" in res.output and "1 failed" in res.output
    failed = [line for line in res.output.splitlines() if line.startswith("failed")]
    assert len(failed) == 1 and failed[0].count("quebrado.pdf") == 1 and "not a readable PDF" in failed[0]
    # Only the good file again: exit 0, the trust changed in place.
    (tmp_path / "quebrado.pdf").unlink()
    res = runner.invoke(
        app,
        ["ingest", str(tmp_path), "--kb", "regras", "--tenant", slug, "--source-type", "regulation", "--trust", "0.7"],
    )
    assert res.exit_code == 0 and "1 metadata updated" in res.output, res.output
    res = runner.invoke(app, ["kb", "list", "--tenant", slug, "--json"])
    assert json.loads(res.output)[0]["status"] == "ready"


def test_ask_answers_from_one_regulation_and_explains_a_refusal(database_url: str, tmp_path: Path) -> None:
    """Issue 19 §1.1: the README's own question was refused cross_check_failed."""
    slug = f"cli-{uuid.uuid4().hex[:8]}"
    assert runner.invoke(app, ["tenant", "create", "Condomínio", "--slug", slug]).exit_code == 0
    (tmp_path / "regimento.md").write_text(
        "# Regimento\n\nArt. 12º O prazo de recurso contra multa é de 15 dias corridos, contados da notificação.",
        encoding="utf-8",
    )
    for kb, kind in [("regras", "regulation"), ("notas", "other")]:
        res = runner.invoke(
            app,
            ["ingest", str(tmp_path), "--kb", kb, "--create-kb", "--tenant", slug, "--source-type", kind],
            terminal_width=400,
        )
        assert res.exit_code == 0, res.output
        # The note names the refusal before `ask` meets it, and the way out (a regulation needs none).
        note = f"config set rag '{{\"cross_check_min_documents\": 1}}' --kb notas --tenant {slug}"
        assert ("not authoritative" in res.output and note in res.output) == (kind == "other"), res.output
    res = runner.invoke(app, ["ask", "qual o prazo de recurso contra multa?", "--kb", "regras", "--tenant", slug])
    assert res.exit_code == 0 and "15 dias" in res.output and "Regimento" in res.output, res.output
    # Type other alone cannot back an answer (the cross-check), but the reply is not impossible: the
    # passage on the question's topic, cited (issue 61 §1).
    res = runner.invoke(app, ["ask", "qual o prazo de recurso contra multa?", "--kb", "notas", "--tenant", slug])
    assert res.exit_code == 0 and "PASSAGES" in res.output and "15 dias" in res.output, res.output
    assert "[1] Regimento" in res.output and "confidence" not in res.output
    assert "why no exact answer: only one document supports the answer" in " ".join(res.output.split())


def test_search_shows_relevance_on_clear_scales_and_plain_text(database_url: str) -> None:
    """Issue 19 §1.9: negative fused scores without explanation, unrelated hits below the answer,
    markdown '#' marks in excerpts and answers."""
    examples = Path(__file__).parent.parent / "examples" / "condominio"
    slug = f"cli-{uuid.uuid4().hex[:8]}"
    assert runner.invoke(app, ["tenant", "create", "Sol", "--slug", slug]).exit_code == 0
    res = runner.invoke(
        app, ["ingest", str(examples), "--kb", "regras", "--create-kb", "--tenant", slug, "--source-type", "regulation"]
    )
    assert res.exit_code == 0, res.output
    query = "qual o prazo de recurso contra multa?"
    res = runner.invoke(app, ["search", query, "--kb", "regras", "--tenant", slug], terminal_width=200)
    assert res.exit_code == 0, res.output
    assert "semantic" in res.output and "keywords" in res.output and "ranked by both together" in res.output
    assert "Regimento Interno" in res.output and "Manual do morador" not in res.output
    assert "hidden (--all shows them)" in res.output
    assert "#" not in res.output.replace("┃ #", "").replace("│ #", "") and "-0." not in res.output
    res = runner.invoke(app, ["search", query, "--kb", "regras", "--tenant", slug, "--all"], terminal_width=200)
    assert "hidden" not in res.output and res.output.count("Regimento Interno") > 1
    hits = json.loads(runner.invoke(app, ["search", query, "--kb", "regras", "--tenant", slug, "--json"]).stdout)
    # The API keeps every hit; a regulation is stored an article a chunk, its markdown read as
    # structure (issue 48 §1): the chapter is the chunk's heading path, not text.
    assert len(hits) > 1 and hits[0]["content"].startswith("Art. 12º O prazo de recurso")
    assert hits[0]["metadata"]["section"] == "Capítulo II - Das multas" and "#" not in hits[0]["content"]
    res = runner.invoke(app, ["ask", query, "--kb", "regras", "--tenant", slug], terminal_width=200)
    assert res.exit_code == 0 and "15 dias" in res.output and "##" not in res.output, res.output


def test_word_salad_is_ingested_with_a_warning_and_never_answers(database_url: str, tmp_path: Path) -> None:
    """Issue 48 §3: a 'minutes' file of random words of the regulation's own text (OCR garbage, a
    scrambled export) is ingested with a warning, doc show says so, and the question the
    regulation answered is still answered from it, never from the salad."""
    import random
    import re
    import shutil

    regimento = Path(__file__).parent.parent / "examples" / "condominio" / "regimento.md"
    docs = tmp_path / "docs"
    docs.mkdir()
    shutil.copy(regimento, docs / "regimento.md")
    words = re.findall(r"[^\W\d_]+", regimento.read_text("utf-8"))
    rnd = random.Random(5)
    (docs / "ata-embaralhada.txt").write_text(" ".join(rnd.choice(words) for _ in range(4000)), "utf-8")
    slug = f"cli-{uuid.uuid4().hex[:8]}"
    assert runner.invoke(app, ["tenant", "create", "Sol", "--slug", slug]).exit_code == 0
    res = runner.invoke(
        app, ["ingest", str(docs), "--kb", "regras", "--create-kb", "--tenant", slug, "--source-type", "regulation"]
    )
    assert res.exit_code == 0, res.output
    assert "ata-embaralhada.txt: its text does not read as language" in res.stderr
    assert "regimento.md: its text" not in res.stderr
    listed = json.loads(runner.invoke(app, ["doc", "list", "--kb", "regras", "--tenant", slug, "--json"]).stdout)
    salad = next(d for d in listed if d["source_uri"].endswith("ata-embaralhada.txt"))
    shown = runner.invoke(app, ["doc", "show", str(salad["id"]), "--tenant", slug])
    assert json.loads(shown.stdout)["reads_as_language"] is False and "does not read as language" in shown.stderr
    res = runner.invoke(
        app, ["ask", "qual o prazo de recurso contra multa?", "--kb", "regras", "--tenant", slug, "--json"]
    )
    answer = json.loads(res.stdout)
    assert answer["refused"] is False and "15 dias" in answer["answer"], answer
    assert all(s["source_uri"].endswith("regimento.md") for s in answer["sources"])


def test_a_refusal_after_retrieval_shows_the_closest_passage(database_url: str) -> None:
    """Issue 48 §2: no_evidence only when retrieval found nothing; a question the regulation does
    not answer, about what it covers, is refused with the passage that came closest."""
    regulation = Path(__file__).parent.parent / "examples" / "regulamento-condominio"
    slug = f"cli-{uuid.uuid4().hex[:8]}"
    assert runner.invoke(app, ["tenant", "create", "Acácias", "--slug", slug]).exit_code == 0
    res = runner.invoke(
        app,
        ["ingest", str(regulation), "--kb", "regras", "--create-kb", "--tenant", slug, "--source-type", "regulation"],
    )
    assert res.exit_code == 0, res.output
    q = "Posso instalar ar-condicionado na fachada?"
    ans = json.loads(runner.invoke(app, ["ask", q, "--kb", "regras", "--tenant", slug, "--json"]).stdout)
    assert (ans["refused"], ans["reason"]) == (True, "low_confidence"), ans
    closest = ans["closest"]
    assert closest["document"].startswith("Regulamento Interno") and closest["article"].startswith("Art.")
    assert closest["excerpt"].startswith(closest["article"]) and len(closest["excerpt"]) <= 300
    res = runner.invoke(app, ["ask", q, "--kb", "regras", "--tenant", slug], terminal_width=200)
    assert "the closest passage I found: Regulamento Interno" in res.output, res.output
    off = json.loads(
        runner.invoke(app, ["ask", "Qual a capital da Austrália?", "--kb", "regras", "--tenant", slug, "--json"]).stdout
    )
    assert off["refused"] is True


def test_ingest_prune_removes_the_documents_whose_files_are_gone(database_url: str, tmp_path: Path) -> None:
    """Issue 44 §6: re-ingesting a folder kept the documents of deleted files forever. With --prune
    they are deleted and listed; without it, and when a file fails to load, nothing is."""
    slug = f"cli-{uuid.uuid4().hex[:8]}"
    assert runner.invoke(app, ["tenant", "create", "Condomínio", "--slug", slug]).exit_code == 0
    folder = tmp_path / "regras"
    folder.mkdir()
    for name in ("a.txt", "b.txt", "c.txt"):
        (folder / name).write_text(f"Regra {name}: o salão fecha à meia-noite.", encoding="utf-8")
    (tmp_path / "fora.txt").write_text("Outro documento, fora da pasta.", encoding="utf-8")
    ingest = ["ingest", "--kb", "regras", "--tenant", slug]
    assert runner.invoke(app, [*ingest, str(folder), str(tmp_path / "fora.txt"), "--create-kb"]).exit_code == 0
    (folder / "b.txt").unlink()
    assert runner.invoke(app, [*ingest, str(folder)]).exit_code == 0  # no --prune: kept
    docs = lambda: sorted(  # noqa: E731
        Path(d["source_uri"]).name
        for d in json.loads(runner.invoke(app, ["doc", "list", "--kb", "regras", "--tenant", slug, "--json"]).output)
    )
    assert docs() == ["a.txt", "b.txt", "c.txt", "fora.txt"]
    (folder / "quebrado.pdf").write_bytes(b"%PDF-1.4 not really")
    assert runner.invoke(app, [*ingest, str(folder), "--prune"]).exit_code == 1  # a failed file: nothing pruned
    assert docs() == ["a.txt", "b.txt", "c.txt", "fora.txt"]
    (folder / "quebrado.pdf").unlink()
    res = runner.invoke(app, [*ingest, str(folder), "--prune"])
    assert res.exit_code == 0, res.output
    assert "pruned 1 documents whose files or pages are gone" in res.output and "b.txt" in res.output
    assert docs() == ["a.txt", "c.txt", "fora.txt"]  # a file outside the folder is not the folder's


def test_a_new_knowledge_base_is_not_kept_when_every_file_fails(database_url: str, tmp_path: Path) -> None:
    """Issue 44 §5: `ingest --create-kb` of a folder whose every file fails left an empty
    knowledge base; a knowledge base that existed before stays."""
    slug = f"cli-{uuid.uuid4().hex[:8]}"
    assert runner.invoke(app, ["tenant", "create", "Condomínio", "--slug", slug]).exit_code == 0
    (tmp_path / "quebrado.pdf").write_bytes(b"%PDF-1.4 not really")
    res = runner.invoke(app, ["ingest", str(tmp_path), "--kb", "nova", "--create-kb", "--tenant", slug])
    assert res.exit_code == 1 and "the new knowledge base nova was not kept" in res.output
    assert json.loads(runner.invoke(app, ["kb", "list", "--tenant", slug, "--json"]).output) == []
    assert runner.invoke(app, ["kb", "create", "velha", "--tenant", slug]).exit_code == 0
    res = runner.invoke(app, ["ingest", str(tmp_path), "--kb", "velha", "--create-kb", "--tenant", slug])
    assert res.exit_code == 1 and "not kept" not in res.output
    assert [k["name"] for k in json.loads(runner.invoke(app, ["kb", "list", "--tenant", slug, "--json"]).output)] == [
        "velha"
    ]


def test_agent_bindings_are_set_listed_shown_and_deleted(database_url: str) -> None:
    """Issue 45 §5: agent bindings (seed 003's hub) in the CLI, not only in SQL."""
    slug = f"cli-{uuid.uuid4().hex[:8]}"
    assert runner.invoke(app, ["tenant", "create", "Agentes", "--slug", slug]).exit_code == 0
    for kb in ("regras", "faq"):
        assert runner.invoke(app, ["kb", "create", kb, "--tenant", slug]).exit_code == 0
    res = runner.invoke(
        app, ["agent", "set", "portaria", "--kb", "regras", "--kb", "faq", "--set", "top_k=3", "--tenant", slug]
    )
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["agent", "list", "--tenant", slug, "--json"])
    (agent,) = json.loads(res.output)
    assert (agent["name"], agent["kb_names"], agent["rag_overrides"]) == ("portaria", ["regras", "faq"], {"top_k": 3})
    res = runner.invoke(app, ["agent", "list", "--tenant", slug])
    assert "portaria" in res.output and "regras, faq" in res.output
    shown = json.loads(runner.invoke(app, ["agent", "show", "portaria", "--tenant", slug, "--json"]).output)
    assert shown["top_k"] == 3 and shown["agent"] == "portaria" and len(shown["kb_ids"]) == 2
    # Bad input: a typed error with its SQLSTATE, nothing stored.
    res = runner.invoke(app, ["agent", "set", "Portaria!", "--kb", "regras", "--tenant", slug])
    assert res.exit_code == 1 and "22023" in res.output
    res = runner.invoke(app, ["agent", "set", "sac", "--kb", "nao-existe", "--tenant", slug])
    assert res.exit_code == 1 and "P0002" in res.output
    res = runner.invoke(app, ["agent", "set", "sac", "--kb", "regras", "--set", "top_k", "--tenant", slug])
    assert res.exit_code == 1 and "key=value" in res.output
    assert runner.invoke(app, ["agent", "delete", "portaria", "--tenant", slug]).exit_code == 0
    res = runner.invoke(app, ["agent", "delete", "portaria", "--tenant", slug])
    assert res.exit_code == 1 and "P0002" in res.output
    assert json.loads(runner.invoke(app, ["agent", "list", "--tenant", slug, "--json"]).output) == []


def test_feedback_is_marked_read_judged_and_evaluated(database_url: str, tmp_path: Path) -> None:
    """Issue 59 §5 from the command line: a reply marked not useful with its question shows in the
    summary; judged with the document that answers it, `kb eval --stored` evaluates it."""
    slug = f"cli-{uuid.uuid4().hex[:8]}"
    assert runner.invoke(app, ["tenant", "create", "Feedback", "--slug", slug]).exit_code == 0
    (tmp_path / "regimento.md").write_text(
        "# Regimento\n\nArt. 12º O prazo de recurso contra multa é de 15 dias corridos, contados da notificação.",
        encoding="utf-8",
    )
    res = runner.invoke(
        app, ["ingest", str(tmp_path), "--kb", "regras", "--create-kb", "--tenant", slug, "--source-type", "regulation"]
    )
    assert res.exit_code == 0, res.output
    question = "em quanto tempo posso contestar uma multa?"
    res = runner.invoke(app, ["ask", question, "--kb", "regras", "--tenant", slug, "--json"])
    assert res.exit_code == 0, res.output
    trace = json.loads(res.stdout)["trace_id"]
    mark = ["feedback", "mark", trace, "--not-useful", "--comment", "queria o prazo", "--tenant", slug]
    res = runner.invoke(app, [*mark, "--question", "outra pergunta?"])
    assert res.exit_code == 1 and "question is not the one this answer was asked" in res.output
    res = runner.invoke(app, [*mark, "--question", question, "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout) == {"trace_id": trace}, res.output
    res = runner.invoke(app, ["feedback", "summary", "--kb", "regras", "--tenant", slug, "--json"])
    worst = json.loads(res.stdout)["worst"]
    assert [(w["question"], w["comment"], w["judged"]) for w in worst] == [(question, "queria o prazo", False)]
    res = runner.invoke(app, ["doc", "list", "--kb", "regras", "--tenant", slug, "--json"])
    document = json.loads(res.stdout)[0]["id"]
    res = runner.invoke(app, ["feedback", "judge", trace, "--document", document, "--tenant", slug, "--json"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["feedback", "judged", "--kb", "regras", "--tenant", slug, "--json"])
    uri = (tmp_path / "regimento.md").as_uri()
    assert [(j["question"], j["relevant_uris"]) for j in json.loads(res.stdout)] == [(question, [uri])]
    res = runner.invoke(app, ["kb", "eval", "regras", "--stored", "--tenant", slug, "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["questions"] == 1
