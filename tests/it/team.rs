//! The team store (`dyno sync`, `--db postgres://…`, `dyno machines`)
//! against a real PostgreSQL server: Debian's `postgresql`, started by
//! scripts/test.sh on a private port and data folder (DYNO_TEST_PG_URL;
//! without it the first test starts one through scripts/lib/postgres.sh).
//! That server accepts TCP only over TLS and only with a password, so every
//! test here also goes through both. Each test gets its own database.
//!
//! The runs synced are real: a SmolLM2 benchmark through llama.cpp, and the
//! real sweep of tests/fixtures/sweep-export.json imported as the runs of
//! machines named by DYNO_MACHINE_ID (copied N times with distinct ids and
//! start times where a test needs thousands).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::*;

/// The server's URL for user `dyno` (with its password).
fn pg_base() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        if let Ok(u) = std::env::var("DYNO_TEST_PG_URL") {
            return u;
        }
        let dir = std::env::temp_dir().join(format!("dyno-test-pg-{}", user_name()));
        let script = [
            "scripts/lib/postgres.sh".as_ref(),
            "start".as_ref(),
            dir.as_os_str(),
        ];
        script_stdout(&script, "start PostgreSQL")
            .lines()
            .find_map(|l| l.strip_prefix("export DYNO_TEST_PG_URL="))
            .expect("the script prints the URL")
            .to_string()
    })
}

/// The user's id, for a per-user server folder.
fn user_name() -> String {
    std::env::var("USER").unwrap_or_else(|_| "user".into())
}

