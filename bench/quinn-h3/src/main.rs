//! `quinn-h3-loop CONNECTIONS STREAMS SECONDS URL`: closed-loop GETs of URL over HTTP/3 on one
//! thread, CONNECTIONS QUIC connections each keeping STREAMS requests in flight, for SECONDS;
//! prints `requests N seconds S` (complete responses, and the time from the first connection's
//! handshake to the last response). The certificate is not checked (strain's `-k`).
//!
//! It exists to measure quinn against quiche on strain's own terms (bench/h3.py, issue 44): one
//! thread, a current-thread runtime, nothing done with a response but reading it to its end.

use std::net::ToSocketAddrs;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

/// Accepts any certificate but still checks the handshake's signatures (as `-k` does).
#[derive(Debug)]
struct Insecure(Arc<CryptoProvider>);

impl ServerCertVerifier for Insecure {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
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

type Failure = Box<dyn std::error::Error + Send + Sync>;

fn main() -> Result<(), Failure> {
    let args: Vec<String> = std::env::args().collect();
    let [_, conns, streams, secs, url] = args.as_slice() else {
        return Err("usage: quinn-h3-loop CONNECTIONS STREAMS SECONDS URL".into());
    };
    let uri: http::Uri = url.parse()?;
    let (conns, streams): (usize, usize) = (conns.parse()?, streams.parse()?);
    let run_for = Duration::from_secs_f64(secs.parse()?);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let (done, took) = runtime.block_on(run(uri, conns, streams, run_for))?;
    println!("requests {done} seconds {:.3}", took.as_secs_f64());
    Ok(())
}

async fn run(uri: http::Uri, conns: usize, streams: usize, run_for: Duration) -> Result<(u64, Duration), Failure> {
    let host = uri.host().ok_or("no host")?.to_string();
    let addr = (host.as_str(), uri.port_u16().unwrap_or(443)).to_socket_addrs()?.next().ok_or("no address")?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(Insecure(provider)))
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    let quic = quinn::crypto::rustls::QuicClientConfig::try_from(tls)?;
    let local = if addr.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" };
    let mut endpoint = quinn::Endpoint::client(local.parse()?)?;
    endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(quic)));

    let done = Arc::new(AtomicU64::new(0));
    let mut loops = Vec::new();
    let mut drivers = Vec::new();
    let started = Instant::now();
    let until = started + run_for;
    for _ in 0..conns {
        let conn = endpoint.connect(addr, &host)?.await?;
        let (mut driver, send) = h3::client::new(h3_quinn::Connection::new(conn)).await?;
        drivers.push(tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await }));
        for _ in 0..streams {
            let (mut send, uri, done) = (send.clone(), uri.clone(), done.clone());
            loops.push(tokio::spawn(async move {
                while Instant::now() < until {
                    let req = http::Request::get(uri.clone()).body(())?;
                    let mut stream = send.send_request(req).await?;
                    stream.finish().await?;
                    let _response = stream.recv_response().await?;
                    while stream.recv_data().await?.is_some() {}
                    done.fetch_add(1, Ordering::Relaxed);
                }
                Ok::<(), Failure>(())
            }));
        }
    }
    for l in loops {
        l.await??;
    }
    let (n, took) = (done.load(Ordering::Relaxed), started.elapsed());
    endpoint.close(0u32.into(), b"done");
    for d in drivers {
        d.abort();
    }
    Ok((n, took))
}
