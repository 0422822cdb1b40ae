//! The run's TLS client (BoringSSL, the library quiche's HTTP/3 already brings, so the binary
//! has one TLS stack), built once and shared by every connection; the system's trusted roots;
//! why a handshake failed, in one line; and the certificate a test server makes for itself.

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use boring::asn1::Asn1Time;
use boring::bn::{BigNum, MsbOption};
use boring::ec::{EcGroup, EcKey};
use boring::error::ErrorStack;
use boring::hash::MessageDigest;
use boring::nid::Nid;
use boring::pkey::PKey;
use boring::ssl::{
    HandshakeError, Ssl, SslContext, SslContextBuilder, SslMethod, SslMode, SslRef, SslStream, SslVerifyMode,
};
use boring::x509::extension::SubjectAlternativeName;
use boring::x509::verify::X509CheckFlags;
use boring::x509::{X509NameBuilder, X509};

/// Where Linux distributions keep their trusted certificates as one file, in the order looked
/// for (Debian and Ubuntu; Fedora, RHEL and CentOS; openSUSE; RHEL's source; Alpine and others):
/// the portable binary runs on all of them, and BoringSSL's own default (`/etc/ssl/cert.pem`)
/// exists on few.
const ROOT_BUNDLES: [&str; 5] = [
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/ca-bundle.pem",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/ssl/cert.pem",
];

/// The trusted certificates: the file `SSL_CERT_FILE` names (as OpenSSL and curl read it), or
/// the system's bundle.
fn system_roots() -> Option<PathBuf> {
    let named = std::env::var_os("SSL_CERT_FILE").map(PathBuf::from).filter(|p| p.is_file());
    named.or_else(|| ROOT_BUNDLES.iter().map(Path::new).find(|p| p.is_file()).map(Path::to_path_buf))
}

/// Why a TLS session could not be made or went wrong, as a user can act on it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlsError {
    /// The server's certificate was not trusted for the name asked for.
    #[error("TLS certificate rejected ({0}); for a self-signed or private test server, use --insecure")]
    Certificate(String),
    /// The server chose none of the ALPN protocols offered.
    #[error("the server speaks none of the protocols offered by ALPN (--http2 offers only h2; without it, http/1.1)")]
    NoProtocol,
    /// Anything else BoringSSL reported.
    #[error("TLS error: {0}")]
    Other(String),
}

impl TlsError {
    /// The failure of `ssl`'s session, `e` being what the last call returned: the certificate's
    /// verdict when it was refused, the alert or BoringSSL's reason otherwise.
    pub fn of(ssl: &SslRef, e: &boring::ssl::Error) -> TlsError {
        let reasons: Vec<&str> =
            e.ssl_error().map(|s| s.errors().iter().filter_map(|e| e.reason()).collect()).unwrap_or_default();
        if reasons.iter().any(|r| r.contains("CERTIFICATE_VERIFY_FAILED")) {
            let why = ssl.verify_result().err().map_or("not trusted", |e| e.error_string());
            return TlsError::Certificate(why.to_string());
        }
        if reasons.iter().any(|r| r.contains("NO_APPLICATION_PROTOCOL")) {
            return TlsError::NoProtocol;
        }
        match (reasons.is_empty(), e.io_error()) {
            (false, _) => TlsError::Other(reasons.join(", ").to_ascii_lowercase().replace('_', " ")),
            (true, Some(io)) => TlsError::Other(io.to_string()),
            (true, None) => TlsError::Other(format!("{:?}", e.code())),
        }
    }
}

impl From<ErrorStack> for TlsError {
    fn from(e: ErrorStack) -> TlsError {
        TlsError::Other(e.to_string())
    }
}

/// The key-exchange groups a client offers, the first with a key share.
const CLIENT_GROUPS: &str = "X25519:P-256:P-384";