fn psql(url: &str, sql: &str) -> String {
    let o = Command::new("psql")
        .arg(url)
        .args(["-v", "ON_ERROR_STOP=1", "-qAtc", sql])
        .output()
        .expect("psql runs");
    assert!(
        o.status.success(),
        "psql failed on {sql}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap().trim().to_string()
}

/// A new, empty database on the test server; its URL.
fn fresh_db(tag: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    let name = format!(
        "t_{tag}_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    );
    psql(pg_base(), &format!("CREATE DATABASE {name}"));
    let base = pg_base();
    let cut = base.rfind('/').expect("a URL with a database");
    format!("{}/{name}", &base[..cut])
}

fn password(url: &str) -> String {
    let after = url.split("://").nth(1).unwrap();
    after
        .split('@')
        .next()
        .unwrap()
        .split(':')
        .nth(1)
        .unwrap()
        .to_string()
}

/// `dyno` with the scratch database and a machine identity.
fn as_machine(s: &Scratch, machine: &str) -> Command {
    let mut c = s.dyno();
    c.env("DYNO_MACHINE_ID", machine)
        .env_remove("DYNO_TEAM_URL")
        .env_remove("PGPASSWORD");
    c
}

/// The real sweep of the fixture as `n` runs of `machine`, decode and
/// prefill samples scaled by `speed`, written to a file to import.
fn runs_file(s: &Scratch, machine: &str, n: usize, speed: f64) -> std::path::PathBuf {
    let mut doc: Value =
        serde_json::from_str(include_str!("../fixtures/sweep-export.json")).unwrap();
    let o = doc.as_object_mut().unwrap();
    o.remove("sweep");
    o.remove("sweep_id");
    doc["machine"]["fingerprint"] = json!(machine);
    doc["machine"]["cpu"] = json!(format!("CPU of {machine}"));
    let base = doc["runs"].as_array().unwrap().clone();
    // Machines' runs start at different moments, as real ones do.
    let offset: usize = machine.bytes().map(usize::from).sum::<usize>() * 7;
    let mut runs = Vec::with_capacity(n);
    for i in 0..n {
        let mut r = base[i % base.len()].clone();
        r["run_id"] = json!(i + 1);
        r["sweep_id"] = Value::Null;
        let t = i + offset;
        r["started_at"] = json!(format!(
            "2026-01-{:02}T{:02}:{:02}:{:02}.000Z",
            1 + t / 86400,
            (t / 3600) % 24,
            (t / 60) % 60,
            t % 60
        ));
        for res in r["results"].as_array_mut().unwrap() {
            for key in ["prefill_tokens_per_s", "decode_tokens_per_s"] {
                // `get_mut`, not indexing: indexing a null inserts a key.
                let samples = res
                    .get_mut(key)
                    .and_then(|f| f.get_mut("samples"))
                    .and_then(Value::as_array_mut);
                if let Some(samples) = samples {
                    for v in samples.iter_mut() {
                        *v = json!(v.as_f64().unwrap() * speed);
                    }
                }
            }
        }
        runs.push(r);
    }
    doc["runs"] = Value::Array(runs);
    let path = s.path(&format!("runs-{machine}.json"));
    std::fs::write(&path, serde_json::to_vec(&doc).unwrap()).unwrap();
    path
}

fn seed(s: &Scratch, machine: &str, n: usize, speed: f64) {
    let f = runs_file(s, machine, n, speed);
    let o = run(as_machine(s, machine), &["import", f.to_str().unwrap()]);
    assert_code(&o, 0);
}

fn sync(s: &Scratch, machine: &str, url: &str, extra: &[&str]) -> Output {
    let mut args = vec!["sync", url, "--json"];
    args.extend_from_slice(extra);
    run(as_machine(s, machine), &args)
}

/// A short real benchmark of SmolLM2 measured as `machine`.
fn bench_as(s: &Scratch, machine: &str) {
    let o = as_machine(s, machine)
        .args(argv("bench SMOL -p 16 -n 4 -r 1"))
        .output()
        .unwrap();
    assert_code(&o, 0);
}

fn synced(s: &Scratch, machine: &str, url: &str, extra: &[&str]) -> Value {
    let o = sync(s, machine, url, extra);
    assert_code(&o, 0);
    json(&o)
}

#[test]
fn a_sync_pushes_pulls_and_a_second_adds_nothing() {
    let url = fresh_db("basic");
    let a = Scratch::new();
    // A real benchmark measured on machine alpha, and the fixture's sweep.
    bench_as(&a, "alpha");
    seed(&a, "alpha", 4, 1.0);
    let first = synced(&a, "alpha", &url, &[]);
    assert_eq!(first["pushed"], 5, "{first}");
    assert_eq!(first["already_there"], 0);
    assert_eq!(first["machine"], "alpha");
    let again = synced(&a, "alpha", &url, &[]);
    assert_eq!(
        (again["pushed"].as_u64(), again["already_there"].as_u64()),
        (Some(0), Some(0))
    );
    assert_eq!(again["team_runs"], 5);
    assert_eq!(psql(&url, "SELECT COUNT(*) FROM team_runs"), "5");
    // Every test of every run is there, with its samples.
    assert_eq!(
        psql(&url, "SELECT COUNT(*) FROM team_runs r WHERE NOT EXISTS (SELECT 1 FROM team_results x WHERE x.run_uid = r.uid)"),
        "0"
    );

    // Machine beta pulls alpha's runs and reads them offline.
    let b = Scratch::new();
    let pulled = synced(&b, "beta", &url, &[]);
    assert_eq!(
        (pulled["pushed"].as_u64(), pulled["pulled"].as_u64()),
        (Some(0), Some(5))
    );
    let local = json(&run(as_machine(&b, "beta"), &["runs", "--json"]));
    assert_eq!(local["runs"].as_array().unwrap().len(), 5, "{local}");
    assert_eq!(synced(&b, "beta", &url, &[])["pulled"], 0);
    // Pulled runs are never pushed back, even after beta measures its own.
    bench_as(&b, "beta");
    let b2 = synced(&b, "beta", &url, &[]);
    assert_eq!(
        (b2["pushed"].as_u64(), b2["already_there"].as_u64()),
        (Some(1), Some(0))
    );
    assert_eq!(b2["team_machines"], 2);
    // The benchmark measured on alpha reads the same through beta's copy,
    // the team store and alpha's own database: same samples, same figures.
    let alpha_show = json(&run(as_machine(&a, "alpha"), &["show", "1", "--json"]));
    let uid = psql(&url, "SELECT uid FROM team_runs WHERE local_id = 1 AND machine = 'alpha' AND status = 'ok' AND model_sha256 IN (SELECT sha256 FROM team_models WHERE file_name LIKE 'SmolLM2-135M-Instruct.Q4_1%') ORDER BY started_at DESC LIMIT 1");
    let team_show = json(&run(
        as_machine(&b, "beta"),
        &["--db", &url, "show", &uid[..10], "--json"],
    ));
    let (ra, rt) = (&alpha_show["runs"][0], &team_show["runs"][0]);
    assert_eq!(ra["model"]["sha256"], rt["model"]["sha256"]);
    assert_eq!(ra["config"], rt["config"]);
    for (x, y) in ra["results"]
        .as_array()
        .unwrap()
        .iter()
        .zip(rt["results"].as_array().unwrap())
    {
        assert_eq!(x["samples_ns"], y["samples_ns"]);
        assert_eq!(x["samples_tokens_per_s"], y["samples_tokens_per_s"]);
    }
    // Exports of a team run leave out paths, as every export does.
    assert!(!rt["model"]["path"].as_str().unwrap().contains('/'));
}

/// `runs`, `show`, `compare` and exports give the same answers from a team
/// store in PostgreSQL and one in a SQLite file: one schema, one set of
/// queries, two engines.
/// A run a dead Dyno left 'running' under the host's old name (macOS
/// renames hosts) used to stop every later push at it. Pushing to a SQLite
/// team store needs no server.
#[test]
fn a_run_left_running_by_a_dead_dyno_on_a_renamed_host_does_not_stop_the_push() {
    let s = Scratch::new();
    let lite = format!("sqlite://{}?mode=rwc", s.path("team.db").display());
    seed(&s, "eta", 3, 1.0);
    sql(
        &s.db(),
        "UPDATE runs SET status = 'running', owner_pid = 1, owner_host = 'before-rename' WHERE id = 1",
    );
    let r = synced(&s, "eta", &lite, &["--push-only"]);
    assert_eq!(r["pushed"], 3, "{r}");
    assert_eq!(r["left_running"], 0, "{r}");
    let o = run(as_machine(&s, "eta"), &["--db", &lite, "runs", "--json"]);
    assert_code(&o, 0);
    let team: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let interrupted = team
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["status"] == "failed")
        .count();
    assert_eq!(
        interrupted, 1,
        "the dead run is in the store, as interrupted: {team}"
    );
}

/// A run another machine pushed with a Dyno newer than this one (a test
/// kind this one does not know) is skipped, counted and named, and the rest
/// of the pull goes on.
#[test]
fn one_unreadable_team_run_is_skipped_and_the_pull_goes_on() {
    let theirs = Scratch::new();
    let lite = format!("sqlite://{}?mode=rwc", theirs.path("team.db").display());
    seed(&theirs, "theta", 3, 1.0);
    assert_eq!(
        synced(&theirs, "theta", &lite, &["--push-only"])["pushed"],
        3
    );
    sql(
        &theirs.path("team.db"),
        "UPDATE team_results SET kind = 'vision', doc = replace(doc, '\"kind\":\"gen\"', '\"kind\":\"vision\"')
         WHERE kind = 'gen' AND run_uid = (SELECT MIN(uid) FROM team_runs)",
    );
    let ours = Scratch::new();
    let r = synced(&ours, "iota", &lite, &[]);
    assert_eq!(r["pulled"], 2, "{r}");
    assert_eq!(r["skipped"], 1, "{r}");
    let why = r["skipped_runs"][0]["reason"].as_str().unwrap();
    assert!(
        why.contains("'vision'") && why.contains("update Dyno"),
        "{why}"
    );
    // The words say the same without --json.
    let o = run(as_machine(&ours, "iota"), &["sync", &lite]);
    assert_code(&o, 0);
    assert!(stdout(&o).contains("skipped 1 run(s)"), "{}", stdout(&o));
}

/// A team store dropped and made again at the same address is another
/// store: every run is sent to it again, where the old mark, kept per
/// address, said there was nothing left to send.
#[test]
fn a_recreated_team_store_gets_every_run_again() {
    let s = Scratch::new();
    let file = s.path("team.db");
    let lite = format!("sqlite://{}?mode=rwc", file.display());
    seed(&s, "kappa", 3, 1.0);
    assert_eq!(synced(&s, "kappa", &lite, &["--push-only"])["pushed"], 3);
    assert_eq!(synced(&s, "kappa", &lite, &["--push-only"])["pushed"], 0);
    for end in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{end}", file.display()));
    }
    let r = synced(&s, "kappa", &lite, &["--push-only"]);
    assert_eq!(r["pushed"], 3, "{r}");
    assert_eq!(r["team_runs"], 3, "{r}");
}

