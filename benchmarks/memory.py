"""Memory engine at scale: upsert throughput / latency and memory-search latency.

Usage:  .venv/bin/python benchmarks/memory.py [--users 10000] [--per-user 50] [--tenants 20]
                                             [--upserts 2000] [--searches 2000] [--write]

Population: --users users spread over --tenants tenants, each with consent and --per-user active
memories (the quota), bulk-loaded in SQL with real all-MiniLM-L6-v2 vectors of a pool of 5,000
LoCoMo turns (each user gets 50 distinct ones); the HNSW index is rebuilt after the load.
Measured, as authenticated users (JWT claims, RLS), through the real RPCs:
- upsert: ``hipocampo.remember`` replacing the value of one of the user's keys (the full gate:
  consent, text checks, quota, advisory lock, semantic-duplicate scan, deprecate + insert +
  events), random users, at 1 and 4 clients: calls/s and p50/p95/p99 ms;
- search: ``hipocampo.search_memories`` (context mode, k = 5, both tiers) at 1 and 4 clients.
Embedding time is excluded (vectors precomputed). ``--write`` replaces the memory section of
docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import threading
import time
from typing import Any

from hipocampo import db
from hipocampo.config import repo_root
from hipocampo.embeddings import CachingEmbedder, LocalMiniLM
from hipocampo.evaluation.datasets import datasets_dir
from report import pct, write_section

BEGIN, END = "<!-- memory:begin -->", "<!-- memory:end -->"
POOL = 5000
CATEGORIES = ["preference", "projects", "people_contacts", "goals_kpis", "pattern"]


def pool_texts() -> list[str]:
    data = json.loads((datasets_dir() / "locomo" / "locomo10.json").read_text("utf-8"))
    out: list[str] = []
    for sample in data:
        conv = sample["conversation"]
        n = 1
        while f"session_{n}" in conv:
            out += [t["text"] for t in conv[f"session_{n}"] if len(t["text"]) >= 20]
            n += 1
    seen: dict[str, None] = dict.fromkeys(out)
    return list(seen)[:POOL]


def vec(v: list[float]) -> str:
    return "[" + ",".join(f"{x:.6f}" for x in v) + "]"


def populate(url: str, users: int, per_user: int, tenants: int, texts: list[str], vecs: list[list[float]]) -> float:
    import psycopg

    t0 = time.perf_counter()
    with psycopg.connect(url, autocommit=True) as conn:
        n = conn.execute(
            "select count(*) from hipocampo_private.memories m join hipocampo_private.tenants t on t.id = m.tenant_id "
            "where t.slug like 'mem-bench-%%' and m.status = 'active'"
        ).fetchone()
        if n and n[0] >= users * per_user:
            return 0.0
        conn.execute("delete from hipocampo_private.tenants where slug like 'mem-bench-%%'")
        conn.execute("set maintenance_work_mem = '4GB'")  # the HNSW graph of 1M memories in memory
        conn.execute("create unlogged table if not exists public.mem_bench_pool (i int primary key, t text, e text)")
        conn.execute("truncate public.mem_bench_pool")
        with conn.cursor().copy("copy public.mem_bench_pool (i, t, e) from stdin") as cp:
            for i, (t, v) in enumerate(zip(texts, vecs, strict=True)):
                cp.write_row((i, t, vec(v)))
        idx = conn.execute(
            "select indexname from pg_indexes "
            "where tablename = 'memories' and indexname like 'memories_embedding_hnsw_%%'"
        ).fetchall()
        for (name,) in idx:
            conn.execute(f"drop index hipocampo_private.{name}")
        conn.execute(
            "insert into hipocampo_private.tenants (name, slug) "
            "select 'Memory bench ' || g, 'mem-bench-' || g from generate_series(0, %s - 1) as g",
            (tenants,),
        )
        conn.execute(
            "create temporary table bench_users as "
            "select u, (select id from hipocampo_private.tenants where slug = 'mem-bench-' || (u %% %s)) as tenant_id, "
            "uuid_in(md5('mem-bench-user-' || u)::cstring) as user_id from generate_series(0, %s - 1) as u",
            (tenants, users),
        )
        conn.execute(
            "insert into hipocampo_private.memberships (tenant_id, user_id, role) "
            "select tenant_id, user_id, 'member' from bench_users"
        )
        conn.execute(
            "insert into hipocampo_private.memory_consents (tenant_id, user_id, granted) "
            "select tenant_id, user_id, true from bench_users"
        )
        model = conn.execute("select name from hipocampo_private.embedding_models where active").fetchone()
        conn.execute(
            "insert into hipocampo_private.memories (tenant_id, user_id, category, key, value, description, "
            "confidence, source, tags, embedding, embedding_model, token_count) "
            "select b.tenant_id, b.user_id, (%s::text[])[1 + j %% 5], 'bench.k' || j, to_jsonb(j), p.t, 0.9, "
            "'explicit_user', array['bench'], p.e::extensions.vector, %s, ceil(length(p.t) / 4.0) "
            "from bench_users as b cross join generate_series(0, %s - 1) as j "
            "join public.mem_bench_pool as p on p.i = (b.u * 37 + j * 101) %% %s",
            (CATEGORIES, model[0] if model else None, per_user, len(texts)),
        )
        conn.execute("select hipocampo_private._ensure_model_index(name) from hipocampo_private.embedding_models")
        conn.execute("vacuum analyze hipocampo_private.memories")
        conn.execute("drop table public.mem_bench_pool")
    return time.perf_counter() - t0


def run(
    url: str, kind: str, clients: int, per_client: int, users: list[tuple[str, str]], vecs: list[str], per_user: int
) -> dict[str, Any]:
    import psycopg

    lat: list[float] = []
    statuses: dict[str, int] = {}
    lock = threading.Lock()

    def worker(c: int) -> None:
        rnd = random.Random(f"{kind}-{clients}-{c}-{time.time_ns()}")  # new values every run
        mine: list[float] = []
        seen: dict[str, int] = {}
        with psycopg.connect(url) as conn:
            for _ in range(per_client):
                tid, uid = users[rnd.randrange(len(users))]
                claims = json.dumps({"sub": uid, "role": "authenticated", "app_metadata": {"tenant_id": tid}})
                v = vecs[rnd.randrange(len(vecs))]
                t0 = time.perf_counter()
                with conn.transaction():
                    conn.execute("set local role authenticated")
                    conn.execute("select set_config('request.jwt.claims', %s, true)", (claims,))
                    if kind == "upsert":
                        j = rnd.randrange(per_user)
                        row = conn.execute(
                            "select hipocampo.remember(%s, %s::jsonb, %s, 'preference', %s::extensions.vector) ->> "
                            "'status'",
                            (
                                f"bench.k{j}",
                                json.dumps(rnd.random()),
                                f"Memória de teste número {rnd.randrange(1000)}",
                                v,
                            ),
                        ).fetchone()
                        status = str(row[0]) if row else "none"
                    else:
                        rows = conn.execute(
                            "select memory_id from hipocampo.search_memories(%s::extensions.vector, 'context', 5)",
                            (v,),
                        ).fetchall()
                        status = f"{len(rows)} rows"
                mine.append((time.perf_counter() - t0) * 1000)
                seen[status] = seen.get(status, 0) + 1
        with lock:
            lat.extend(mine)
            for k, n in seen.items():
                statuses[k] = statuses.get(k, 0) + n

    threads = [threading.Thread(target=worker, args=(c,)) for c in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    return {
        "kind": kind,
        "clients": clients,
        "calls": len(lat),
        "per_s": len(lat) / wall,
        "p50": statistics.median(lat),
        "p95": pct(lat, 95),
        "p99": pct(lat, 99),
        "statuses": statuses,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--users", type=int, default=10_000)
    ap.add_argument("--per-user", type=int, default=50)
    ap.add_argument("--tenants", type=int, default=20)
    ap.add_argument("--upserts", type=int, default=2000, help="upserts per run (split over the clients)")
    ap.add_argument("--searches", type=int, default=2000, help="searches per run (split over the clients)")
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    url = db.ensure_database()
    texts = pool_texts()
    embedder = CachingEmbedder(LocalMiniLM(), repo_root() / ".hipocampo" / "cache" / "embeddings.sqlite")
    vecs = embedder.embed_documents(texts)
    load_s = populate(url, args.users, args.per_user, args.tenants, texts, vecs)
    import psycopg

    with psycopg.connect(url) as conn:
        users = [
            (str(t), str(u))
            for t, u in conn.execute(
                "select m.tenant_id, m.user_id from hipocampo_private.memberships m "
                "join hipocampo_private.tenants t on t.id = m.tenant_id where t.slug like 'mem-bench-%%'"
            ).fetchall()
        ]
        total = conn.execute(
            "select count(*) from hipocampo_private.memories m join hipocampo_private.tenants t on t.id = m.tenant_id "
            "where t.slug like 'mem-bench-%%'"
        ).fetchone()
    print(f"{len(users)} users, {total[0] if total else 0} memory rows; load {load_s:.0f} s", flush=True)
    qvecs = [vec(v) for v in vecs]
    results = []
    run(url, "search", 1, 200, users, qvecs, args.per_user)  # warm-up
    for kind, n in (("upsert", args.upserts), ("search", args.searches)):
        for clients in (1, 4):
            r = run(url, kind, clients, n // clients, users, qvecs, args.per_user)
            print(r, flush=True)
            results.append(r)

    if args.write:
        cmd = "python benchmarks/memory.py " + " ".join(sys.argv[1:])
        lines = [
            BEGIN,
            "## Memory engine: upsert and search",
            "",
            f"Command: `{cmd.strip()}`. {len(users)} users in {args.tenants} tenants, {args.per_user} active "
            f"memories each ({total[0] if total else 0} rows incl. the history the runs add), real MiniLM vectors of "
            "LoCoMo turns; calls as authenticated users (RLS) through `hipocampo.remember` (full gate, replacing "
            "a key's value: deprecate + insert + events) and `hipocampo.search_memories` (k = 5); embedding "
            "excluded; 2-core machine, client and server on it.",
            "",
            "| call | clients | calls | calls/s | p50 ms | p95 ms | p99 ms | outcomes |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in results:
            outcomes = ", ".join(f"{k}: {v}" for k, v in sorted(r["statuses"].items()))
            lines.append(
                f"| {r['kind']} | {r['clients']} | {r['calls']} | {r['per_s']:.0f} | {r['p50']:.1f} | "
                f"{r['p95']:.1f} | {r['p99']:.1f} | {outcomes} |"
            )
        lines.append(END)
        path_md = write_section(BEGIN, END, "\n".join(lines))
        print(f"wrote {path_md}")


if __name__ == "__main__":
    main()
