//! Generated tests for fmtkit's cells.
use fmtkit::{pad_right, truncate};

#[test]
fn multibyte_cut() {
    assert_eq!(truncate("Crème brûlée", 4), "Crè…");
    assert_eq!(truncate("Zoë", 3), "Zoë");
}

#[test]
fn ascii_cut() {
    assert_eq!(truncate("description", 6), "descr…");
    assert_eq!(truncate("total", 5), "total");
    assert_eq!(truncate("abc", 0), "");
}

#[test]
fn pad_multibyte() {
    assert_eq!(pad_right("Zoë", 5), "Zoë  ");
    assert_eq!(pad_right("abcdef", 3), "abcdef");
}

// The reference sizes each result once: the kept bytes plus the ellipsis' three, or the
// value's bytes plus one per space.
#[test]
fn results_are_allocated_exactly() {
    assert_eq!(truncate("Crème brûlée", 4).capacity(), 7);
    assert_eq!(pad_right("Zoë", 5).capacity(), 6);
}
