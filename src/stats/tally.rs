//! Adding one thread's counts into another's (and one segment's into a merged test's), field by
//! field: a count type lists its fields once, in [`counts!`], and its addition follows.

use std::collections::BTreeMap;

/// Counts that add up: a thread's into the run's, a segment's into the merged test's.
pub trait Tally {
    /// Adds `other` into `self`; sums saturate, since a result read back may hold any value.
    fn tally(&mut self, other: &Self);
}

impl Tally for u64 {
    fn tally(&mut self, other: &u64) {
        *self = self.saturating_add(*other);
    }
}

impl<const N: usize> Tally for [u64; N] {
    fn tally(&mut self, other: &[u64; N]) {
        for (a, b) in self.iter_mut().zip(other) {
            a.tally(b);
        }
    }
}

impl<K: Ord + Copy> Tally for BTreeMap<K, u64> {
    fn tally(&mut self, other: &BTreeMap<K, u64>) {
        for (k, n) in other {
            self.entry(*k).or_default().tally(n);
        }
    }
}

/// Adds `other`'s times into `mine`, each side's percentiles `written` or not: threads' times
/// add up, but a result read back (merge) keeps only its percentiles, which do not, so a sum
/// with one has no times.
pub fn tally_times(
    mine: Option<hdrhistogram::Histogram<u64>>,
    mine_written: bool,
    other: Option<&hdrhistogram::Histogram<u64>>,
    other_written: bool,
) -> Option<hdrhistogram::Histogram<u64>> {
    match (mine, other) {
        (Some(mut a), Some(b)) => a.add(b).is_ok().then_some(a),
        (None, Some(b)) if !mine_written => Some(b.clone()),
        (a, None) if !other_written => a,
        _ => None,
    }
}

/// Defines a struct of counts and its [`Tally`], which tallies every field: adding a count is
/// adding its field.
macro_rules! counts {
    ($(#[$meta:meta])* pub struct $name:ident { $($(#[$fmeta:meta])* pub $field:ident: $ty:ty,)+ }) => {
        $(#[$meta])*
        pub struct $name {
            $($(#[$fmeta])* pub $field: $ty,)+
        }

        impl $crate::stats::Tally for $name {
            fn tally(&mut self, other: &Self) {
                $($crate::stats::Tally::tally(&mut self.$field, &other.$field);)+
            }
        }
    };
}

/// The macro by path, for counts outside `stats` (a unit's own).
pub(crate) use counts;
