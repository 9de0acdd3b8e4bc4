//! Fixed-width cells for plain-text tables: shorten a value to a column's width, pad it to
//! fill the column, and lay out a row of cells.

pub mod cell;

pub use cell::{pad_right, row, truncate, ELLIPSIS};