#[test]
fn the_same_reads_on_postgres_and_sqlite() {
    let pg = fresh_db("engines");
    let s = Scratch::new();
    let lite = format!("sqlite://{}?mode=rwc", s.path("team.db").display());
    seed(&s, "gamma", 4, 1.0);
    seed(&s, "delta", 4, 0.5);
    for url in [&pg, &lite] {
        let r = synced(&s, "gamma", url, &["--push-only"]);
        assert_eq!(r["pushed"], 8, "{url}: {r}");
    }
    let read = |url: &str, args: &[&str]| {
        let mut all = vec!["--db", url];
        all.extend_from_slice(args);
        let o = run(as_machine(&s, "gamma"), &all);
        assert_code(&o, 0);
        stdout(&o)
    };
    let list = read(&pg, &["runs", "--json"]);
    assert_eq!(list, read(&lite, &["runs", "--json"]));
    let rows: Value = serde_json::from_str(&list).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 8);
    let id = |i: usize| rows[i]["id"].as_str().unwrap()[..12].to_string();
    let (a, b) = (id(0), id(7));
    for args in [
        vec!["show", a.as_str(), "--json"],
        vec!["show", a.as_str()],
        vec!["compare", a.as_str(), b.as_str(), "--json"],
        vec!["export", a.as_str(), "--format", "csv"],
        vec!["export", a.as_str(), "--format", "md"],
        vec!["export", a.as_str(), "--format", "llama-bench-json"],
        vec!["machines", "--json"],
        vec!["machines", "--backend", "CPU"],
    ] {
        assert_eq!(read(&pg, &args), read(&lite, &args), "{args:?}");
    }
    // A run read from the team store is the run measured: decode as the
    // local database has it.
    let team = read(&pg, &["show", &a, "--json"]);
    let team: Value = serde_json::from_str(&team).unwrap();
    let local = json(&run(as_machine(&s, "gamma"), &["runs", "--json"]));
    let started = &team["runs"][0]["started_at"];
    let here = local["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| {
            &r["started_at"] == started
                && r["model"]["sha256"] == team["runs"][0]["model"]["sha256"]
        })
        .expect("the same run locally");
    assert_eq!(here["results"], team["runs"][0]["results"]);
}

