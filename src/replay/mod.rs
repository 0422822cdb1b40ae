//! `strain replay`: recorded traffic sent again at its recorded pace. [`read`] turns each
//! format into [`record::Record`]s.

pub mod read;
pub mod record;
