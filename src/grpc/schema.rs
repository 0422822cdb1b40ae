//! The schema a gRPC run speaks, settled before any load: `.proto` files compiled in-process by
//! protox (no `protoc`), a protoset (a binary `FileDescriptorSet`), or the serialized files a
//! server's reflection service answered; each ends as a [`DescriptorPool`]. [`find_method`] then
//! picks the called method out of it: its HTTP/2 path, its message types and its streaming kind.
//!
//! A protoset and reflection answers are the same thing underneath (serialized
//! `FileDescriptorProto`s), so both go through [`from_files`], which orders them by their imports,
//! supplies the well-known types (`google/protobuf/*.proto`) a server or a protoset left out, and
//! lowers files written in protobuf editions ([`editions`]). `.proto` sources in editions are
//! said in proto2's grammar for protox ([`editions::source`]), compiled, marked as the edition
//! they were, and go the same way.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use std::sync::{Arc, Mutex};

use prost::Message as _;
use prost_reflect::prost_types::FileDescriptorProto;
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor, MethodDescriptor, Value};
use protox::file::{ChainFileResolver, File, FileResolver, GoogleFileResolver, IncludeFileResolver};

use super::editions::{self, source::Rewritten};

/// Why a schema could not be had, or the called method is not in it (each one line).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// A `.proto` file does not compile: `file.proto:12:5: what is wrong`.
    #[error("{0}")]
    Compile(String),
    /// A `--proto` file cannot be read.
    #[error("--proto {path}: cannot read it: {reason}")]
    Proto {
        /// The file as given.
        path: String,
        /// The I/O error.
        reason: String,
    },
    /// A protoset file cannot be read.
    #[error("--protoset {path}: {reason}")]
    Protoset {
        /// The file as given.
        path: String,
        /// Why (the I/O error, or what is not a `FileDescriptorSet` about it).
        reason: String,
    },
    /// Serialized descriptors (a protoset's, a server's) do not make a schema.
    #[error("{from}: {reason}")]
    Files {
        /// Where they came from (`the server's reflection answers`, `--protoset x.pb`).
        from: String,
        /// What is wrong.
        reason: String,
    },
    /// `--call` is not `pkg.Service/Method` (or `pkg.Service.Method`).
    #[error("--call {0:?}: expected the method as PKG.Service/Method")]
    BadCall(String),
    /// The service is not in the schema.
    #[error("no service {name:?} in the schema; {}", listing("it has", known))]
    UnknownService {
        /// The service asked for.
        name: String,
        /// The schema's services, sorted.
        known: Vec<String>,
    },
    /// The service has no such method.
    #[error("service {service} has no method {method:?}; {}", listing("it has", known))]
    UnknownMethod {
        /// The service.
        service: String,
        /// The method asked for.
        method: String,
        /// The service's methods, in the order the schema declares them.
        known: Vec<String>,
    },
}

/// `"it has: a, b"`, or `"it has none"`.
pub fn listing(lead: &str, names: &[String]) -> String {
    if names.is_empty() {
        format!("{lead} none")
    } else {
        format!("{lead}: {}", names.join(", "))
    }
}

/// Compiles `protos` (`--proto`: a path, or a name below an import path), finding imports under
/// `import_paths` (`--import-path`, in order), then each proto's own directory, then protox's
/// copies of the well-known types.
pub fn compile(protos: &[PathBuf], import_paths: &[PathBuf]) -> Result<DescriptorPool, SchemaError> {
    let mut includes: Vec<PathBuf> = import_paths.to_vec();
    // A proto must lie under an include path (protox names files by their path below one), so
    // `--proto dir/x.proto` alone works as it does for ghz.
    for proto in protos {
        // A name below an import path (grpcurl's `-import-path protos -proto geo.proto`) is
        // protox's to find; adding its directory too would shadow it.
        if proto.is_relative() && import_paths.iter().any(|dir| dir.join(proto).is_file()) {
            continue;
        }
        // protox would call a missing file one outside the include paths.
        if let Err(e) = std::fs::File::open(proto) {
            return Err(SchemaError::Proto { path: proto.display().to_string(), reason: e.to_string() });
        }
        let dir = match proto.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !includes.contains(&dir) {
            includes.push(dir);
        }
    }
    let rewritten = Rewrites::default();
    let mut resolver = ChainFileResolver::new();
    for dir in includes {
        resolver.add(Sources { dir: dir.clone(), inner: IncludeFileResolver::new(dir), rewritten: rewritten.clone() });
    }
    resolver.add(GoogleFileResolver::new());
    let mut compiler = protox::Compiler::with_file_resolver(resolver);
    compiler.include_imports(true);
    for proto in protos {
        compiler.open_file(proto).map_err(|e| SchemaError::Compile(one_line(&e, &rewritten)))?;
    }
    let editions = rewritten.0.lock().map(|r| r.clone()).unwrap_or_default();
    if editions.is_empty() {
        return Ok(compiler.descriptor_pool());
    }
    // The files that were editions are marked so again, and lowered with the rest.
    let set = FileSet::decode(compiler.encode_file_descriptor_set().as_slice())
        .map_err(|e| SchemaError::Compile(format!("the compiled schema does not read back: {e}")))?;
    let mut files = Vec::with_capacity(set.file.len());
    for bytes in set.file {
        let name = FileDescriptorProto::decode(bytes.as_slice()).map(|f| f.name().to_string()).unwrap_or_default();
        match editions.iter().find(|(n, _)| *n == name) {
            Some((_, r)) => files.push(as_edition(&bytes, &r.edition).map_err(SchemaError::Compile)?),
            None => files.push(bytes),
        }
    }
    from_files(&files, "--proto")
}

