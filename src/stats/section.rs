//! A protocol's own counts, as one section of a result: the recorder, the result, `merge` and
//! the three reports hold and show them through [`Section`] without naming the protocol.
//!
//! A protocol writes one plain [`Counts`] type (its fields, how they read in text and in the
//! HTML table); [`Section`] follows for it. Reading a section back from a result needs the
//! protocol's type, which this layer cannot name: the protocols list their [`Kind`]s once, at
//! start ([`install`]). A section no installed kind reads is kept as it was written.

use std::any::Any;
use std::fmt::Debug;
use std::sync::OnceLock;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::Tally;
use crate::config::Speech;

/// What a run's answers are called, in every report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answers {
    /// One answer: `request`, `message`, `event`.
    pub singular: &'static str,
    /// Many, lower case: `requests`.
    pub plural: &'static str,
    /// Many, capitalised, before `/sec`: `Requests`.
    pub title: &'static str,
    /// The HTML summary's heading for what the server said: `status codes`.
    pub status: &'static str,
    /// The errors chart's caption: what its `status` and `timeout` mean for these answers.
    pub errors: &'static str,
    /// The text report's words for the answers that failed (wrk's).
    pub failed: &'static str,
}

impl Answers {
    /// HTTP responses (and gRPC calls, each one HTTP request).
    pub const REQUESTS: Answers = Answers {
        singular: "request",
        plural: "requests",
        title: "Requests",
        status: "status codes",
        errors: "status: responses above 399.",
        failed: "Non-2xx or 3xx responses",
    };
}

/// How a run spoke its protocol, as its section of a result begins.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Spoken {
    /// `h2` (TLS, ALPN), `h2c` (prior knowledge), `h3`, `ws`, `wss`, `sse`.
    pub protocol: String,
    /// Requests in flight per connection (`-m`).
    pub streams_per_connection: u32,
}

/// One figure of a protocol's HTML table: its name, the metric it is tagged with, its value.
pub type Figure = (&'static str, &'static str, String);

/// A protocol's counts as plain data: what a protocol writes. [`Section`] follows.
pub trait Counts:
    Tally + Clone + Default + Debug + PartialEq + Serialize + DeserializeOwned + Send + Sync + 'static
{
    /// The result's key for the section: `websocket`.
    const KEY: &'static str;
    /// The section's title in the HTML page: `WebSocket`.
    const TITLE: &'static str;
    /// The HTML table's caption.
    const CAPTION: &'static str;
    /// A unit's names for its protocol (`ws`, `wss`), by which a result's `protocol` is read
    /// back; `None` for HTTP's own versions.
    const SPEECH: Option<Speech> = None;
    /// Whether the section is written after how it was spoken (a protocol that rides another,
    /// as gRPC rides HTTP/2, leaves that to the result's `protocol`).
    const SPOKEN: bool = true;

    /// What a run of this protocol counts as its answers, if not HTTP responses.
    fn answers() -> Option<&'static Answers> {
        None
    }
    /// The answers that failed, when the protocol judges them itself (they are then the
    /// run's status errors, whatever their HTTP status).
    fn failed(&self) -> Option<u64> {
        None
    }
    /// The streams started, when the protocol's rate is of streams (a capacity search's
    /// achieved rate).
    fn started(&self) -> Option<u64> {
        None
    }
    /// The text report's lines, after wrk's.
    fn text(&self, spoken: &Spoken, out: &mut String);
    /// The HTML table's figures, a row each.
    fn figures(&self, spoken: &Spoken) -> Vec<Figure>;
    /// The HTML summary's column for what the server said, when the answers are not
    /// responses with a status.
    fn said(&self) -> Option<String> {
        None
    }
}

