//! What loading whole pages counts (`--fullpage`): pages loaded and failed, the objects they
//! embed, links followed, references left on other hosts, and each page's load time (from the
//! page's request to the end of its last object). The type is also a result's `pages` section.

use std::fmt::Write as _;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::section::{Counts, Figure, Spoken};
use super::units::{grouped, time_us};
use super::Tally;

counts! {
    /// Page counts of one thread, or merged.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub struct PageCounts {
        /// Pages loaded: the page answered (2xx or 304) and every object it embeds ended.
        pub loaded: u64,
        /// Pages whose own request failed or was answered with another status.
        pub failed: u64,
        /// Objects fetched for loaded pages (each a request of the run).
        pub objects: u64,
        /// Objects that failed or were answered above 399 (their pages still count as loaded,
        /// as a browser shows a page with a broken image).
        pub objects_failed: u64,
        /// Links followed to the next page (`--follow`).
        pub followed: u64,
        /// References to another host, not fetched (strain's connections go to the target
        /// only; through a forward proxy, `--same-host` keeps to the page's host).
        pub elsewhere: u64,
    }
}

/// Page load times: the percentiles a result keeps, microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadTimes {
    /// Mean.
    pub mean_us: u64,
    /// Median.
    pub p50_us: u64,
    /// 90th percentile.
    pub p90_us: u64,
    /// 99th percentile.
    pub p99_us: u64,
    /// Slowest.
    pub max_us: u64,
}

impl LoadTimes {
    /// The percentiles of `h`.
    fn of(h: &Histogram<u64>) -> LoadTimes {
        LoadTimes {
            mean_us: h.mean() as u64,
            p50_us: h.value_at_quantile(0.5),
            p90_us: h.value_at_quantile(0.9),
            p99_us: h.value_at_quantile(0.99),
            max_us: h.max(),
        }
    }
}

/// A run's pages, of one thread or merged: the result's `pages` section.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct PagesSection {
    /// What was counted.
    #[serde(flatten)]
    pub counts: PageCounts,
    /// Load times of the loaded pages (absent from a merged result, whose segments' times
    /// are not kept, and when no page loaded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<LoadTimes>,
    /// The times behind `load` while the run's threads are added up.
    #[serde(skip)]
    times: Option<Histogram<u64>>,
}

impl PagesSection {
    /// `counts`, with the load times in `times`.
    pub fn new(counts: PageCounts, times: &Histogram<u64>) -> PagesSection {
        let times = (!times.is_empty()).then(|| times.clone());
        PagesSection { counts, load: times.as_ref().map(LoadTimes::of), times }
    }
}

impl PartialEq for PagesSection {
    fn eq(&self, other: &PagesSection) -> bool {
        self.counts == other.counts && self.load == other.load
    }
}

impl Tally for PagesSection {
    fn tally(&mut self, other: &PagesSection) {
        self.counts.tally(&other.counts);
        let (mine, theirs) = (self.load.is_some(), other.load.is_some());
        self.times = super::tally_times(self.times.take(), mine, other.times.as_ref(), theirs);
        self.load = self.times.as_ref().map(LoadTimes::of);
    }
}

impl Counts for PagesSection {
    const KEY: &'static str = "pages";
    const TITLE: &'static str = "Whole pages";
    const CAPTION: &'static str =
        "A page's load time runs from its request to the end of the last object it embeds, fetched over its browser's 6 connections.";
    // Not a protocol: the run's `protocol` says how it was spoken.
    const SPOKEN: bool = false;

    /// Two lines: pages and objects, then load times when any page loaded.
    fn text(&self, _spoken: &Spoken, out: &mut String) {
        let c = &self.counts;
        let per_page = c.objects as f64 / c.loaded.max(1) as f64;
        let _ = write!(out, "  Pages: {} loaded, {} failed; {per_page:.1} objects per page", c.loaded, c.failed);
        for (n, what) in [
            (c.objects_failed, "objects failed"),
            (c.followed, "links followed"),
            (c.elsewhere, "references to other hosts not fetched"),
        ] {
            if n > 0 {
                let _ = write!(out, "; {n} {what}");
            }
        }
        out.push('\n');
        if let Some(t) = &self.load {
            let at = |us: u64| time_us(us as f64);
            let _ = writeln!(
                out,
                "  Page load: mean {}, p50 {}, p90 {}, p99 {}, max {}",
                at(t.mean_us),
                at(t.p50_us),
                at(t.p90_us),
                at(t.p99_us),
                at(t.max_us)
            );
        }
    }

    fn figures(&self, _spoken: &Spoken) -> Vec<Figure> {
        let c = &self.counts;
        let g = |n: u64| grouped(n as f64, 0);
        let mut out = vec![
            ("pages loaded", "pages_loaded", g(c.loaded)),
            ("pages failed", "pages_failed", g(c.failed)),
            ("objects fetched", "page_objects", g(c.objects)),
            ("objects failed", "page_objects_failed", g(c.objects_failed)),
            ("links followed", "page_links_followed", g(c.followed)),
            ("references to other hosts (not fetched)", "page_refs_elsewhere", g(c.elsewhere)),
        ];
        if let Some(t) = &self.load {
            let at = |us: u64| time_us(us as f64);
            out.push(("page load p50", "page_load_p50", at(t.p50_us)));
            out.push(("page load p90", "page_load_p90", at(t.p90_us)));
            out.push(("page load p99", "page_load_p99", at(t.p99_us)));
            out.push(("page load max", "page_load_max", at(t.max_us)));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn times(values: &[u64]) -> Histogram<u64> {
        let mut h = crate::stats::latency_histogram();
        for &v in values {
            h.record(v).unwrap();
        }
        h
    }

    #[test]
    fn threads_add_up_and_read_as_text() {
        let counts = PageCounts { loaded: 2, objects: 6, followed: 1, ..PageCounts::default() };
        let mut a = PagesSection::new(counts.clone(), &times(&[1000, 3000]));
        let b = PagesSection::new(PageCounts { failed: 1, elsewhere: 4, ..counts }, &times(&[2000, 4000]));
        a.tally(&b);
        assert_eq!(a.counts.loaded, 4);
        assert_eq!(a.load.map(|t| (t.mean_us, t.max_us)), Some((2500, 4001)));
        let mut text = String::new();
        Counts::text(&a, &Spoken::default(), &mut text);
        assert!(
            text.starts_with("  Pages: 4 loaded, 1 failed; 3.0 objects per page; 2 links followed; 4 references"),
            "{text}"
        );
        assert!(text.contains("  Page load: mean 2.50ms, p50 2.00ms"), "{text}");
        // Read back from a result, the percentiles stay and no times come with them.
        let back: PagesSection = serde_json::from_value(serde_json::to_value(&a).unwrap()).unwrap();
        assert_eq!(back, a);
    }
}