#[test]
fn machines_are_ranked_by_decode_and_a_card_shows_the_team_median() {
    let url = fresh_db("rank");
    let s = Scratch::new();
    for (m, speed) in [("slow", 0.5), ("mid", 1.0), ("fast", 2.0)] {
        let t = Scratch::new();
        seed(&t, m, 4, speed);
        synced(&t, m, &url, &["--push-only"]);
    }
    let o = run(
        as_machine(&s, "reader"),
        &[
            "machines",
            "--team",
            &url,
            "--model",
            "SmolLM2-135M-Instruct-Q8_0.gguf",
            "--json",
        ],
    );
    assert_code(&o, 0);
    let r = json(&o);
    assert_eq!(r["level"]["quant"], "Q8_0");
    let order: Vec<&str> = r["machines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["machine"].as_str().unwrap())
        .collect();
    assert_eq!(order, ["fast", "mid", "slow"]);
    let d = |i: usize| f(&r["machines"][i]["decode_tps"]);
    assert!(
        (d(0) / d(1) - 2.0).abs() < 0.01 && (d(1) / d(2) - 2.0).abs() < 0.01,
        "{r}"
    );
    assert!((f(&r["median_decode_tps"]) - d(1)).abs() < 1e-9);
    // Prefill is its own column, never blended with decode.
    assert!(f(&r["machines"][0]["prefill_tps"]) > 0.0);
    assert_ne!(
        r["machines"][0]["prefill_tps"],
        r["machines"][0]["decode_tps"]
    );
    // Filters: no CUDA run, so nothing to rank.
    let none = json(&run(
        as_machine(&s, "reader"),
        &["machines", "--team", &url, "--backend", "CUDA", "--json"],
    ));
    assert_eq!(none["machines"].as_array().unwrap().len(), 0);
    assert!(none["level"].is_null());
    // The fast machine's card against the team's median.
    let uid = psql(&url, "SELECT r.uid FROM team_runs r JOIN team_models m ON m.sha256 = r.model_sha256 WHERE r.machine = 'fast' AND m.quant = 'Q8_0' LIMIT 1");
    let card = s.path("card.svg");
    let o = run(
        as_machine(&s, "reader"),
        &[
            "--db",
            &url,
            "export",
            &uid[..12],
            "--format",
            "svg",
            "--vs-team",
            "-o",
            card.to_str().unwrap(),
        ],
    );
    assert_code(&o, 0);
    let svg = std::fs::read_to_string(&card).unwrap();
    assert!(
        svg.contains("VS TEAM (3 MACHINES)"),
        "no team block in the card"
    );
    assert!(
        svg.contains("+100%"),
        "the fast machine decodes at twice the median"
    );
    let doc = json(&run(
        as_machine(&s, "reader"),
        &[
            "--db",
            &url,
            "export",
            &uid[..12],
            "--format",
            "json",
            "--vs-team",
        ],
    ));
    assert_eq!(doc["team"]["machines"], 3);
    // A run of a file the team never ran: a card asked to compare with the
    // team is refused with what to do, not drawn without the team block.
    bench_as(&s, "reader");
    let lone = s.path("lone.svg");
    let o = run(
        as_machine(&s, "reader"),
        &[
            "export",
            "1",
            "--format",
            "svg",
            "--vs-team",
            &url,
            "-o",
            lone.to_str().unwrap(),
        ],
    );
    assert_code(&o, 2);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no run of SmolLM2-135M-Instruct.Q4_1.gguf at Q4_1")
            && err.contains("pp16, tg4")
            && err.contains("dyno machines"),
        "{err}"
    );
    assert!(!lone.exists(), "nothing written");
}

