//! What following redirects counts (`--follow-redirects N`): the hops followed, the chains
//! they made (a request whose answer was a redirect, followed to its end), and the redirects
//! not followed, by why. The type is also a result's `redirects` section.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::section::{Counts, Figure, Spoken};

counts! {
    /// Redirect counts of one thread, or merged; in a result, written field by field in this
    /// order.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub struct RedirectCounts {
        /// Redirects followed (hops): each a request of the same chain, not counted apart.
        pub followed: u64,
        /// Requests whose answer was reached through at least one redirect.
        pub chains: u64,
        /// Redirects to another host, scheme or port, answered as they came (strain's
        /// connections go to the target only).
        pub elsewhere: u64,
        /// Redirects past `--follow-redirects`, answered as they came.
        pub too_many: u64,
        /// Redirects without a usable `Location`, answered as they came.
        pub no_location: u64,
    }
}

impl Counts for RedirectCounts {
    const KEY: &'static str = "redirects";
    const TITLE: &'static str = "Redirects";
    const CAPTION: &'static str = "A chain's latency runs from its first request to its last answer.";
    // Not a protocol: the run's `protocol` says how it was spoken.
    const SPOKEN: bool = false;

    /// One line: hops and chains, then what was not followed, when any.
    fn text(&self, _spoken: &Spoken, out: &mut String) {
        let _ = write!(out, "  Redirects: {} followed in {} chains", self.followed, self.chains);
        for (n, why) in [
            (self.elsewhere, "to another host, not followed"),
            (self.too_many, "past --follow-redirects"),
            (self.no_location, "without a Location"),
        ] {
            if n > 0 {
                let _ = write!(out, "; {n} {why}");
            }
        }
        out.push('\n');
    }

    fn figures(&self, _spoken: &Spoken) -> Vec<Figure> {
        let g = |n: u64| super::units::grouped(n as f64, 0);
        vec![
            ("followed", "redirects_followed", g(self.followed)),
            ("chains", "redirect_chains", g(self.chains)),
            ("to another host (not followed)", "redirects_elsewhere", g(self.elsewhere)),
            ("past --follow-redirects", "redirects_too_many", g(self.too_many)),
            ("without a Location", "redirects_no_location", g(self.no_location)),
        ]
    }
}