/// The editions sources read so far, by name, shared by the resolvers and the error reader.
#[derive(Clone, Default)]
struct Rewrites(Arc<Mutex<Vec<(String, Rewritten)>>>);

impl Rewrites {
    fn get(&self, name: &str) -> Option<Rewritten> {
        self.0.lock().ok()?.iter().find(|(n, _)| n == name).map(|(_, r)| r.clone())
    }
}

/// `.proto` files under one include directory: protox's own reader, and for a file it cannot
/// parse that is written in editions, the file said in proto2's grammar.
struct Sources {
    dir: PathBuf,
    inner: IncludeFileResolver,
    rewritten: Rewrites,
}

impl FileResolver for Sources {
    fn resolve_path(&self, path: &Path) -> Option<String> {
        self.inner.resolve_path(path)
    }

    fn open_file(&self, name: &str) -> Result<File, protox::Error> {
        let failed = match self.inner.open_file(name) {
            Err(e) if e.is_parse() => e,
            other => return other,
        };
        let Ok(text) = std::fs::read_to_string(self.dir.join(name)) else { return Err(failed) };
        let Some(rewritten) = editions::source::rewrite(&text) else { return Err(failed) };
        let file = File::from_source(name, &rewritten.text);
        if let Ok(mut list) = self.rewritten.0.lock() {
            list.push((name.to_string(), rewritten));
        }
        file
    }
}

/// Compiled `bytes` marked as edition `edition` (`2023`, `2024`) again.
fn as_edition(bytes: &[u8], edition: &str) -> Result<Vec<u8>, String> {
    let number = match edition {
        "2023" => 1000,
        "2024" => 1001,
        other => return Err(format!("edition \"{other}\": strain reads editions 2023 and 2024")),
    };
    let pool = DescriptorPool::global();
    let desc = pool.get_message_by_name("google.protobuf.FileDescriptorProto").ok_or("no descriptor.proto")?;
    let mut file = DynamicMessage::decode(desc, bytes).map_err(|e| e.to_string())?;
    file.set_field_by_name("syntax", Value::String("editions".into()));
    file.set_field_by_name("edition", Value::EnumNumber(number));
    Ok(file.encode_to_vec())
}

/// protox's error as `file.proto:12:5: message` (1-based line and column, as compilers print
/// them), from the span its diagnostic carries; `file.proto: message` when it has none.
/// Its `Display` alone has no position, and its `Debug` is not a contract. In an editions file
/// the span is in the text protox read: its column is mapped back to the source's.
fn one_line(err: &protox::Error, rewritten: &Rewrites) -> String {
    use miette::Diagnostic;
    let mut text = err.to_string();
    let mut cause = std::error::Error::source(err);
    while let Some(c) = cause {
        text = format!("{text}: {c}");
        cause = c.source();
    }
    let text = text.replace(['\n', '\r'], " ");
    // Where two declarations clash, the later one (the last label) is the one to fix.
    let label = err.labels().and_then(|labels| {
        let labels: Vec<_> = labels.collect();
        labels.iter().find(|l| l.primary()).or(labels.last()).cloned()
    });
    let span = err.source_code().zip(label.clone()).and_then(|(src, label)| src.read_span(label.inner(), 0, 0).ok());
    let file = span.as_ref().and_then(|s| s.name().map(str::to_owned)).or_else(|| err.file().map(str::to_owned));
    let rewrite = file.as_deref().and_then(|f| rewritten.get(f));
    match (&file, span) {
        (Some(file), Some(span)) => {
            let column = match (rewrite, &label) {
                (Some(r), Some(label)) => {
                    let at = label.offset().min(r.text.len());
                    let line_start = r.text[..at].rfind('\n').map_or(0, |n| n + 1);
                    r.original(at).saturating_sub(r.original(line_start))
                }
                _ => span.column(),
            };
            format!("{file}:{}:{}: {text}", span.line() + 1, column + 1)
        }
        (Some(file), None) if !text.contains(file.as_str()) => format!("{file}: {text}"),
        _ => text,
    }
}

