//! The run's TLS client configuration (rustls), built once and shared by every connection.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};

/// What every TLS connection of a run shares.
#[derive(Debug, Clone)]
pub struct TlsSetup {
    /// The client configuration (roots or no verification, ALPN).
    pub config: Arc<ClientConfig>,
    /// The name sent in SNI and checked against the certificate.
    pub server_name: ServerName<'static>,
}

impl TlsSetup {
    /// Builds a client that offers `alpn` (e.g. `http/1.1`, or `h2`) and verifies the server
    /// against the Mozilla roots, or accepts any certificate when `insecure`.
    pub fn new(host: &str, insecure: bool, alpn: &[&[u8]]) -> Result<TlsSetup, rustls::Error> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone()).with_safe_default_protocol_versions()?;
        let mut config = if insecure {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AcceptAnyCert(provider)))
                .with_no_client_auth()
        } else {
            let roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
            builder.with_root_certificates(roots).with_no_client_auth()
        };
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        let server_name = ServerName::try_from(host.to_string())
            .map_err(|_| rustls::Error::General(format!("'{host}' is not a valid TLS server name")))?;
        Ok(TlsSetup { config: Arc::new(config), server_name })
    }
}

/// Connects once to `addr` and completes a TLS handshake offering `setup`'s ALPN protocols;
/// returns the one the server chose (`None`: it chose none). For https runs without a
/// protocol flag: the run then speaks what the server prefers.
pub fn negotiate(
    addr: std::net::SocketAddr,
    setup: &TlsSetup,
    timeout: std::time::Duration,
) -> std::io::Result<Option<Vec<u8>>> {
    match connect_blocking(addr, Some(setup), timeout)? {
        Blocking::Tls(t) => Ok(t.conn.alpn_protocol().map(<[u8]>::to_vec)),
        Blocking::Plain(_) => Ok(None),
    }
}

/// A blocking connection for a question asked before the load (an ALPN choice, a WebSocket
/// upgrade checked): reads and writes time out after the `timeout` it was made with.
pub enum Blocking {
    /// Plain TCP.
    Plain(std::net::TcpStream),
    /// TLS over TCP, handshake done.
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, std::net::TcpStream>>),
}

/// Connects to `addr` (TLS with `setup`, handshake completed) within `timeout` per step.
pub fn connect_blocking(
    addr: std::net::SocketAddr,
    setup: Option<&TlsSetup>,
    timeout: std::time::Duration,
) -> std::io::Result<Blocking> {
    let mut sock = std::net::TcpStream::connect_timeout(&addr, timeout)?;
    sock.set_read_timeout(Some(timeout))?;
    sock.set_write_timeout(Some(timeout))?;
    let Some(setup) = setup else { return Ok(Blocking::Plain(sock)) };
    let mut conn = rustls::ClientConnection::new(setup.config.clone(), setup.server_name.clone())
        .map_err(|e| std::io::Error::other(describe(&e)))?;
    while conn.is_handshaking() {
        conn.complete_io(&mut sock)?;
    }
    Ok(Blocking::Tls(Box::new(rustls::StreamOwned::new(conn, sock))))
}

impl std::io::Read for Blocking {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Blocking::Plain(s) => s.read(buf),
            Blocking::Tls(t) => t.read(buf),
        }
    }
}

impl std::io::Write for Blocking {
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

/// `--insecure`: trusts any certificate but still checks handshake signatures, so the session
/// is a real TLS session with the server's key.
#[derive(Debug)]
struct AcceptAnyCert(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Explains a TLS failure in one line, pointing at `--insecure` when the certificate is the cause.
pub fn describe(err: &rustls::Error) -> String {
    match err {
        rustls::Error::InvalidCertificate(e) => {
            format!("TLS certificate rejected ({e:?}); for a self-signed or private test server, use --insecure")
        }
        rustls::Error::AlertReceived(rustls::AlertDescription::NoApplicationProtocol) => {
            "the server speaks none of the protocols offered by ALPN (--http2 offers only h2; without it, http/1.1)"
                .to_string()
        }
        e => format!("TLS error: {e}"),
    }
}
