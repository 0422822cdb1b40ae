//! What to request next in proxy and cache tests: synthetic documents ([`doc`]) and, built on
//! them, URL choice by hit rate over a hot set, popularity and size mixes; whole pages
//! ([`page`]: the origin's HTML pages and what any page names). Pure and seeded, so
//! every process and thread can agree on the hot set without talking.

pub mod alternates;
pub mod doc;
pub mod gen;
pub mod headers;
pub mod page;
pub mod targets;