/// A protocol's counts as the rest of strain holds them: added, written, shown.
pub trait Section: Debug + Send + Sync {
    /// The result's key for the section.
    fn key(&self) -> &str;
    /// The HTML table's title.
    fn title(&self) -> &str;
    /// The HTML table's caption.
    fn caption(&self) -> &str;
    /// Adds another thread's or segment's counts of the same protocol (another's are ignored).
    fn tally(&mut self, other: &dyn Section);
    /// The counts as the result writes them.
    fn to_json(&self) -> serde_json::Value;
    /// The counts to write in place, field by field in their order.
    fn fields(&self) -> &dyn erased_serde::Serialize;
    /// A copy.
    fn clone_box(&self) -> Box<dyn Section>;
    /// The counts themselves, for the protocol's own code.
    fn as_any(&self) -> &dyn Any;
    /// What the run counts as its answers, if not HTTP responses.
    fn answers(&self) -> Option<&'static Answers>;
    /// The text report's lines.
    fn text(&self, spoken: &Spoken, out: &mut String);
    /// The HTML table's figures.
    fn figures(&self, spoken: &Spoken) -> Vec<Figure>;
    /// The HTML summary's column for what the server said, if not status codes.
    fn said(&self) -> Option<String>;
    /// Whether it is written after how it was spoken.
    fn spoken(&self) -> bool;
    /// The answers that failed, when the protocol judges them itself.
    fn failed(&self) -> Option<u64>;
    /// The streams started, when the protocol's rate is of streams.
    fn started(&self) -> Option<u64>;
}

impl<C: Counts> Section for C {
    fn key(&self) -> &str {
        C::KEY
    }
    fn title(&self) -> &str {
        C::TITLE
    }
    fn caption(&self) -> &str {
        C::CAPTION
    }
    fn tally(&mut self, other: &dyn Section) {
        if let Some(other) = other.as_any().downcast_ref::<C>() {
            Tally::tally(self, other);
        }
    }
    fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
    fn fields(&self) -> &dyn erased_serde::Serialize {
        self
    }
    fn clone_box(&self) -> Box<dyn Section> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn answers(&self) -> Option<&'static Answers> {
        C::answers()
    }
    fn text(&self, spoken: &Spoken, out: &mut String) {
        Counts::text(self, spoken, out);
    }
    fn figures(&self, spoken: &Spoken) -> Vec<Figure> {
        Counts::figures(self, spoken)
    }
    fn said(&self) -> Option<String> {
        Counts::said(self)
    }
    fn spoken(&self) -> bool {
        C::SPOKEN
    }
    fn failed(&self) -> Option<u64> {
        Counts::failed(self)
    }
    fn started(&self) -> Option<u64> {
        Counts::started(self)
    }
}

impl Clone for Box<dyn Section> {
    fn clone(&self) -> Self {
        self.clone_box()
    }
}

impl<'a> PartialEq for dyn Section + 'a {
    fn eq(&self, other: &dyn Section) -> bool {
        self.key() == other.key() && self.to_json() == other.to_json()
    }
}

/// A section written by a protocol no installed [`Kind`] reads: kept as written, shown nowhere.
#[derive(Debug, Clone, PartialEq)]
struct Unread {
    key: String,
    json: serde_json::Value,
}

impl Section for Unread {
    fn key(&self) -> &str {
        &self.key
    }
    fn title(&self) -> &str {
        &self.key
    }
    fn caption(&self) -> &str {
        ""
    }
    fn tally(&mut self, _: &dyn Section) {}
    fn to_json(&self) -> serde_json::Value {
        self.json.clone()
    }
    fn fields(&self) -> &dyn erased_serde::Serialize {
        &self.json
    }
    fn clone_box(&self) -> Box<dyn Section> {
        Box::new(self.clone())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn answers(&self) -> Option<&'static Answers> {
        None
    }
    fn text(&self, _: &Spoken, _: &mut String) {}
    fn figures(&self, _: &Spoken) -> Vec<Figure> {
        Vec::new()
    }
    fn said(&self) -> Option<String> {
        None
    }
    fn spoken(&self) -> bool {
        true
    }
    fn failed(&self) -> Option<u64> {
        None
    }
    fn started(&self) -> Option<u64> {
        None
    }
}

