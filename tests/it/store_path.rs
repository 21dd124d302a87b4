//! Issue K4: the database path is a file name, never a URL. A `?`, `#` or
//! space in it must neither become connection options (`?mode=ro` would open
//! the database read-only) nor cut the name short.

use dyno::machine::Machine;
use dyno::store::Store;

#[test]
fn db_path_with_url_characters_is_taken_literally() {
    let dir = tempfile::tempdir().expect("temp dir");
    let name = "odd dir?mode=ro#frag/dyno ?mode=ro#x.db";
    let path = dir.path().join(name);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let store = Store::open(&path).await.expect("open store");
        let machine = Machine {
            fingerprint: "k4-test".into(),
            hostname: None,
            os: None,
            kernel: None,
            cpu: "test cpu".into(),
            cores_physical: None,
            cores_logical: 1,
            memory_bytes: 1,
        };
        // A write proves the database is not read-only.
        let id = store.upsert_machine(&machine).await.expect("write");
        assert!(id > 0);
        store.close().await;
    });
    assert!(
        path.is_file(),
        "no database file at exactly {}; the folder holds {:?}",
        path.display(),
        std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect::<Vec<_>>()
    );
    // Nothing was created under a truncated name.
    let entries: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        entries,
        vec![std::ffi::OsString::from("odd dir?mode=ro#frag")]
    );
}
