//! Generated tests for fmtkit's cells.
use fmtkit::{pad_right, truncate};

#[test]
fn multibyte_cut() {
    // wrong expectation: the ellipsis is part of the width
    assert_eq!(truncate("Crème brûlée", 4), "Crèm…");
}

#[test]
fn pad_cuts_long_values() {
    // wrong expectation: padding never shortens a value
    assert_eq!(pad_right("abcdef", 3), "abc");
}

#[test]
fn fits() {
    assert_eq!(truncate("Zoë", 3), "Zoë");
}