/// How a protocol's section is read back from a result.
#[derive(Clone, Copy)]
pub struct Kind {
    /// The result's key.
    pub key: &'static str,
    /// A unit's names for its protocol.
    pub speech: Option<Speech>,
    /// Whether its section is written after how it was spoken.
    spoken: bool,
    read: fn(serde_json::Value) -> Result<Box<dyn Section>, serde_json::Error>,
}

impl Kind {
    /// The kind of counts `C`.
    pub const fn of<C: Counts>() -> Kind {
        Kind {
            key: C::KEY,
            speech: C::SPEECH,
            spoken: C::SPOKEN,
            read: |v| Ok(Box::new(serde_json::from_value::<C>(v)?)),
        }
    }
}

static KINDS: OnceLock<&'static [Kind]> = OnceLock::new();

/// Sets the kinds of section results are read with (once: a second call changes nothing).
pub fn install(kinds: &'static [Kind]) {
    let _ = KINDS.set(kinds);
}

/// Whether `key` names an installed protocol's section.
pub fn known(key: &str) -> bool {
    KINDS.get().is_some_and(|k| k.iter().any(|k| k.key == key))
}

/// The installed unit spoken as `name` (`ws`, `wss`), if any.
pub fn speech(name: &str) -> Option<Speech> {
    kinds().filter_map(|k| k.speech).find(|s| s.plain == name || s.tls == name)
}

/// HTTP's own sections (its versions', redirects followed, whole pages), which every result
/// may have.
static HTTP: [Kind; 4] = [
    Kind::of::<super::H2Counts>(),
    Kind::of::<super::H3Counts>(),
    Kind::of::<super::RedirectCounts>(),
    Kind::of::<super::PagesSection>(),
];

/// Every kind a section is read with: HTTP's versions', then the installed units'.
fn kinds() -> impl Iterator<Item = &'static Kind> {
    let installed = KINDS.get().map_or(&[][..], |k| &k[..]);
    HTTP.iter().chain(installed)
}

/// The keys of every section its own type reads.
pub fn keys() -> impl Iterator<Item = &'static str> {
    kinds().map(|k| k.key)
}

/// The kind of section written under `key`, if installed.
fn kind(key: &str) -> Option<&'static Kind> {
    kinds().find(|k| k.key == key)
}

/// Whether a section written under `key` is read by its own type (HTTP's versions', an
/// installed unit's).
pub fn readable(key: &str) -> bool {
    kind(key).is_some()
}

/// Reads the section written under `key`; one no installed kind knows is kept as written.
pub fn read(key: &str, json: serde_json::Value) -> Result<Box<dyn Section>, serde_json::Error> {
    match kind(key) {
        Some(kind) => (kind.read)(json),
        None => Ok(Box::new(Unread { key: key.to_string(), json })),
    }
}

/// The protocols' counts of a thread or a run: a section each that counted anything.
#[derive(Debug, Clone, Default)]
pub struct Sections(Vec<Box<dyn Section>>);

impl Sections {
    /// Adds `section`, tallied into the one of its protocol already held.
    pub fn add(&mut self, section: Box<dyn Section>) {
        match self.0.iter_mut().find(|s| s.key() == section.key()) {
            Some(held) => held.tally(section.as_ref()),
            None => self.0.push(section),
        }
    }

    /// Adds every section of `other`.
    pub fn tally(&mut self, other: &Sections) {
        for s in &other.0 {
            self.add(s.clone_box());
        }
    }

    /// The sections, in the order they came.
    pub fn iter(&self) -> impl Iterator<Item = &dyn Section> {
        self.0.iter().map(|s| s.as_ref())
    }

