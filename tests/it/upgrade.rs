//! Issue U, item 3: upgrades keep data. A database written by an earlier
//! Dyno opens in this one, its migrations run, and every run reads as it did;
//! a database written by a newer Dyno is refused with what to do, and not
//! changed by a byte.

use crate::common::*;

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
