//! Generated tests for fmtkit's cells: widths count characters, not bytes.
use fmtkit::{pad_right, row, truncate};

mod truncate {
    use super::*;

    #[test]
    fn cuts_between_characters() {
        assert_eq!(truncate("Crème brûlée", 4), "Crè…");
        assert_eq!(truncate("日本語のテキスト", 3), "日本…");
        assert_eq!(truncate("🦀🦀🦀🦀", 3), "🦀🦀…");
    }

    #[test]
    fn never_panics_and_never_exceeds_the_width() {
        let values = ["", "a", "ab", "Zoë", "naïve café", "日本語", "e\u{301}te\u{301}", "🦀x🦀y🦀"];
        for value in values {
            for width in 0..12 {
                let cut = truncate(value, width);
                let chars = value.chars().count();
                assert!(cut.chars().count() <= width, "truncate({value:?}, {width}) = {cut:?}");
                if chars <= width {
                    assert_eq!(cut, value, "truncate({value:?}, {width}) changed a value that fits");
                } else if width > 0 {
                    assert_eq!(cut.chars().count(), width, "truncate({value:?}, {width}) = {cut:?}");
                    assert!(cut.ends_with('…'));
                    let kept: String = value.chars().take(width - 1).collect();
                    assert!(cut.starts_with(&kept));
                }
            }
        }
    }

    #[test]
    fn a_value_that_fits_is_unchanged() {
        assert_eq!(truncate("Zoë", 3), "Zoë");
        assert_eq!(truncate("total", 5), "total");
        assert_eq!(truncate("naïve café", 10), "naïve café");
    }

    #[test]
    fn ascii_values_as_before() {
        assert_eq!(truncate("description", 6), "descr…");
        assert_eq!(truncate("ab", 1), "…");
        assert_eq!(truncate("id", 5), "id");
    }

    #[test]
    fn zero_width_is_empty() {
        assert_eq!(truncate("abc", 0), "");
        assert_eq!(truncate("é", 0), "");
        assert_eq!(truncate("", 0), "");
    }
}

mod pad {
    use super::*;

    #[test]
    fn counts_characters() {
        assert_eq!(pad_right("Zoë", 5), "Zoë  ");
        assert_eq!(pad_right("日本", 4), "日本  ");
        assert_eq!(pad_right("", 2), "  ");
    }

    #[test]
    fn never_shortens() {
        assert_eq!(pad_right("abcdef", 3), "abcdef");
        assert_eq!(pad_right("Łódź", 4), "Łódź");
    }
}

#[test]
fn rows_line_up_with_accented_names() {
    let widths = [5, 4];
    let lines = [row(&["Name", "City"], &widths), row(&["Zoë", "Łódź"], &widths), row(&["Renée", "Köln am Rhein"], &widths)];
    assert_eq!(lines, ["Name  | City", "Zoë   | Łódź", "Renée | Köl…"]);
    for line in &lines {
        assert_eq!(line.chars().count(), 12);
    }
}