/// The app's Cancel stops a sync between batches: the batch the server
/// committed stays, nothing after it is sent, and the next sync sends the
/// rest and nothing twice.
#[test]
fn a_cancelled_sync_keeps_its_committed_batch_and_the_next_sends_the_rest() {
    use dyno::app::team::{SyncProgress, SyncRequest};
    let url = fresh_db("cancel");
    let s = Scratch::new();
    seed(&s, "canceller", 450, 1.0);
    let cancel = dyno::worker::client::Cancel::default();
    let button = cancel.clone();
    // Pressed as soon as the first batch is reported committed.
    let progress = move |p: SyncProgress| {
        if matches!(p, SyncProgress::Pushing { done, .. } if done > 0) {
            button.cancel();
        }
    };
    let req = SyncRequest {
        url: url.clone(),
        with_telemetry: false,
        push_only: false,
    };
    let (rt, store) = store(&s.db());
    let rep = rt.block_on(dyno::app::team::sync(&store, &req, &progress, &cancel));
    rt.block_on(store.close());
    let rep = rep.expect("a cancelled sync returns what it did");
    assert_eq!((rep.pushed, rep.pulled), (200, 0), "one batch, no pull");
    assert_eq!(psql(&url, "SELECT count(*) FROM team_runs"), "200");
    let j = synced(&s, "canceller", &url, &[]);
    assert_eq!(
        (&j["pushed"], &j["already_there"]),
        (&json!(250), &json!(0)),
        "{j}"
    );
    assert_eq!(j["team_runs"], 450);
}

