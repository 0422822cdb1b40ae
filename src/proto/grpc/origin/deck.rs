//! Which calls fail on purpose (`--status CODE:SHARE`): each thread deals its calls from a
//! shuffled deck in which every failing code has exactly its share of the cards and the rest
//! are OK, so over a whole deck the count of each code is exact, not merely expected, and a
//! run's counts are near-exact (off by less than a deck's cards of that code per thread) while
//! which calls fail is still random, seeded by `--seed`. Drawing is sampling without
//! replacement from the counts left, so no deck is kept card by card.

use crate::grpc::status::Code;
use crate::rng::Rng;

/// Largest deck: shares finer than a millionth are rounded to it.
const MAX_DECK: u32 = 1_000_000;

/// One thread's deck.
#[derive(Debug, Clone, Default)]
pub struct Deck {
    /// Each failing code, with its cards per deck and the cards of it left in this deck.
    codes: Vec<(Code, u32, u32)>,
    /// Cards per deck: the smallest power of ten that makes every share a whole number of
    /// cards (at most [`MAX_DECK`]).
    size: u32,
    /// Cards left in this deck, failing or not.
    left: u32,
}

impl Deck {
    /// A deck for `shares` (codes and their shares of calls, summing to at most 1); an empty
    /// one, which never draws, for none.
    pub fn new(shares: &[(Code, f64)]) -> Deck {
        if shares.is_empty() {
            return Deck::default();
        }
        let whole =
            |size: u32| shares.iter().all(|(_, s)| (s * f64::from(size) - (s * f64::from(size)).round()).abs() < 1e-6);
        let size = (1..=6).map(|k| 10u32.pow(k)).find(|&n| whole(n)).unwrap_or(MAX_DECK);
        // Shares sum to at most 1, so the rounded cards fit the deck (at worst a card short).
        let codes = shares.iter().map(|&(code, s)| (code, (s * f64::from(size)).round() as u32, 0)).collect();
        Deck { codes, size, left: 0 }
    }

    /// The status the next call ends with on purpose, if any; draws nothing from `rng` when
    /// there are no shares, so the other random choices stay where they were.
    pub fn draw(&mut self, rng: &mut Rng) -> Option<Code> {
        if self.codes.is_empty() {
            return None;
        }
        if self.left == 0 {
            self.left = self.size;
            for c in &mut self.codes {
                c.2 = c.1;
            }
        }
        let mut r = rng.below(u64::from(self.left));
        self.left -= 1;
        for (code, _, left) in &mut self.codes {
            if r < u64::from(*left) {
                *left -= 1;
                return Some(*code);
            }
            r -= u64::from(*left);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deal(shares: &[(Code, f64)], calls: usize, seed: u64) -> [u64; Code::COUNT] {
        let mut deck = Deck::new(shares);
        let mut rng = Rng::new(seed);
        let mut counts = [0; Code::COUNT];
        for _ in 0..calls {
            counts[deck.draw(&mut rng).unwrap_or(Code::Ok) as usize] += 1;
        }
        counts
    }

    #[test]
    fn whole_decks_give_exact_counts() {
        let shares = [(Code::NotFound, 0.1), (Code::Unavailable, 0.05)];
        assert_eq!(Deck::new(&shares).size, 100);
        for seed in 0..5 {
            let counts = deal(&shares, 300, seed);
            assert_eq!((counts[5], counts[14], counts[0]), (30, 15, 255), "seed {seed}");
        }
        // A part of a deck is off by less than the code's cards in one deck.
        let counts = deal(&shares, 250, 9);
        assert!((counts[5] as i64 - 25).abs() < 10 && (counts[14] as i64 - 12).abs() < 5, "{counts:?}");
        // Finer shares take larger decks.
        assert_eq!(Deck::new(&[(Code::Internal, 0.001)]).size, 1000);
        assert_eq!(Deck::new(&[(Code::Internal, 1.0 / 3.0)]).size, MAX_DECK);
    }

    #[test]
    fn which_calls_fail_depends_on_the_seed_and_no_shares_draw_nothing() {
        let shares = [(Code::Aborted, 0.5)];
        let order = |seed| {
            let mut deck = Deck::new(&shares);
            let mut rng = Rng::new(seed);
            (0..20).map(|_| deck.draw(&mut rng).is_some()).collect::<Vec<_>>()
        };
        assert_eq!(order(1), order(1));
        assert_ne!(order(1), order(2));
        let mut rng = Rng::new(3);
        let before = rng.clone().next_u64();
        assert_eq!(Deck::new(&[]).draw(&mut rng), None);
        assert_eq!(rng.next_u64(), before, "nothing drawn");
    }
}
