//! Generated test for fmtkit's cells: the example from the issue.
use fmtkit::truncate;

#[test]
fn issue_example() {
    assert_eq!(truncate("Crème brûlée", 4), "Crè…");
    assert_eq!(truncate("日本語のテキスト", 3), "日本…");
}