/// Four machines with 1,000 runs each sync at the same moment into a new
/// store: exactly 4,000 runs arrive, every sample intact.
#[test]
fn four_machines_sync_a_thousand_runs_each_at_once() {
    let url = fresh_db("four");
    let machines: Vec<(String, Scratch)> =
        (1..=4).map(|i| (format!("m{i}"), Scratch::new())).collect();
    for (m, s) in &machines {
        seed(s, m, 1000, 1.0);
    }
    let children: Vec<_> = machines
        .iter()
        .map(|(m, s)| {
            as_machine(s, m)
                .args(["sync", &url, "--json"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut pushed = 0;
    for c in children {
        let o = c.wait_with_output().unwrap();
        assert_code(&o, 0);
        pushed += json(&o)["pushed"].as_u64().unwrap();
    }
    assert_eq!(pushed, 4000);
    assert_eq!(psql(&url, "SELECT COUNT(*) FROM team_runs"), "4000");
    assert_eq!(
        psql(&url, "SELECT COUNT(DISTINCT uid) FROM team_runs"),
        "4000"
    );
    assert_eq!(psql(&url, "SELECT COUNT(*) FROM team_results"), "12000");
    assert_eq!(psql(&url, "SELECT COUNT(*) FROM team_machines"), "4");
    // Every sample intact: a fifth machine pulls all 4,000 and each run's
    // samples equal those of the database that measured it.
    let reader = Scratch::new();
    let r = synced(&reader, "reader", &url, &[]);
    assert_eq!(r["pulled"], 4000);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let samples = |db: &std::path::Path| -> std::collections::BTreeMap<(String, i64), String> {
        rt.block_on(async {
            let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}", db.display())).await.unwrap();
            let rows: Vec<(String, i64, String)> = sqlx::query_as(
                "SELECT r.import_key, x.id - (SELECT MIN(y.id) FROM results y WHERE y.run_id = r.id), x.samples_json
                 FROM runs r JOIN results x ON x.run_id = r.id",
            )
            .fetch_all(&pool)
            .await
            .unwrap();
            pool.close().await;
            rows.into_iter().map(|(k, i, s)| ((k, i), s)).collect()
        })
    };
    let all = samples(&reader.db());
    assert_eq!(all.len(), 12000);
    for (_, s) in &machines {
        for (k, v) in samples(&s.db()) {
            assert_eq!(all.get(&k), Some(&v), "run {} test {} differs", k.0, k.1);
        }
    }
}

/// A sync killed with kill -9 mid-push, four times, then run to the end:
/// every run once, none without its results, the local database whole.
#[test]
fn a_sync_killed_with_kill_9_resumes_where_it_stopped() {
    let url = fresh_db("kill");
    let s = Scratch::new();
    seed(&s, "k", 1500, 1.0);
    // The runs in the store; 0 until the first sync has made its tables.
    let count = || -> i64 {
        let o = Command::new("psql")
            .arg(&url)
            .args(["-qAtc", "SELECT COUNT(*) FROM team_runs"])
            .output()
            .expect("psql runs");
        let err = String::from_utf8_lossy(&o.stderr);
        if !o.status.success() && err.contains("does not exist") {
            return 0;
        }
        assert!(o.status.success(), "psql failed: {err}");
        String::from_utf8_lossy(&o.stdout).trim().parse().unwrap()
    };
    // Different moments each run of the test; printed for a rerun.
    let seed_ms = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        % 97) as u64;
    // Kills that left the push part-way: the store holds more runs than
    // before that sync and fewer than all. A kill at a fixed moment could
    // land before the first batch or after the last commit (CI saw a sync
    // that had pushed all 1500 and was still closing its connection), so
    // each sync is killed a moment after the store shows its first batch,
    // with later batches still to go.
    let mut mid_push = 0;
    for i in 0..4u64 {
        let before = count();
        let mut child = as_machine(&s, "k")
            .args(["sync", &url, "--push-only"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let give_up = std::time::Instant::now() + Duration::from_secs(30);
        while child.try_wait().unwrap().is_none() && std::time::Instant::now() < give_up {
            if count() > before {
                std::thread::sleep(Duration::from_millis((seed_ms * 7 + i * 31) % 40));
                break;
            }
        }
        // SIGKILL: no chance to clean up.
        child.kill().unwrap();
        child.wait().unwrap();
        let after = count();
        if before < after && after < 1500 {
            mid_push += 1;
        }
    }
    let partial = count();
    eprintln!(
        "{mid_push} of 4 syncs killed part-way (moments from {seed_ms}), {partial} runs pushed"
    );
    assert!(
        mid_push > 0,
        "no sync was killed part-way: {partial} runs pushed"
    );
    let r = synced(&s, "k", &url, &["--push-only"]);
    assert_eq!(r["pushed"].as_i64().unwrap() + partial, 1500, "{r}");
    assert_eq!(psql(&url, "SELECT COUNT(*) FROM team_runs"), "1500");
    assert_eq!(psql(&url, "SELECT COUNT(*) FROM team_results"), "4500");
    assert_eq!(
        psql(&url, "SELECT COUNT(*) FROM team_runs r WHERE (SELECT COUNT(*) FROM team_results x WHERE x.run_uid = r.uid) <> 3"),
        "0"
    );
    let (rt, store) = store(&s.db());
    assert_eq!(rt.block_on(store.integrity_check()).unwrap(), "ok");
}

/// A TCP relay in front of the server that can be cut, as a server going
/// down or a network dropping mid-sync.
struct Relay {
    port: u16,
    cut: Arc<AtomicBool>,
    /// Set: nothing is forwarded either way, and nothing is closed, as a
    /// dropped VPN or a black-holed route behaves.
    stall: Arc<AtomicBool>,
}

impl Relay {
    fn to(target_port: u16) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let cut = Arc::new(AtomicBool::new(false));
        let stall = Arc::new(AtomicBool::new(false));
        let c = cut.clone();
        let st = stall.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if c.load(Ordering::SeqCst) {
                    drop(client);
                    continue;
                }
                let Ok(server) = TcpStream::connect(("127.0.0.1", target_port)) else {
                    continue;
                };
                for (mut from, mut to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ] {
                    let c = c.clone();
                    let st = st.clone();
                    std::thread::spawn(move || {
                        let mut buf = [0u8; 16384];
                        from.set_read_timeout(Some(Duration::from_millis(50))).ok();
                        loop {
                            if c.load(Ordering::SeqCst) {
                                let _ = from.shutdown(std::net::Shutdown::Both);
                                let _ = to.shutdown(std::net::Shutdown::Both);
                                return;
                            }
                            if st.load(Ordering::SeqCst) {
                                std::thread::sleep(Duration::from_millis(50));
                                continue;
                            }
                            match from.read(&mut buf) {
                                Ok(0) => return,
                                Ok(n) => {
                                    if to.write_all(&buf[..n]).is_err() {
                                        return;
                                    }
                                }
                                Err(e)
                                    if matches!(
                                        e.kind(),
                                        std::io::ErrorKind::WouldBlock
                                            | std::io::ErrorKind::TimedOut
                                    ) => {}
                                Err(_) => return,
                            }
                        }
                    });
                }
            }
        });
        Relay { port, cut, stall }
    }
}

/// The team server's port, and a URL to it through a relay.
fn through_relay(url: &str) -> (Relay, String) {
    let port: u16 = url
        .rsplit(':')
        .next()
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let relay = Relay::to(port);
    let via = url.replace(&format!(":{port}/"), &format!(":{}/", relay.port));
    (relay, via)
}