/// A protoset (`--protoset`): a binary `FileDescriptorSet`, as `protoc --descriptor_set_out`
/// or `buf build -o` writes it. Imports it lacks may only be well-known types.
pub fn from_protoset(path: &Path) -> Result<DescriptorPool, SchemaError> {
    let shown = path.display().to_string();
    let bad = |reason: String| SchemaError::Protoset { path: shown.clone(), reason };
    let bytes = std::fs::read(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
    let set = FileSet::decode(bytes.as_slice())
        .map_err(|e| bad(format!("not a binary FileDescriptorSet ({})", first_line(&e.to_string()))))?;
    if set.file.is_empty() {
        return Err(bad("not a binary FileDescriptorSet (it holds no files)".into()));
    }
    from_files(&set.file, &format!("--protoset {shown}"))
}

/// A `FileDescriptorSet` with each file left serialized, so a file's custom options survive
/// into the pool (decoding to `prost_types` first would drop them).
#[derive(Clone, PartialEq, prost::Message)]
struct FileSet {
    #[prost(bytes = "vec", repeated, tag = "1")]
    file: Vec<Vec<u8>>,
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// A pool of serialized `FileDescriptorProto`s (a server's reflection answers, a protoset's
/// files), given in any order and possibly repeated: each is added after the files it imports;
/// an import nobody supplied is taken from prost-reflect's well-known types when it is one.
/// `from` names the source in errors.
pub fn from_files(files: &[Vec<u8>], from: &str) -> Result<DescriptorPool, SchemaError> {
    let fail = |reason: String| SchemaError::Files { from: from.to_string(), reason };
    // By name; the first copy of a file wins (servers repeat the imports each answer needs).
    let mut known: BTreeMap<String, (FileDescriptorProto, Vec<u8>)> = BTreeMap::new();
    for (i, bytes) in files.iter().enumerate() {
        let file = FileDescriptorProto::decode(bytes.as_slice())
            .map_err(|e| fail(format!("file {} is not a FileDescriptorProto ({e})", i + 1)))?;
        let name = file.name().to_string();
        if name.is_empty() {
            return Err(fail(format!("file {} has no name", i + 1)));
        }
        // prost-reflect 0.16 reads proto2 and proto3 only (an editions file makes it panic):
        // editions are lowered to their equivalent first.
        let (file, bytes) = match file.syntax() {
            "" | "proto2" | "proto3" => (file, bytes.clone()),
            "editions" => {
                let lowered = editions::lower(bytes).map_err(|e| fail(format!("{name}: {e}")))?;
                let file = FileDescriptorProto::decode(lowered.as_slice()).map_err(|e| fail(format!("{name}: {e}")))?;
                (file, lowered)
            }
            other => return Err(fail(format!("{name} has syntax \"{other}\", which is not protobuf's"))),
        };
        known.entry(name).or_insert_with(|| (file, bytes));
    }
    let wkt = DescriptorPool::global();
    let names: Vec<String> = known.keys().cloned().collect();
    let mut order = Vec::new();
    let mut state: HashMap<String, Visit> = HashMap::new();
    for name in &names {
        visit(name, None, &mut known, &wkt, &mut state, &mut order).map_err(fail)?;
    }
    let mut pool = DescriptorPool::new();
    for name in order {
        let Some((_, bytes)) = known.get(&name) else { continue };
        decode_guarded(&mut pool, bytes).map_err(|e| fail(format!("{name}: {e}")))?;
    }
    Ok(pool)
}

/// Adds one serialized file to `pool`. prost-reflect panics on some descriptors it does not
/// expect (a peer's reflection answer is anyone's bytes): the panic is caught, kept off stderr,
/// and said as an error, so a bad schema stays one line and exit 2. This runs before any load,
/// on the thread that parses the flags, so swapping the panic hook touches no other work.
fn decode_guarded(pool: &mut DescriptorPool, bytes: &[u8]) -> Result<(), String> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| pool.decode_file_descriptor_proto(bytes)));
    std::panic::set_hook(hook);
    match outcome {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("a descriptor strain's schema reader cannot take".into()),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Visit {
    Open,
    Done,
}

/// Depth-first: `name`'s imports, then `name`, appended to `order`.
fn visit(
    name: &str,
    importer: Option<&str>,
    known: &mut BTreeMap<String, (FileDescriptorProto, Vec<u8>)>,
    wkt: &DescriptorPool,
    state: &mut HashMap<String, Visit>,
    order: &mut Vec<String>,
) -> Result<(), String> {
    match state.get(name) {
        Some(Visit::Done) => return Ok(()),
        Some(Visit::Open) => return Err(format!("{name} imports itself through {}", importer.unwrap_or(name))),
        None => {}
    }
    if !known.contains_key(name) {
        let Some(file) = wkt.get_file_by_name(name) else {
            return Err(format!("{} imports {name}, which is missing", importer.unwrap_or("a file")));
        };
        let proto = file.file_descriptor_proto().clone();
        let bytes = proto.encode_to_vec();
        known.insert(name.to_string(), (proto, bytes));
    }
    state.insert(name.to_string(), Visit::Open);
    let deps = known.get(name).map(|(p, _)| p.dependency.clone()).unwrap_or_default();
    for dep in &deps {
        visit(dep, Some(name), known, wkt, state, order)?;
    }
    state.insert(name.to_string(), Visit::Done);
    order.push(name.to_string());
    Ok(())
}

/// The pool's services by full name, sorted (for error lines and `--list`-style output).
pub fn services(pool: &DescriptorPool) -> Vec<String> {
    let mut names: Vec<String> = pool.services().map(|s| s.full_name().to_string()).collect();
    names.sort();
    names
}

/// Which side streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MethodKind {
    /// One request, one response.
    Unary,
    /// One request, a stream of responses.
    ServerStreaming,
    /// A stream of requests, one response.
    ClientStreaming,
    /// Streams both ways.
    Bidi,
}

