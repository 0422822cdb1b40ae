//! HTTPS against a real nginx with a self-signed certificate.

use crate::harness::{strain, Nginx};

#[test]
fn self_signed_server_needs_insecure_and_says_so() {
    let mut nginx = Nginx::start("keepalive_requests 1000000; location / { return 200 \"secure\\n\"; }", true);
    let url = format!("https://127.0.0.1:{}/", nginx.port);

    let refused = strain(&["-t", "1", "-c", "1", "-d", "300ms", &url]);
    assert_eq!(refused.num("/requests"), 0);
    assert!(refused.num("/errors/connect") >= 1);
    assert!(refused.stderr.contains("use --insecure"), "{}", refused.stderr);

    let ok = strain(&["-t", "1", "-c", "4", "-d", "1s", "--insecure", &url]);
    nginx.stop();
    let requests = ok.num("/requests");
    assert!(requests > 100, "{:?}", ok.json);
    assert_eq!(ok.num("/errors/connect"), 0);
    assert_eq!(ok.num("/connections_opened"), 4);
    // nginx logged every request strain counted, all 200.
    let log = nginx.access_log();
    let answered = log.iter().filter(|&&(status, _)| status == 200).count() as u64;
    assert_eq!(answered, requests);
}
