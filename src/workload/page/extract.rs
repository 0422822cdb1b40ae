//! What any page names, read from its HTML: the objects a browser fetches to show it and the
//! pages it links to, as absolute URLs.
//!
//! The HTML is tokenized by `html5gum`: a WHATWG-conformant tokenizer (it passes html5lib's
//! tokenizer tests) with no `unsafe` and no dependencies, kept up and fuzzed, and the one the
//! link checker lychee reads links with. Only start tags and their attributes matter here, so
//! a tokenizer is enough and a tree builder (html5ever's, under `scraper`) would be cost for
//! nothing; `tl` is faster still but no longer released and not conformant. Its callback API
//! hands over borrowed names and values, so a tag nobody asked for costs no allocation, and it
//! switches to raw text inside `<script>`, `<style>`, `<noscript>` and the like, so markup in
//! a script's strings is not taken for tags. URLs are resolved by the `url` crate (WHATWG URL).

use std::collections::HashSet;

use html5gum::emitters::callback::{CallbackEmitter, CallbackEvent};
use html5gum::{Span, Tokenizer};
use url::Url;

use super::PageRefs;

/// What a reference is to the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// Fetched to show the page.
    Embed,
    /// Where it links to.
    Link,
    /// `<base href>`: what relative references resolve against.
    Base,
}

/// The attributes read, as indices into [`Tag::values`].
const SRC: usize = 0;
const HREF: usize = 1;
const SRCSET: usize = 2;
const REL: usize = 3;

/// The start tag being read, if it is one that can name a reference.
#[derive(Debug, Default)]
struct Tag {
    /// Its name, when it is one of those read.
    name: Option<Name>,
    /// The first value of each attribute read (an attribute's later repeats are ignored, as
    /// browsers do); an attribute without a value has an empty one.
    values: [Option<Vec<u8>>; 4],
    /// The attribute whose value comes next, if it is one read.
    current: Option<usize>,
}

/// The tags that name references.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Name {
    Img,
    Link,
    /// `script`, `iframe`, `video`, `audio`, `source`, `embed`: their `src`.
    Src,
    /// `a`, `area`.
    Anchor,
    Base,
}

impl Name {
    fn of(tag: &[u8]) -> Option<Name> {
        // The tokenizer gives names in lower case.
        Some(match tag {
            b"img" => Name::Img,
            b"link" => Name::Link,
            b"script" | b"iframe" | b"video" | b"audio" | b"source" | b"embed" => Name::Src,
            b"a" | b"area" => Name::Anchor,
            b"base" => Name::Base,
            _ => return None,
        })
    }
}

impl Tag {
    /// The reference the tag makes once its attributes are read.
    fn found(&mut self) -> Option<(Role, Vec<u8>)> {
        let name = self.name?;
        let take = |i: usize, values: &mut [Option<Vec<u8>>; 4]| values[i].take().filter(|v| !is_blank(v));
        let v = &mut self.values;
        match name {
            Name::Img => take(SRC, v).or_else(|| first_candidate(v[SRCSET].as_deref()?)).map(|u| (Role::Embed, u)),
            Name::Src => take(SRC, v).map(|u| (Role::Embed, u)),
            Name::Link => {
                let rel = v[REL].as_deref().unwrap_or_default();
                let fetched = rel
                    .split(|b| b.is_ascii_whitespace())
                    .any(|t| t.eq_ignore_ascii_case(b"stylesheet") || t.eq_ignore_ascii_case(b"icon"));
                if fetched {
                    take(HREF, v).map(|u| (Role::Embed, u))
                } else {
                    None
                }
            }
            // An empty href is the page itself, which is dropped later like any link to it.
            Name::Anchor => v[HREF].take().map(|u| (Role::Link, u)),
            Name::Base => take(HREF, v).map(|u| (Role::Base, u)),
        }
    }
}

fn is_blank(v: &[u8]) -> bool {
    v.iter().all(|b| b.is_ascii_whitespace())
}

/// The URL of a `srcset`'s first candidate: after leading spaces and commas, up to the next
/// space, without trailing commas.
fn first_candidate(srcset: &[u8]) -> Option<Vec<u8>> {
    let start = srcset.iter().position(|b| !b.is_ascii_whitespace() && *b != b',')?;
    let rest = &srcset[start..];
    let end = rest.iter().position(|b| b.is_ascii_whitespace()).unwrap_or(rest.len());
    let url = &rest[..end];
    let trimmed = url.len() - url.iter().rev().take_while(|&&b| b == b',').count();
    (trimmed > 0).then(|| url[..trimmed].to_vec())
}

