//! Issue U, item 3: upgrades keep data. A database written by an earlier
//! Dyno opens in this one, its migrations run, and every run reads as it did;
//! a database written by a newer Dyno is refused with what to do, and not
//! changed by a byte.

use crate::common::*;

/// A database written by Dyno at 0fddbc7, the commit before the last three
/// migrations (backend modules, owner locks, synthetic models): two
/// benchmarks of the test models and the four runs of
/// tests/fixtures/sweep-export.json imported, by that commit's own `dyno`.
const OLD_DB: &[u8] = include_bytes!("../fixtures/upgrade/dyno-0fddbc7.db");
/// That Dyno's `show N --json` of each of those runs, keyed by run id.
const OLD_SHOW: &str = include_str!("../fixtures/upgrade/show-0fddbc7.json");

/// Where `old` and `new` differ, for every value `old` holds: fields a newer
/// Dyno adds are allowed, a value that changed or vanished is not.
fn changed(old: &serde_json::Value, new: &serde_json::Value, path: &str) -> Vec<String> {
    use serde_json::Value;
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => o
            .iter()
            .flat_map(|(k, v)| match n.get(k) {
                Some(w) => changed(v, w, &format!("{path}.{k}")),
                None => vec![format!("{path}.{k} is gone")],
            })
            .collect(),
        (Value::Array(o), Value::Array(n)) if o.len() == n.len() => o
            .iter()
            .zip(n)
            .enumerate()
            .flat_map(|(i, (v, w))| changed(v, w, &format!("{path}[{i}]")))
            .collect(),
        _ if old == new => Vec::new(),
        _ => vec![format!("{path}: {old} became {new}")],
    }
}

#[test]
fn a_database_from_an_earlier_dyno_opens_with_every_run_as_it_was() {
    let s = Scratch::new();
    std::fs::write(s.db(), OLD_DB).unwrap();
    let old: serde_json::Value = serde_json::from_str(OLD_SHOW).unwrap();
    let o = s.run(&["runs", "--json"]);
    assert_code(&o, 0);
    let listed: Vec<i64> = json(&o)["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_i64().unwrap())
        .collect();
    let mut want: Vec<i64> = old
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.parse().unwrap())
        .collect();
    want.sort_unstable();
    let mut got = listed.clone();
    got.sort_unstable();
    assert_eq!(got, want, "every run of the old database is listed");

    for (id, before) in old.as_object().unwrap() {
        let o = s.run(&["show", id, "--json"]);
        assert_code(&o, 0);
        let now = json(&o);
        let diff = changed(&before["runs"][0], &now["runs"][0], &format!("run {id}"));
        assert!(diff.is_empty(), "{}", diff.join("\n"));
        let diff = changed(&before["machine"], &now["machine"], "machine");
        assert!(diff.is_empty(), "{}", diff.join("\n"));
        // Exports read the same stored figures.
        let o = s.run(&["export", id, "--format", "md"]);
        assert_code(&o, 0);
        let md = stdout(&o);
        let mean = before["runs"][0]["results"][0]["mean_tokens_per_s"]
            .as_f64()
            .unwrap();
        assert!(
            md.contains(&format!("{mean:.1}")) || md.contains(&format!("{mean:.2}")),
            "{md}"
        );
    }
    let (rt, store) = store(&s.db());
    assert_eq!(rt.block_on(store.integrity_check()).unwrap(), "ok");
}

/// A migration version no Dyno has yet: what a database written by a newer
/// release carries.
const FUTURE_MIGRATION: i64 = 20991231000000;

#[test]
fn a_database_from_a_newer_dyno_is_refused_and_left_unchanged() {
    let s = Scratch::new();
    assert_code(&s.run(&["runs"]), 0);
    sql(
        &s.db(),
        &format!(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
             VALUES ({FUTURE_MIGRATION}, 'from the future', 1, x'00', 0)"
        ),
    );
    // Everything in the main file, so its bytes are the whole database.
    sql(&s.db(), "PRAGMA wal_checkpoint(TRUNCATE)");
    let before = std::fs::read(s.db()).unwrap();

    for args in [
        &["runs"][..],
        &[
            "bench",
            model(SMOL).to_str().unwrap(),
            "-p",
            "16",
            "-n",
            "4",
        ],
    ] {
        let o = s.run(args);
        assert_code(&o, 2);
        let e = stderr(&o);
        assert!(
            e.contains("written by a newer Dyno")
                && e.contains(&FUTURE_MIGRATION.to_string())
                && e.contains("left unchanged")
                && e.contains("update Dyno"),
            "{e}"
        );
        assert_eq!(e.trim_end().lines().count(), 1, "one line: {e}");
    }
    assert!(
        std::fs::read(s.db()).unwrap() == before,
        "the newer database's file changed"
    );
    let wal = s.db().with_extension("db-wal");
    assert!(
        !wal.exists() || std::fs::metadata(&wal).unwrap().len() == 0,
        "something was written to the newer database's log"
    );
}
