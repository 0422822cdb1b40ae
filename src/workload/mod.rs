//! What to request next in proxy and cache tests: synthetic documents ([`doc`]) and, built on
//! them, URL choice by hit rate over a hot set, popularity and size mixes. Pure and seeded, so
//! every process and thread can agree on the hot set without talking.

pub mod alternates;
pub mod doc;
pub mod gen;
pub mod headers;
pub mod targets;