/// Reads the references of the page at `base` (its URL) from `html`: embeds are what a
/// browser fetches to show it (`img` `src`, or its `srcset`'s first candidate without one;
/// `script`, `iframe`, `video`, `audio`, `source` and `embed` `src`; `link` `href` with `rel`
/// `stylesheet` or `icon`), links are `a` and `area` `href`. Each is resolved against the first
/// `<base href>` (itself resolved against `base`) or `base`, kept only if it is `http` or
/// `https`, without its fragment; a link to the page itself is dropped; each list keeps the
/// first of repeats, in document order. Any input is read: bytes that are not UTF-8 are taken
/// lossily, and what does not resolve is skipped.
pub fn extract(base: &str, html: &[u8]) -> PageRefs {
    let mut tag = Tag::default();
    let mut emitter = CallbackEmitter::new(move |event: CallbackEvent<'_>, _: Span<()>| match event {
        CallbackEvent::OpenStartTag { name } => {
            tag = Tag { name: Name::of(name), ..Tag::default() };
            None
        }
        CallbackEvent::AttributeName { name } => {
            tag.current = None;
            tag.name?;
            let i = match name {
                b"src" => SRC,
                b"href" => HREF,
                b"srcset" => SRCSET,
                b"rel" => REL,
                _ => return None,
            };
            if tag.values[i].is_none() {
                tag.values[i] = Some(Vec::new());
                tag.current = Some(i);
            }
            None
        }
        CallbackEvent::AttributeValue { value } => {
            if let Some(i) = tag.current.take() {
                tag.values[i] = Some(value.to_vec());
            }
            None
        }
        CallbackEvent::CloseStartTag { .. } => {
            let found = tag.found();
            tag = Tag::default();
            found
        }
        // An end tag's attributes (an error the tokenizer lets through) belong to no tag.
        CallbackEvent::EndTag { .. } => {
            tag = Tag::default();
            None
        }
        _ => None,
    });
    emitter.naively_switch_states(true);
    let found: Vec<(Role, Vec<u8>)> = Tokenizer::new_with_emitter(html, emitter).flatten().collect();

    let page = Url::parse(base).ok();
    let first_base = found.iter().find(|(role, _)| *role == Role::Base);
    let doc_base = first_base.and_then(|(_, href)| resolve(page.as_ref(), href)).or_else(|| page.clone());
    let mut refs = PageRefs::default();
    let (mut seen_embeds, mut seen_links) = (HashSet::new(), HashSet::new());
    let own = page.map(|mut p| {
        p.set_fragment(None);
        p
    });
    for (role, value) in &found {
        let Some(mut url) = resolve(doc_base.as_ref(), value) else { continue };
        if !matches!(url.scheme(), "http" | "https") {
            continue;
        }
        url.set_fragment(None);
        match role {
            Role::Embed if seen_embeds.insert(url.clone()) => refs.embeds.push(url.into()),
            Role::Link if own.as_ref() != Some(&url) && seen_links.insert(url.clone()) => refs.links.push(url.into()),
            _ => {}
        }
    }
    refs
}