/// A client context: strain's key-exchange groups, and the system's roots checked unless
/// `insecure`; over TCP and QUIC alike.
pub fn client_context(insecure: bool) -> Result<SslContextBuilder, ErrorStack> {
    // Not `SslConnector::builder`: it loads the default roots (`SSL_CERT_FILE`, 143
    // certificates parsed, about 1 MB of heap) even for `--insecure`, and again beside the
    // bundle set here. Its settings are BoringSSL's defaults but for these.
    let mut b = SslContextBuilder::new(SslMethod::tls())?;
    // Every write is a record, whole, which the wire takes at once.
    b.set_mode(SslMode::ENABLE_PARTIAL_WRITE | SslMode::ACCEPT_MOVING_WRITE_BUFFER);
    // BoringSSL's default first offer is X25519MLKEM768 with X25519 beside it: 7.6 KB of
    // ML-KEM private key a handshake in flight (7.6 MB while a thousand connections open),
    // a key generation and 1.2 KB more ClientHello, for a share most servers (OpenSSL
    // before 3.5, rustls with ring, nginx on those) drop. Offering it second instead would
    // cost servers that prefer it (Go's) a HelloRetryRequest every handshake. So strain
    // offers what wrk's OpenSSL and rustls offer.
    b.set_curves_list(CLIENT_GROUPS)?;
    if insecure {
        b.set_verify(SslVerifyMode::NONE);
    } else {
        b.set_verify(SslVerifyMode::PEER);
        match system_roots() {
            Some(roots) => b.set_ca_file(roots)?,
            // A system whose bundle is nowhere known: OpenSSL's directory of hashed
            // certificates (`SSL_CERT_DIR`), looked up as the handshake needs them.
            None => b.set_default_verify_paths()?,
        }
    }
    Ok(b)
}

/// What every TLS connection of a run shares.
#[derive(Clone)]
pub struct TlsSetup {
    /// The client context (roots or no verification, ALPN); cheap to clone, shared.
    context: SslContext,
    /// The name sent in SNI (not for an IP address) and checked against the certificate.
    host: String,
    /// `--insecure`: any certificate, for any name.
    insecure: bool,
}

impl std::fmt::Debug for TlsSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsSetup").field("host", &self.host).field("insecure", &self.insecure).finish()
    }
}

impl TlsSetup {
    /// Builds a client that offers `alpn` (e.g. `http/1.1`, or `h2`) and verifies the server
    /// against the system's roots, or accepts any certificate when `insecure` (the handshake's
    /// signature is still checked against the certificate's key: a real session with the
    /// server's key).
    pub fn new(host: &str, insecure: bool, alpn: &[&[u8]]) -> Result<TlsSetup, TlsError> {
        let mut b = client_context(insecure)?;
        let mut wire = Vec::new();
        for p in alpn {
            wire.push(u8::try_from(p.len()).map_err(|_| TlsError::Other("an ALPN name is too long".into()))?);
            wire.extend_from_slice(p);
        }
        b.set_alpn_protos(&wire)?;
        let host = host.trim_start_matches('[').trim_end_matches(']').to_string();
        Ok(TlsSetup { context: b.build(), host, insecure })
    }

    /// A new client session: SNI and the name checked, unless `--insecure`; its handshake is
    /// the first `connect`.
    pub fn session(&self) -> Result<Ssl, TlsError> {
        let mut ssl = Ssl::new(&self.context)?;
        let ip = self.host.parse::<IpAddr>();
        if ip.is_err() {
            ssl.set_hostname(&self.host)?;
        }
        if !self.insecure {
            let p = ssl.param_mut();
            p.set_hostflags(X509CheckFlags::NO_PARTIAL_WILDCARDS);
            match ip {
                Ok(ip) => p.set_ip(ip)?,
                Err(_) => p.set_host(&self.host)?,
            }
        }
        shed_config(&ssl);
        Ok(ssl)
    }
}

/// Lets BoringSSL free a session's copy of its configuration (certificate settings, ALPN
/// list, verify parameters) once the handshake is done: kilobytes a connection, which at
/// thousands of connections is most of what a TLS connection holds.
pub(crate) fn shed_config(ssl: &SslRef) {
    use foreign_types::ForeignTypeRef;
    // SAFETY: `ssl` is a live session; the call sets a flag on it and touches nothing else.
    unsafe { boring_sys::SSL_set_shed_handshake_config(ssl.as_ptr(), 1) };
}

/// Connects once to `addr` and completes a TLS handshake offering `setup`'s ALPN protocols;
/// returns the one the server chose (`None`: it chose none). For https runs without a
/// protocol flag: the run then speaks what the server prefers.
pub fn negotiate(addr: SocketAddr, setup: &TlsSetup, timeout: Duration) -> std::io::Result<Option<Vec<u8>>> {
    match connect_blocking(addr, Some(setup), timeout)? {
        Blocking::Tls(t) => Ok(t.ssl().selected_alpn_protocol().map(<[u8]>::to_vec)),
        Blocking::Plain(_) => Ok(None),
    }
}

/// A blocking connection for a question asked before the load (an ALPN choice, a WebSocket
/// upgrade checked, gRPC reflection): reads and writes time out after the `timeout` it was
/// made with.
pub enum Blocking {
    /// Plain TCP.
    Plain(std::net::TcpStream),
    /// TLS over TCP, handshake done.
    Tls(Box<SslStream<std::net::TcpStream>>),
}

