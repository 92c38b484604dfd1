//! `panel verify` on malformed input: exit 2 with the problem named, for bytes that are not
//! UTF-8, text that is not JSON and JSON that is not a record; exit 1 is kept for
//! well-formed records that fail verification.

use panel_tests::panel;

fn verify(bytes: &[u8]) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("record.json");
    std::fs::write(&path, bytes).expect("write record");
    let out = panel()
        .arg("verify")
        .arg(&path)
        .output()
        .expect("run panel");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn malformed_records_exit_2_naming_the_problem() {
    let (code, err) = verify(b"{\"format\": \"\xff\xfe\"}");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("not valid UTF-8"), "{err}");

    let (code, err) = verify(b"{not json");
    assert_eq!(code, Some(2), "{err}");

    let (code, err) = verify(b"{\"entries\": 7}");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("entries"), "the JSON path is named: {err}");
}