/// `value` (an attribute's bytes) resolved against `base`, or alone when there is none.
fn resolve(base: Option<&Url>, value: &[u8]) -> Option<Url> {
    let value = String::from_utf8_lossy(value);
    match base {
        Some(base) => base.join(&value).ok(),
        None => Url::parse(&value).ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::workload::doc::Doc;
    use crate::workload::page::{page_refs, Page};

    fn refs(base: &str, html: &str) -> (Vec<String>, Vec<String>) {
        let r = extract(base, html.as_bytes());
        (r.embeds, r.links)
    }

    #[test]
    fn embeds_and_links_resolve_against_the_page() {
        let html = r##"<!doctype html><html><head>
            <link rel="stylesheet" href="css/site.css"><link rel="Shortcut ICON" href="/favicon.ico">
            <link rel="preconnect" href="https://cdn.example/"><link rel=stylesheet>
            <script src="//cdn.example/app.js"></script><script>document.write('<img src="no.png">')</script>
            </head><body>
            <IMG SRC="../img/a.png" src="ignored.png"><img src=""><img srcset=" , small.png 1x, big.png 2x">
            <img src="data:image/png;base64,AAAA"><img src="img/a.png#frag">
            <iframe src="frame.html"><img src="inside-iframe.png"></iframe>
            <video src="v.mp4"><source src="v.webm"></video><audio src="https://media.example/a.mp3"></audio>
            <a href="other.html#top">x</a><a href="other.html">again</a><a href="#top">self</a><a href="">self</a>
            <a href="javascript:void(0)">js</a><a href="mailto:a@b.c">mail</a><a>none</a>
            <a href="ftp://files.example/x">ftp</a><area href="/map/1"><a href="HTTP://Other.Example:80/a/./b/../c">
            <noscript><img src="pixel.gif"></noscript></body></html>"##;
        let (embeds, links) = refs("http://site.example/dir/page.html?q=1", html);
        assert_eq!(
            embeds,
            [
                "http://site.example/dir/css/site.css",
                "http://site.example/favicon.ico",
                "http://cdn.example/app.js",
                "http://site.example/img/a.png",
                "http://site.example/dir/small.png",
                "http://site.example/dir/img/a.png",
                "http://site.example/dir/frame.html",
                "http://site.example/dir/v.mp4",
                "http://site.example/dir/v.webm",
                "https://media.example/a.mp3",
            ]
        );
        assert_eq!(
            links,
            ["http://site.example/dir/other.html", "http://site.example/map/1", "http://other.example/a/c"]
        );
    }

    #[test]
    fn base_href_counts_once_and_resolves_against_the_page() {
        // The first <base href> applies to every reference, those before it too.
        let html = r#"<img src="a.png"><base target="_top"><base href="../static/"><base href="/ignored/">
            <a href="p.html">p</a><a href="https://elsewhere.example/q?x=1&amp;y=2">q</a>"#;
        let (embeds, links) = refs("https://site.example/a/b/page", html);
        assert_eq!(embeds, ["https://site.example/a/static/a.png"]);
        assert_eq!(links, ["https://site.example/a/static/p.html", "https://elsewhere.example/q?x=1&y=2"]);
        // A base that does not parse leaves the page's URL.
        let (embeds, _) = refs("http://h.example/x/", r#"<base href="http://[::bad"><img src="i.png">"#);
        assert_eq!(embeds, ["http://h.example/x/i.png"]);
    }

    #[test]
    fn a_base_that_is_not_a_url_keeps_only_absolute_references() {
        let html = r#"<img src="rel.png"><img src="http://abs.example/i.png"><a href="//host.example/x">x</a>"#;
        assert_eq!(refs("not a url", html), (vec!["http://abs.example/i.png".to_string()], vec![]));
        assert_eq!(refs("", ""), (vec![], vec![]));
    }

    #[test]
    fn srcset_first_candidate() {
        let rows: [(&[u8], Option<&[u8]>); 6] = [
            (b"a.png 1x, b.png 2x", Some(b"a.png")),
            (b"  ,, a.png,", Some(b"a.png")),
            (b"a.png,b.png", Some(b"a.png,b.png")),
            (b"a.png, b.png", Some(b"a.png")),
            (b" , ", None),
            (b"", None),
        ];
        for (srcset, want) in rows {
            assert_eq!(first_candidate(srcset).as_deref(), want, "{:?}", String::from_utf8_lossy(srcset));
        }
    }

    #[test]
    fn garbage_never_panics() {
        let mut rng = Rng::new(99);
        let soup: &[&[u8]] = &[
            b"<",
            b">",
            b"<img src=",
            b"<a href='",
            b"\"",
            b"'",
            b"<!--",
            b"-->",
            b"<script>",
            b"</script>",
            b"<base href=",
            b"//",
            b"../",
            b"&amp;",
            b"&#x0;",
            b"&#99999999;",
            b"\x00",
            b"\xff\xfe",
            b"srcset=",
            b",",
            b" ",
            b"http://x/",
            b"\xe2\x82",
            b"<![CDATA[",
            b"<svg>",
            b"=",
            b"#",
            b"?",
        ];
        for _ in 0..300 {
            let mut input = Vec::new();
            for _ in 0..rng.below(200) {
                if rng.chance(0.2) {
                    input.push(rng.next_u64() as u8);
                } else {
                    input.extend_from_slice(soup[rng.below(soup.len() as u64) as usize]);
                }
            }
            let r = extract("http://site.example/p", &input);
            for url in r.embeds.iter().chain(&r.links) {
                assert!(url.starts_with("http://") || url.starts_with("https://"), "{url}");
            }
        }
        // A huge attribute, and a tag never closed.
        let mut huge = b"<img src=\"/".to_vec();
        huge.resize(1 << 20, b'a');
        huge.extend_from_slice(b"\"><a href=\"/x");
        let r = extract("http://site.example/", &huge);
        assert_eq!(r.embeds.len(), 1);
        assert_eq!(r.embeds[0].len(), "http://site.example".len() + (1 << 20) - b"<img src=\"".len());
        assert!(r.links.is_empty());
    }

    #[test]
    fn the_origins_pages_name_what_page_refs_says() {
        for (id, len, embed, links) in [(1, 100, 3, 2), (77, 50_000, 100, 100), (9, 0, 0, 5), (4, 10, 0, 0)] {
            let base = format!("http://127.0.0.1:8080/d/{id}/{len}.html");
            let body = Page::new(Doc { id, len }, embed, links).body(&format!("/d/{id}/{len}.html"));
            let found = extract(&base, &body);
            let want = page_refs(id, embed, links);
            let absolute = |paths: Vec<String>| -> Vec<String> {
                paths.into_iter().map(|p| format!("http://127.0.0.1:8080{p}")).collect()
            };
            assert_eq!(found.embeds, absolute(want.embeds), "{id}");
            assert_eq!(found.links, absolute(want.links), "{id}");
        }
    }
}
