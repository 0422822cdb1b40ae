//! Alternates (jtest -N, with -2 for `Vary: User-Agent`): one URL served in several variants,
//! chosen by a request header the origin names in `Vary`. A cache must store each variant
//! apart and answer each request with the one its header asks for; this is where caches break.
//!
//! Client and origin share the rule here: variant `k` is asked for with [`Vary::value`], and
//! the origin makes the body of a document as if its path were [`keyed`] (the path and the
//! header's value as it arrived), so a body says which variant it is and a content check
//! catches a cache that answered with another one.

/// The request header documents vary on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vary {
    /// `User-Agent`.
    UserAgent,
    /// `Accept-Encoding` (a proxy that normalizes it, as Traffic Server does by default, merges
    /// variants, and a content check says so).
    AcceptEncoding,
    /// `Accept-Language`.
    AcceptLanguage,
}

/// The most alternates a test asks for.
pub const MAX: u32 = 100;

const USER_AGENTS: &[&str] = &[
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
    "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
    "curl/8.11.0",
    "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
    "okhttp/4.12.0",
];

const ENCODINGS: &[&str] = &["gzip", "br", "gzip, deflate, br", "identity", "zstd", "deflate", "gzip, br", "br, zstd"];

const LANGUAGES: &[&str] = &[
    "en-US,en;q=0.9",
    "de-DE,de;q=0.9,en;q=0.5",
    "fr-FR,fr;q=0.9",
    "ja-JP,ja;q=0.9",
    "es-ES,es;q=0.9",
    "pt-BR,pt;q=0.9",
    "zh-CN,zh;q=0.9",
    "ru-RU,ru;q=0.9",
];

impl Vary {
    /// The header's name as sent.
    pub fn name(self) -> &'static str {
        match self {
            Vary::UserAgent => "User-Agent",
            Vary::AcceptEncoding => "Accept-Encoding",
            Vary::AcceptLanguage => "Accept-Language",
        }
    }

    /// The header's name in lower case, as fields are looked up.
    pub fn lower(self) -> &'static [u8] {
        match self {
            Vary::UserAgent => b"user-agent",
            Vary::AcceptEncoding => b"accept-encoding",
            Vary::AcceptLanguage => b"accept-language",
        }
    }

    /// The value that asks for variant `k`: real clients' values first, then each of them
    /// marked at its start with the variant (so even a short body tells variants apart).
    pub fn value(self, k: u32) -> String {
        let list = match self {
            Vary::UserAgent => USER_AGENTS,
            Vary::AcceptEncoding => ENCODINGS,
            Vary::AcceptLanguage => LANGUAGES,
        };
        let base = list[k as usize % list.len()];
        if (k as usize) < list.len() {
            return base.to_string();
        }
        match self {
            Vary::UserAgent => format!("Alternate{k}/1.0 {base}"),
            // Private-use tokens a server ignores.
            Vary::AcceptEncoding => format!("x-alt{k}, {base}"),
            Vary::AcceptLanguage => format!("x-alt{k},{base}"),
        }
    }
}

/// The path a variant's body is made from: `path`, and the header's value as it arrived.
pub fn keyed(path: &str, value: &[u8]) -> String {
    format!("{path} [{}]", String::from_utf8_lossy(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_has_its_own_value_and_body() {
        for vary in [Vary::UserAgent, Vary::AcceptEncoding, Vary::AcceptLanguage] {
            let values: Vec<String> = (0..MAX).map(|k| vary.value(k)).collect();
            let mut distinct = values.clone();
            distinct.sort();
            distinct.dedup();
            assert_eq!(distinct.len(), MAX as usize, "{vary:?}");
            // Told apart within a 100-byte body of a long generated path.
            let path = "/d/4611686018427387904/100";
            let heads: std::collections::BTreeSet<String> =
                values.iter().map(|v| keyed(path, v.as_bytes()).chars().take(100).collect()).collect();
            assert_eq!(heads.len(), MAX as usize, "{vary:?}");
        }
        assert_eq!(Vary::UserAgent.value(5), "curl/8.11.0");
        assert_eq!(Vary::AcceptEncoding.value(9), "x-alt9, br");
        assert_eq!(keyed("/d/1/2", b"gzip"), "/d/1/2 [gzip]");
    }
}
