//! HTTPS against a real nginx with a self-signed certificate.

use crate::harness::{args, self_signed, strain, strain_under, Nginx, Origin};

#[test]
fn self_signed_server_needs_insecure_and_says_so() {
    let mut nginx = Nginx::start("keepalive_requests 1000000; location / { return 200 \"secure\\n\"; }", true);
    let url = format!("https://127.0.0.1:{}/", nginx.port);

    let refused = strain(&["-t", "1", "-c", "1", "-d", "300ms", &url]);
    assert_eq!(refused.num("/requests"), 0);
    assert!(refused.num("/errors/connect") >= 1);
    assert!(refused.stderr.contains("use --insecure"), "{}", refused.stderr);

    // nginx's certificate made a root: checked, and taken without --insecure.
    let trusted = format!("SSL_CERT_FILE={}", nginx.dir.path().join("cert.pem").display());
    let checked = strain_under(&["env", &trusted], &["-t", "1", "-c", "1", "-n", "20", &url]);
    assert_eq!(checked.code, 0, "{}", checked.stderr);
    assert_eq!(checked.num("/requests"), 20);

    let ok = strain(&["-t", "1", "-c", "4", "-d", "1s", "--insecure", &url]);
    nginx.stop();
    let requests = ok.num("/requests");
    assert!(requests > 100, "{:?}", ok.json);
    assert_eq!(ok.num("/errors/connect"), 0);
    assert_eq!(ok.num("/connections_opened"), 4);
    // nginx logged every request strain counted, all 200.
    let log = nginx.access_log();
    let answered = log.iter().filter(|&&(status, _)| status == 200).count() as u64;
    assert_eq!(answered, requests + 20);
}

/// With the server's certificate among the roots (`SSL_CERT_FILE`, as OpenSSL and curl read
/// it), strain checks it without `--insecure`, against the address in the URL, which the
/// certificate must name (an `IP:` alternative name).
#[test]
fn a_trusted_certificate_is_checked_for_the_name_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    // One certificate naming 127.0.0.1 and "localhost", served on 127.0.0.1 and on 127.0.0.2.
    let (cert, key) = self_signed(dir.path(), &["127.0.0.1", "localhost"]);
    let tls = ["--tls", "--cert", &cert, "--key", &key];
    let (named, unnamed) = (Origin::start_on("127.0.0.1:0", &tls), Origin::start_on("127.0.0.2:0", &tls));
    let trusted = format!("SSL_CERT_FILE={cert}");

    let by_address = strain_under(&["env", &trusted], &args(&format!("-t 1 -c 2 -n 40 {}", named.url())));
    assert_eq!(by_address.code, 0, "{}", by_address.stderr);
    assert_eq!(by_address.num("/requests"), 40);
    assert_eq!(by_address.num("/errors/connect"), 0);

    let other = strain_under(&["env", &trusted], &args(&format!("-t 1 -c 1 -n 4 {}", unnamed.url())));
    assert_eq!(other.num("/requests"), 0);
    assert!(other.num("/errors/connect") >= 1);
    assert!(other.stderr.contains("TLS certificate rejected"), "{}", other.stderr);

    // Another certificate as the only root: the origin's is not trusted at all.
    let elsewhere = tempfile::tempdir().unwrap();
    let (stranger, _) = self_signed(elsewhere.path(), &["127.0.0.1"]);
    let untrusted =
        strain_under(&["env", &format!("SSL_CERT_FILE={stranger}")], &args(&format!("-t 1 -c 1 -n 4 {}", named.url())));
    assert_eq!(untrusted.num("/requests"), 0);
    assert!(untrusted.stderr.contains("use --insecure"), "{}", untrusted.stderr);
}