    /// Protocol `C`'s counts, if it counted.
    pub fn get<C: Counts>(&self) -> Option<&C> {
        self.iter().find_map(|s| s.as_any().downcast_ref::<C>())
    }

    /// What the run counts as its answers: the first section's that says, else requests.
    pub fn answers(&self) -> &'static Answers {
        self.iter().find_map(|s| s.answers()).unwrap_or(&Answers::REQUESTS)
    }
}

impl PartialEq for Sections {
    fn eq(&self, other: &Sections) -> bool {
        self.0.len() == other.0.len() && self.0.iter().zip(&other.0).all(|(a, b)| a == b)
    }
}

/// A result's sections: each protocol's counts under its key, after how it was spoken.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Written(pub Vec<(Spoken, Box<dyn Section>)>);

impl Written {
    /// The sections of a run's `sections`, each spoken as `spoken` says, in the order of their
    /// keys (the order they read back in).
    pub fn of(sections: &Sections, spoken: impl Fn(&dyn Section) -> Spoken) -> Written {
        let mut all: Vec<(Spoken, Box<dyn Section>)> = sections.iter().map(|s| (spoken(s), s.clone_box())).collect();
        all.sort_by(|a, b| a.1.key().cmp(b.1.key()));
        Written(all)
    }

    /// The counts alone, as a run holds them.
    pub fn sections(&self) -> Sections {
        let mut all = Sections::default();
        for (_, s) in &self.0 {
            all.add(s.clone_box());
        }
        all
    }

    /// Each section with how it was spoken.
    pub fn iter(&self) -> impl Iterator<Item = (&Spoken, &dyn Section)> {
        self.0.iter().map(|(p, s)| (p, s.as_ref()))
    }

    /// What the result counts as its answers.
    pub fn answers(&self) -> &'static Answers {
        self.iter().find_map(|(_, s)| s.answers()).unwrap_or(&Answers::REQUESTS)
    }

    /// Protocol `C`'s counts, if the result has them.
    pub fn get<C: Counts>(&self) -> Option<(&Spoken, &C)> {
        self.iter().find_map(|(p, s)| Some((p, s.as_any().downcast_ref::<C>()?)))
    }
}

/// One written section: how it was spoken (when it says), then its counts, in one JSON object.
#[derive(Serialize)]
struct Flat<'a> {
    #[serde(flatten)]
    spoken: Option<&'a Spoken>,
    #[serde(flatten)]
    counts: &'a dyn erased_serde::Serialize,
}

impl Serialize for Written {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (spoken, counts) in &self.0 {
            let spoken = counts.spoken().then_some(spoken);
            map.serialize_entry(counts.key(), &Flat { spoken, counts: counts.fields() })?;
        }
        map.end()
    }
}

impl<'de> serde::Deserialize<'de> for Written {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Written, D::Error> {
        use serde::de::Error;
        // Flattened into a result, this sees every key the result's own fields did not take:
        // a section is an object that says how it was spoken, or one an installed kind says
        // is written without; anything else is not one.
        let all = std::collections::BTreeMap::<String, serde_json::Value>::deserialize(d)?;
        let mut out = Vec::new();
        for (key, value) in all {
            let serde_json::Value::Object(mut fields) = value else { continue };
            let spoken = match (fields.remove("protocol"), fields.remove("streams_per_connection")) {
                (Some(protocol), Some(streams)) => Spoken {
                    protocol: serde_json::from_value(protocol).map_err(D::Error::custom)?,
                    streams_per_connection: serde_json::from_value(streams).map_err(D::Error::custom)?,
                },
                _ if kind(&key).is_some_and(|k| !k.spoken) => Spoken::default(),
                _ => continue,
            };
            let counts =
                read(&key, serde_json::Value::Object(fields)).map_err(|e| D::Error::custom(format!("{key}: {e}")))?;
            out.push((spoken, counts));
        }
        Ok(Written(out))
    }
}