/// A server that stops answering without closing the connection sends no
/// error; the sync's own deadline ends the wait with what to do, keeps
/// what was committed, and the next sync sends the rest.
#[test]
fn a_team_server_that_goes_silent_ends_the_sync_at_its_deadline() {
    let url = fresh_db("silent");
    let (relay, via) = through_relay(&url);
    let s = Scratch::new();
    seed(&s, "s", 3000, 1.0);
    let child = as_machine(&s, "s")
        .env("DYNO_TEAM_TIMEOUT", "3")
        .args(["sync", &via, "--push-only"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    // The tables appear with the sync's first connection; until then the
    // query fails and reads as nothing pushed.
    let pushed = || {
        Command::new("psql")
            .arg(&url)
            .args(["-qAtc", "SELECT COUNT(*) FROM team_runs"])
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok()?.trim().parse::<i64>().ok())
            .unwrap_or(0)
    };
    while pushed() == 0 {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the sync never pushed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    relay.stall.store(true, Ordering::SeqCst);
    let stalled = Instant::now();
    let mut child = child;
    // Never wait for ever here: a sync that hangs is what this tests.
    while child.try_wait().unwrap().is_none() && stalled.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let waited = stalled.elapsed();
    let hung = child.try_wait().unwrap().is_none();
    if hung {
        child.kill().unwrap();
    }
    let o = child.wait_with_output().unwrap();
    relay.stall.store(false, Ordering::SeqCst);
    assert!(
        !hung,
        "the sync still waited after {waited:?}: {}",
        stderr(&o)
    );
    assert!(
        !o.status.success(),
        "the sync ended before the stall: {}",
        stderr(&o)
    );
    assert!(waited < Duration::from_secs(30), "it waited {waited:?}");
    assert!(
        stderr(&o).contains("answered nothing for 3 s"),
        "{}",
        stderr(&o)
    );
    let kept: i64 = psql(&url, "SELECT COUNT(*) FROM team_runs")
        .parse()
        .unwrap();
    assert!(kept < 3000, "{kept}");
    let r = synced(&s, "s", &url, &["--push-only"]);
    assert!(r["pushed"].as_i64().unwrap() > 0, "{r}");
    assert_eq!(psql(&url, "SELECT COUNT(*) FROM team_runs"), "3000");
    assert_eq!(psql(&url, "SELECT COUNT(*) FROM team_results"), "9000");
}

#[test]
fn the_server_going_away_mid_sync_loses_nothing_and_the_next_sync_resumes() {
    let url = fresh_db("cut");
    let (relay, via) = through_relay(&url);
    let s = Scratch::new();
    seed(&s, "c", 3000, 1.0);
    let child = as_machine(&s, "c")
        .args(["sync", &via, "--push-only"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Cut once some runs are in.
    let t0 = Instant::now();
    loop {
        // The tables appear with the sync's first connection.
        let n: i64 = Command::new("psql")
            .arg(&url)
            .args(["-qAtc", "SELECT COUNT(*) FROM team_runs"])
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok()?.trim().parse().ok())
            .unwrap_or(0);
        if n > 0 || t0.elapsed() > Duration::from_secs(60) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    relay.cut.store(true, Ordering::SeqCst);
    let o = child.wait_with_output().unwrap();
    let before: i64 = psql(&url, "SELECT COUNT(*) FROM team_runs")
        .parse()
        .unwrap();
    eprintln!(
        "the relay was cut with {before} of 3000 runs in the store: {}",
        stderr(&o)
    );
    if o.status.success() {
        // It finished before the cut landed; nothing to resume.
        assert_eq!(before, 3000);
    } else {
        assert_code(&o, 1);
        let err = stderr(&o);
        assert!(
            err.contains("team store postgres://dyno:***@127.0.0.1"),
            "{err}"
        );
        assert!(
            !err.contains(&password(&url)),
            "the password was printed: {err}"
        );
    }
    // The local database is whole, and nothing there changed.
    let local = json(&run(
        as_machine(&s, "c"),
        &["runs", "--json", "--limit", "5000"],
    ));
    assert_eq!(local["runs"].as_array().unwrap().len(), 3000);
    let r = synced(&s, "c", &url, &["--push-only"]);
    assert_eq!(r["pushed"].as_i64().unwrap() + before, 3000, "{r}");
    assert_eq!(psql(&url, "SELECT COUNT(*) FROM team_runs"), "3000");
    assert_eq!(psql(&url, "SELECT COUNT(*) FROM team_results"), "9000");
}

#[test]
fn bad_credentials_a_newer_schema_and_plain_tcp_are_refused_clearly() {
    let url = fresh_db("refuse");
    let s = Scratch::new();
    seed(&s, "r", 2, 1.0);
    // A wrong password: refused, said so, and never printed.
    let wrong = url.replace(&password(&url), "hunter2-wrong");
    let o = sync(&s, "r", &wrong, &[]);
    assert_code(&o, 1);
    let err = stderr(&o);
    assert!(err.contains("password authentication failed"), "{err}");
    assert!(err.contains("PGPASSWORD"), "{err}");
    assert!(
        !err.contains("hunter2-wrong") && !err.contains(&password(&url)),
        "{err}"
    );
    // The password from PGPASSWORD, as libpq takes it; the URL has none.
    let bare = url.replace(&format!(":{}@", password(&url)), "@");
    let o = as_machine(&s, "r")
        .args(["sync", &bare, "--json"])
        .env("PGPASSWORD", password(&url))
        .output()
        .unwrap();
    assert_code(&o, 0);
    assert_eq!(json(&o)["pushed"], 2);
    // The server asks for TLS: a client that refuses it is turned away.
    let o = sync(&s, "r", &format!("{url}?sslmode=disable"), &[]);
    assert_code(&o, 1);
    assert!(stderr(&o).contains("no encryption"), "{}", stderr(&o));
    // A store written by a newer Dyno: refused, with both versions named.
    psql(
        &url,
        "UPDATE dyno_team SET value = '7' WHERE key = 'schema_version'",
    );
    for args in [
        vec!["sync", url.as_str()],
        vec!["--db", url.as_str(), "runs"],
    ] {
        let o = run(as_machine(&s, "r"), &args);
        assert_code(&o, 1);
        let err = stderr(&o);
        assert!(
            err.contains("version 7") && err.contains("version 1"),
            "{err}"
        );
        assert!(err.contains("Update Dyno"), "{err}");
    }
    // Measuring never writes to a team store.
    let o = as_machine(&s, "r")
        .args(["--db", &url, "bench"])
        .arg(model(SMOL))
        .output()
        .unwrap();
    assert_code(&o, 2);
    assert!(stderr(&o).contains("dyno sync"), "{}", stderr(&o));
    // A saved team URL keeps no password.
    let o = run(as_machine(&s, "r"), &["settings", "set", "team.url", &url]);
    assert_code(&o, 0);
    assert!(!stdout(&o).contains(&password(&url)));
    let o = run(as_machine(&s, "r"), &["settings"]);
    assert!(stdout(&o).contains("team.url") && !stdout(&o).contains(&password(&url)));
}

#[test]
fn telemetry_series_go_only_when_asked() {
    let url = fresh_db("telemetry");
    let s = Scratch::new();
    bench_as(&s, "t");
    synced(&s, "t", &url, &[]);
    assert_eq!(psql(&url, "SELECT COUNT(*) FROM team_telemetry"), "0");
    let uid = psql(&url, "SELECT uid FROM team_runs");
    let o = run(
        as_machine(&s, "t"),
        &["--db", &url, "show", &uid[..8], "--timeline"],
    );
    assert_code(&o, 2);
    assert!(stderr(&o).contains("--with-telemetry"), "{}", stderr(&o));
    // A later sync with telemetry sends the series of runs already pushed.
    let r = synced(&s, "t", &url, &["--with-telemetry"]);
    assert_eq!(r["telemetry_pushed"], 1, "{r}");
    let o = run(
        as_machine(&s, "t"),
        &["--db", &url, "show", &uid[..8], "--timeline"],
    );
    assert_code(&o, 0);
    let local = json(&run(as_machine(&s, "t"), &["show", "1", "--timeline"]));
    let (team, here) = (json(&o)["points"].clone(), local["points"].clone());
    let (team, here) = (team.as_array().unwrap(), here.as_array().unwrap());
    assert!(!here.is_empty());
    assert_eq!(team.len(), here.len());
    for (a, b) in team.iter().zip(here) {
        assert_eq!(a["phase"], b["phase"]);
        assert!((f(&a["t_s"]) - f(&b["t_s"])).abs() < 1e-9);
        assert_eq!(a["rss_bytes"], b["rss_bytes"]);
    }
}

/// A team URL with nothing listening at its address fails at once (not
/// after the pool's 20 s of retries) and says so, with the address; this
/// needs no PostgreSQL server.
#[test]
fn a_refused_team_url_fails_at_once_and_names_the_address() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let s = Scratch::new();
    let url = format!("postgres://dyno@127.0.0.1:{port}/team");
    let t0 = Instant::now();
    let o = s.dyno().args(["sync", &url]).output().unwrap();
    let took = t0.elapsed();
    assert_code(&o, 1);
    let e = stderr(&o);
    assert!(
        e.contains(&format!("nothing is listening on 127.0.0.1:{port}")),
        "{e}"
    );
    assert!(took < Duration::from_secs(5), "took {took:?}: {e}");
}
