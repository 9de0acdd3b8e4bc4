use super::*;

#[test]
fn short_ascii_value_is_unchanged() {
    assert_eq!(truncate("id", 5), "id");
    assert_eq!(pad_right("id", 5), "id   ");
}

#[test]
fn long_ascii_value_is_cut_with_an_ellipsis() {
    assert_eq!(truncate("description", 6), "descr…");
}

#[test]
fn row_joins_cells() {
    assert_eq!(row(&["1", "apples"], &[3, 5]), "1   | appl…");
}
