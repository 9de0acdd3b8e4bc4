//! Runner-log fixture: every outcome libtest reports.

pub fn add(a: i32, b: i32) -> i32 {
    a + b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes() {
        assert_eq!(add(1, 1), 2);
    }

    #[test]
    fn fails() {
        assert_eq!(add(1, 1), 3, "one and one");
    }

    #[test]
    #[ignore = "not today"]
    fn ignored() {}

    #[test]
    #[should_panic(expected = "boom")]
    fn panics_as_expected() {
        panic!("boom");
    }

    #[test]
    fn prints_a_fake_result_line() {
        println!("test fake::line ... ok");
    }

    mod nested {
        #[test]
        fn ünicode_name() {}
    }
}

/// Doubles a number: a doc test, whose name holds spaces.
///
/// ```
/// assert_eq!(sample::double(2), 4);
/// ```
pub fn double(a: i32) -> i32 {
    a * 2
}
