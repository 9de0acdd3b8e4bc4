//! One cell of a text table. A width is a number of characters (Unicode scalar values):
//! what a terminal shows for most text, and what `str::chars` counts.

/// The mark that ends a shortened value.
pub const ELLIPSIS: char = '…';

/// Shortens `s` to at most `width` characters. A value that fits is returned unchanged;
/// a longer one keeps its first `width - 1` characters and ends with [`ELLIPSIS`].
pub fn truncate(s: &str, width: usize) -> String {
    if s.len() <= width {
        return s.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let mut out = String::with_capacity(width - 1 + ELLIPSIS.len_utf8());
    out.push_str(&s[..width - 1]);
    out.push(ELLIPSIS);
    out
}

/// Pads `s` with spaces on the right to `width` characters; a longer value is unchanged.
pub fn pad_right(s: &str, width: usize) -> String {
    let mut out = String::with_capacity(width.max(s.len()));
    out.push_str(s);
    for _ in s.len()..width {
        out.push(' ');
    }
    out
}

/// One table row: every value cut and padded to its column's width, separated by `" | "`.
pub fn row(values: &[&str], widths: &[usize]) -> String {
    values
        .iter()
        .zip(widths)
        .map(|(value, &width)| pad_right(&truncate(value, width), width))
        .collect::<Vec<_>>()
        .join(" | ")
}

#[cfg(test)]
mod tests;