/// Connects to `addr` (TLS with `setup`, handshake completed) within `timeout` per step; a
/// TLS failure is an error of kind `Other` whose inner error is the [`TlsError`].
pub fn connect_blocking(addr: SocketAddr, setup: Option<&TlsSetup>, timeout: Duration) -> std::io::Result<Blocking> {
    let sock = std::net::TcpStream::connect_timeout(&addr, timeout)?;
    sock.set_nodelay(true)?;
    sock.set_read_timeout(Some(timeout))?;
    sock.set_write_timeout(Some(timeout))?;
    match setup {
        None => Ok(Blocking::Plain(sock)),
        Some(setup) => handshake_blocking(sock, setup),
    }
}

/// Completes a TLS handshake over `sock` (its timeouts set): a TLS failure is an error of kind
/// `Other` whose inner error is the [`TlsError`], a timeout one of kind `TimedOut`.
pub fn handshake_blocking(sock: std::net::TcpStream, setup: &TlsSetup) -> std::io::Result<Blocking> {
    let ssl = setup.session().map_err(std::io::Error::other)?;
    match ssl.connect(sock) {
        Ok(s) => Ok(Blocking::Tls(Box::new(s))),
        Err(HandshakeError::Failure(mid)) => Err(std::io::Error::other(TlsError::of(mid.ssl(), mid.error()))),
        Err(HandshakeError::WouldBlock(_)) => Err(std::io::ErrorKind::TimedOut.into()),
        Err(HandshakeError::SetupFailure(e)) => Err(std::io::Error::other(TlsError::from(e))),
    }
}

impl Blocking {
    /// The TCP socket under it.
    pub fn socket(&self) -> &std::net::TcpStream {
        match self {
            Blocking::Plain(s) => s,
            Blocking::Tls(t) => t.get_ref(),
        }
    }

    /// The protocol the server chose by ALPN (TLS only).
    pub fn alpn(&self) -> Option<&[u8]> {
        match self {
            Blocking::Plain(_) => None,
            Blocking::Tls(t) => t.ssl().selected_alpn_protocol(),
        }
    }
}

impl Read for Blocking {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Blocking::Plain(s) => s.read(buf),
            Blocking::Tls(t) => t.read(buf),
        }
    }
}

impl Write for Blocking {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Blocking::Plain(s) => s.write(buf),
            Blocking::Tls(t) => t.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Blocking::Plain(s) => s.flush(),
            Blocking::Tls(t) => t.flush(),
        }
    }
}

/// A certificate and its key, PEM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PemPair {
    /// The certificate.
    pub cert: String,
    /// Its private key (PKCS#8).
    pub key: String,
}

/// A self-signed certificate for `names` (DNS names or IP addresses), a P-256 key, valid from
/// a day ago for ten years: what a test server (strain's origin) presents.
pub fn self_signed(names: &[&str]) -> Result<PemPair, ErrorStack> {
    let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1)?;
    let key = PKey::from_ec_key(EcKey::generate(&group)?)?;
    let mut name = X509NameBuilder::new()?;
    name.append_entry_by_nid(Nid::COMMONNAME, names.first().copied().unwrap_or("strain"))?;
    let name = name.build();
    let mut b = X509::builder()?;
    b.set_version(2)?;
    let mut serial = BigNum::new()?;
    serial.rand(127, MsbOption::MAYBE_ZERO, false)?;
    let serial = serial.to_asn1_integer()?;
    b.set_serial_number(&serial)?;
    b.set_subject_name(&name)?;
    b.set_issuer_name(&name)?;
    b.set_pubkey(&key)?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let day = 86_400;
    let (before, after) =
        (Asn1Time::from_unix(i64::try_from(now - day).unwrap_or(0))?, Asn1Time::days_from_now(3_650)?);
    b.set_not_before(&before)?;
    b.set_not_after(&after)?;
    let mut san = SubjectAlternativeName::new();
    for n in names {
        if n.parse::<IpAddr>().is_ok() {
            san.ip(n);
        } else {
            san.dns(n);
        }
    }
    let san = san.build(&b.x509v3_context(None, None))?;
    b.append_extension(&san)?;
    b.sign(&key, MessageDigest::sha256())?;
    let cert = String::from_utf8_lossy(&b.build().to_pem()?).into_owned();
    let key = String::from_utf8_lossy(&key.private_key_to_pem_pkcs8()?).into_owned();
    Ok(PemPair { cert, key })
}