/// The method a run calls.
#[derive(Debug, Clone)]
pub struct Method {
    /// The HTTP/2 `:path`: `/pkg.Service/Method`.
    pub path: String,
    /// The request message type.
    pub input: MessageDescriptor,
    /// The response message type.
    pub output: MessageDescriptor,
    /// The response message type as `--check` decodes it (strings that need not be UTF-8 as
    /// bytes: see [`editions::checked`]).
    pub checked: MessageDescriptor,
    /// Which side streams.
    pub kind: MethodKind,
}

impl Method {
    fn of(m: &MethodDescriptor) -> Method {
        let kind = match (m.is_client_streaming(), m.is_server_streaming()) {
            (false, false) => MethodKind::Unary,
            (false, true) => MethodKind::ServerStreaming,
            (true, false) => MethodKind::ClientStreaming,
            (true, true) => MethodKind::Bidi,
        };
        Method {
            path: format!("/{}/{}", m.parent_service().full_name(), m.name()),
            input: m.input(),
            output: m.output(),
            checked: editions::checked(&m.output()),
            kind,
        }
    }
}

/// Splits `--call` into (service, method): `pkg.Service/Method`, or ghz's `pkg.Service.Method`
/// (a leading `/`, as in the HTTP/2 path, is allowed too).
pub fn split_call(call: &str) -> Result<(&str, &str), SchemaError> {
    let name = call.strip_prefix('/').unwrap_or(call);
    let at = name.rfind('/').or_else(|| name.rfind('.'));
    match at {
        Some(i) if i > 0 && i + 1 < name.len() && !name[..i].contains('/') => Ok((&name[..i], &name[i + 1..])),
        _ => Err(SchemaError::BadCall(call.to_string())),
    }
}

/// The method `call` names (`pkg.Service/Method` or `pkg.Service.Method`) in `pool`.
pub fn find_method(pool: &DescriptorPool, call: &str) -> Result<Method, SchemaError> {
    let (service, method) = split_call(call)?;
    let Some(s) = pool.get_service_by_name(service) else {
        return Err(SchemaError::UnknownService { name: service.to_string(), known: services(pool) });
    };
    let found = s.methods().find(|m| m.name() == method);
    match found {
        Some(m) => Ok(Method::of(&m)),
        None => Err(SchemaError::UnknownMethod {
            service: service.to_string(),
            method: method.to_string(),
            known: s.methods().map(|m| m.name().to_string()).collect(),
        }),
    }
}

#[cfg(test)]
mod tests;
