//! Each built-in layout detected without flags and read, on lines shaped as its documentation
//! gives them; lines that hold no request skipped by cause; a cut-off last line; junk that
//! must not panic.

use super::tests::{logged, response};
use super::{detect, LogFormat, PRESETS};
use crate::replay::read::testing::{h, items, AT_US as AT};
use crate::replay::read::{Format, Item};
use crate::replay::record::{BadKind, Body, Record};

/// The layout detected for `text` and what it reads from it.
fn detected(text: &str) -> (String, Vec<Item>) {
    let format = detect(text).unwrap_or_else(|| panic!("not detected: {text:?}"));
    let name = format.describe();
    (name, items(&Format::Log(format), text.as_bytes()).expect("reading from memory does not fail"))
}

/// The layout's name and its one record.
fn one(text: &str) -> (String, Record) {
    match detected(text) {
        (name, items) if items.len() == 1 => (name, items[0].clone().unwrap_or_else(|bad| panic!("{bad:?}"))),
        other => panic!("{other:?}"),
    }
}

/// The kinds of the records a text yields (`None` for a record).
fn kinds(format: &LogFormat, text: &str) -> Vec<Option<BadKind>> {
    let read = items(&Format::Log(format.clone()), text.as_bytes()).unwrap();
    read.into_iter().map(|item| item.err().map(|bad| bad.kind)).collect()
}

const COMBINED: &str = r#"203.0.113.7 - - [26/Nov/2026:10:52:58 +0000] "GET /index.html?q=1 HTTP/1.1" 200 612 "https://example.com/" "Mozilla/5.0 (X11)""#;

#[test]
fn nginx_and_apache_combined_and_common() {
    let (name, record) = one(COMBINED);
    assert_eq!(name, "combined");
    assert_eq!((record.method.as_str(), record.target.as_str(), record.start_us), ("GET", "/index.html?q=1", AT));
    // Apache's combined writes a user and escapes a quote as `\"`.
    let apache = r#"192.0.2.1 - frank [26/Nov/2026:11:52:58 +0100] "POST /form HTTP/1.0" 302 - "-" "curl \"8\"""#;
    let (name, record) = one(apache);
    assert_eq!((name.as_str(), record.start_us, record.headers), ("combined", AT, vec![h("User-Agent", "curl \"8\"")]));
    let (name, record) = one(r#"192.0.2.1 - - [26/Nov/2026:10:52:58 +0000] "GET /apache_pb.gif HTTP/1.0" 200 2326"#);
    assert_eq!((name.as_str(), record.response), ("common", response(200, Body::Size(2326))));
}

#[test]
fn nginx_main_and_combined_with_more_fields() {
    // nginx's packaged `main`: combined and "$http_x_forwarded_for".
    let main = format!("{COMBINED} \"198.51.100.1, 10.0.0.1\"");
    let (name, record) = one(&main);
    assert_eq!((name.as_str(), record.target.as_str()), ("combined+", "/index.html?q=1"));
    assert_eq!(record.headers, vec![h("Referer", "https://example.com/"), h("User-Agent", "Mozilla/5.0 (X11)")]);
    // `$request_time $upstream_response_time $host`, quoted or not.
    assert_eq!(one(&format!("{COMBINED} 0.005 \"0.004\" example.com")).0, "combined+");
    // Traefik's CLF: combined, then the request count, router, server URL and duration.
    let traefik = r#"192.168.1.1 - - [26/Nov/2026:10:52:58 +0000] "GET /api HTTP/1.1" 200 1234 "-" "curl/7.68.0" 1 "my-router@docker" "http://172.17.0.2:80" 3ms"#;
    let (name, record) = one(traefik);
    assert_eq!(
        (name.as_str(), record.target.as_str(), record.client.as_deref()),
        ("combined+", "/api", Some("192.168.1.1"))
    );
    // A file of combined lines with one extra field on some is combined+ throughout.
    let mixed = format!("{COMBINED}\n{main}\n{COMBINED}\n");
    let (name, items) = detected(&mixed);
    assert_eq!((name.as_str(), items.iter().filter(|i| i.is_ok()).count()), ("combined+", 3));
}

#[test]
fn apache_vhost_combined() {
    let line =
        r#"www.example.com:443 192.0.2.1 - - [26/Nov/2026:10:52:58 +0000] "GET / HTTP/1.1" 200 3477 "-" "curl/8.5.0""#;
    let (name, record) = one(line);
    assert_eq!(name, "vhost_combined");
    assert_eq!(record.client.as_deref(), Some("192.0.2.1"));
    assert_eq!(record.headers, vec![h("Host", "www.example.com"), h("User-Agent", "curl/8.5.0")]);
    // A combined file is not taken for vhost_combined.
    assert_eq!(one(COMBINED).0, "combined");
}

#[test]
fn any_utc_offset_and_fractions() {
    for (stamp, at) in [
        ("26/Nov/2026:16:22:58 +0530", AT),
        ("26/Nov/2026:00:07:58 -1045", AT),
        ("27/Nov/2026:00:52:58 +1400", AT),
        ("26/Nov/2026:10:52:58.250 +0000", AT + 250_000),
    ] {
        let line = format!(r#"192.0.2.1 - - [{stamp}] "GET / HTTP/1.1" 200 5 "-" "-""#);
        assert_eq!(one(&line).1.start_us, at, "{stamp}");
    }
    let (_, record) = one(&COMBINED.replace("10:52:58 +0000", "10:52:58.250 +0000"));
    assert!(!record.whole_second);
}

#[test]
fn caddy_json() {
    // Caddy's documentation's example entry: `ts` is the end, `duration` seconds.
    let line = r#"{"level":"info","ts":1795690378.625,"logger":"http.log.access","msg":"handled request","request":{"remote_ip":"127.0.0.1","remote_port":"41342","client_ip":"127.0.0.1","proto":"HTTP/2.0","method":"GET","host":"localhost","uri":"/a?b=1","headers":{"User-Agent":["curl/7.82.0-DEV"],"Accept":["*/*"],"Cookie":["REDACTED"]},"tls":{"resumed":false,"version":772,"cipher_suite":4865,"proto":"h2","server_name":"example.com"}},"bytes_read":0,"user_id":"","duration":0.5,"size":10900,"status":200,"resp_headers":{"Server":["Caddy"]}}"#;
    let (name, record) = one(line);
    assert_eq!(name, "caddy");
    let want = logged(AT + 125_000, false, "GET /a?b=1", Some("127.0.0.1"), response(200, Body::Size(10900)));
    let headers = vec![h("Host", "localhost"), h("User-Agent", "curl/7.82.0-DEV"), h("Accept", "*/*")];
    assert_eq!(record, Record { headers, ..want });
    // Caddy's own messages in the same output hold no request.
    let startup = r#"{"level":"info","ts":1795690378.1,"logger":"http","msg":"server running","name":"srv0"}"#;
    let text = format!("{startup}\n{line}\n");
    assert_eq!(kinds(&detect(&text).unwrap(), &text), vec![Some(BadKind::NoRequest), None]);
}

#[test]
fn traefik_json() {
    let line = r#"{"ClientAddr":"192.168.1.10:54321","ClientHost":"192.168.1.10","ClientPort":"54321","ClientUsername":"-","DownstreamContentSize":19,"DownstreamStatus":200,"Duration":2520000,"OriginContentSize":19,"OriginDuration":2400000,"OriginStatus":200,"Overhead":120000,"RequestAddr":"whoami.example.com","RequestContentSize":0,"RequestCount":1,"RequestHost":"whoami.example.com","RequestMethod":"GET","RequestPath":"/api?x=1","RequestPort":"-","RequestProtocol":"HTTP/1.1","RequestScheme":"http","RetryAttempts":0,"RouterName":"whoami@docker","ServiceAddr":"172.17.0.3:80","ServiceName":"whoami@docker","ServiceURL":"http://172.17.0.3:80","StartLocal":"2026-11-26T11:52:58.250000000+01:00","StartUTC":"2026-11-26T10:52:58.250000000Z","entryPointName":"web","level":"info","msg":"","request_User-Agent":"curl/8.5.0","request_Authorization":"REDACTED","time":"2026-11-26T10:52:58Z"}"#;
    let (name, record) = one(line);
    assert_eq!(name, "traefik");
    assert_eq!((record.start_us, record.method.as_str(), record.target.as_str()), (AT + 250_000, "GET", "/api?x=1"));
    assert_eq!(record.headers, vec![h("Host", "whoami.example.com"), h("User-Agent", "curl/8.5.0")]);
    assert_eq!((record.client.as_deref(), record.response), (Some("192.168.1.10"), response(200, Body::Size(19))));
}

#[test]
fn haproxy_httplog_with_or_without_syslog_header() {
    // The configuration manual's example (8.2.3), then as `log stdout format raw` writes it.
    let syslog = r#"Feb  6 12:14:14 localhost haproxy[14389]: 10.0.1.2:33317 [26/Nov/2026:10:52:58.655] http-in static/srv1 10/0/30/69/109 200 2750 - - ---- 1/1/1/1/0 0/0 {1wt.eu} {} "GET /index.html HTTP/1.1""#;
    let (name, record) = one(syslog);
    assert_eq!(name, "haproxy");
    let want = logged(AT + 655_000, false, "GET /index.html", Some("10.0.1.2"), response(200, Body::Size(2750)));
    assert_eq!(record, want);
    let raw = r#"10.0.1.2:33317 [26/Nov/2026:10:52:58.655] http-in static/srv1 10/0/30/69/109 200 2750 - - ---- 1/1/1/1/0 0/0 "GET /a?b=#22#23 HTTP/1.1""#;
    let (name, record) = one(raw);
    assert_eq!((name.as_str(), record.target.as_str()), ("haproxy", "/a?b=\"#"));
    // A request HAProxy could not parse, and one the client aborted (`-1`).
    let bad = r#"10.0.1.2:33318 [26/Nov/2026:10:52:58.700] http-in http-in/<NOSRV> -1/-1/-1/-1/0 400 187 - - PR-- 1/1/0/0/0 0/0 "<BADREQ>""#;
    let aborted = r#"10.0.1.2:33319 [26/Nov/2026:10:52:58.800] http-in static/srv1 5/0/0/-1/6 -1 0 - - CD-- 1/1/0/0/0 0/0 "GET /gone HTTP/1.1""#;
    // RFC 5424's header, HAProxy's `format short` (a priority alone), an IPv6 client.
    let rfc5424 = format!("<134>1 2026-11-26T10:52:58.700000+00:00 lb haproxy 14389 - - {raw}");
    let (name, record) = one(&rfc5424);
    assert_eq!(
        (name.as_str(), record.target.as_str(), record.client.as_deref()),
        ("haproxy", "/a?b=\"#", Some("10.0.1.2"))
    );
    let short = format!("<134>{}", raw.replace("10.0.1.2:33317", "2001:db8::7:33317"));
    assert_eq!(one(&short).1.client.as_deref(), Some("2001:db8::7"));
    let text = format!("{raw}\n{bad}\n{aborted}\n");
    let (name, items) = detected(&text);
    assert_eq!(name, "haproxy");
    assert_eq!(items[1].clone().unwrap_err().kind, BadKind::NotHttp);
    assert_eq!(items[2].clone().unwrap().response, None);
}

#[test]
fn envoy_default_format() {
    // Envoy's documentation's example of its default format.
    let line = r#"[2026-11-26T10:52:58.310Z] "POST /api/v1/locations HTTP/2" 204 - 154 0 226 100 "10.0.35.28" "nsq2http" "cc21d9b0-cf5c-432b-8c7e-98aeb7988cd2" "locations" "tcp://10.0.2.1:80""#;
    let (name, record) = one(line);
    assert_eq!(name, "envoy");
    assert_eq!(
        (record.start_us, record.method.as_str(), record.target.as_str()),
        (AT + 310_000, "POST", "/api/v1/locations")
    );
    assert_eq!(record.headers, vec![h("Host", "locations"), h("User-Agent", "nsq2http")]);
    // A TCP proxy's entry has no request.
    let tcp = r#"[2026-11-26T10:52:59.000Z] "- - -" 0 - 10 20 5 - "-" "-" "-" "-" "10.0.2.1:80""#;
    let text = format!("{line}\n{tcp}\n");
    assert_eq!(kinds(&detect(&text).unwrap(), &text), vec![None, Some(BadKind::NoRequest)]);
}

#[test]
fn aws_application_and_classic_load_balancers() {
    // The ALB documentation's HTTP entry: the start is `request_creation_time`, not `time`.
    let alb = r#"http 2026-11-26T10:53:00.186641Z app/my-loadbalancer/50dc6c495c0c9188 192.168.131.39:2817 10.0.0.1:80 0.000 0.001 0.000 200 200 34 366 "GET http://www.example.com:80/ HTTP/1.1" "curl/7.46.0" - - arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/my-targets/73e2d6bc24d8a067 "Root=1-58337262-36d228ad5d99923122bbe354" "-" "-" 0 2026-11-26T10:52:58.364000Z "forward" "-" "-" "10.0.0.1:80" "200" "-" "-" TID_1234abcd5678ef90"#;
    let (name, record) = one(alb);
    assert_eq!(name, "alb");
    assert_eq!(
        (record.start_us, record.method.as_str(), record.target.as_str()),
        (AT + 364_000, "GET", "http://www.example.com:80/")
    );
    assert_eq!(
        (record.client.as_deref(), record.headers),
        (Some("192.168.131.39"), vec![h("User-Agent", "curl/7.46.0")])
    );
    // The classic ELB documentation's entry: its time is when the request came.
    let elb = r#"2026-11-26T10:52:58.945958Z my-loadbalancer 192.168.131.39:2817 10.0.0.1:80 0.000073 0.001048 0.000057 200 200 0 29 "GET http://www.example.com:80/ HTTP/1.1" "curl/7.38.0" - -"#;
    let (name, record) = one(elb);
    assert_eq!((name.as_str(), record.start_us, record.response), ("elb", AT + 945_958, response(200, Body::Size(29))));
    // A TCP listener's entry.
    let tcp = r#"2026-11-26T10:52:59.000000Z my-loadbalancer 192.168.131.39:2817 10.0.0.1:80 0.001069 0.000028 0.000041 - - 82 305 "- - - " "-" - -"#;
    let text = format!("{elb}\n{tcp}\n");
    assert_eq!(kinds(&detect(&text).unwrap(), &text), vec![None, Some(BadKind::NoRequest)]);
}

#[test]
fn w3c_iis_and_cloudfront() {
    let iis = "#Software: Microsoft Internet Information Services 10.0\n#Version: 1.0\n#Date: 2026-11-26 10:50:00\n\
               #Fields: date time s-ip cs-method cs-uri-stem cs-uri-query s-port cs-username c-ip cs(User-Agent) cs(Referer) sc-status sc-substatus sc-win32-status time-taken\n\
               2026-11-26 10:52:59 10.0.0.4 GET /index.html q=1 80 - 203.0.113.9 Mozilla/5.0+(Windows+NT+10.0) - 200 0 0 1000\n";
    let (name, record) = one(iis);
    assert_eq!(name, "w3c");
    // The time is the end; IIS's time-taken is in milliseconds.
    let want = logged(AT, true, "GET /index.html?q=1", Some("203.0.113.9"), response(200, Body::None));
    let headers = vec![h("User-Agent", "Mozilla/5.0 (Windows NT 10.0)")];
    assert_eq!(record, Record { headers, line: 5, ..want });
    // IIS writes its directives again when it restarts, maybe with other fields.
    let restarted = format!(
        "{iis}#Software: Microsoft Internet Information Services 10.0\n#Fields: time cs-method cs-uri-stem\n#Date: 2026-11-26 11:00:00\n10:53:00 HEAD /x\n"
    );
    let (_, items) = detected(&restarted);
    let last = items[1].clone().unwrap();
    assert_eq!((last.method.as_str(), last.target.as_str(), last.start_us), ("HEAD", "/x", AT + 2_000_000));

    // The CloudFront documentation's example: tab-separated, URL-encoded, seconds.
    let cloudfront = "#Version: 1.0\n#Fields: date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status cs(Referer) cs(User-Agent) cs-uri-query cs(Cookie) x-edge-result-type x-edge-request-id x-host-header cs-protocol cs-bytes time-taken x-forwarded-for ssl-protocol ssl-cipher x-edge-response-result-type cs-protocol-version fle-status fle-encrypted-fields c-port time-to-first-byte x-edge-detailed-result-type sc-content-type sc-content-len sc-range-start sc-range-end\n\
        2026-11-26\t10:52:59\tLAX1-C3\t392\t192.0.2.100\tGET\td111111abcdef8.cloudfront.net\t/index.html\t200\t-\tMozilla/5.0%20(Windows%20NT%2010.0)\tv=2\t-\tHit\tSOX4xwn4XV6Q4rgb7XiVGOHms_BGlTAC4KyHmureZmBNrjGdRLiNIQ==\twww.example.com\thttps\t23\t0.500\t-\tTLSv1.2\tECDHE-RSA-AES128-GCM-SHA256\tHit\tHTTP/2.0\t-\t-\t11040\t0.001\tHit\ttext/html\t78\t-\t-\n";
    let (name, record) = one(cloudfront);
    assert_eq!(name, "w3c");
    assert_eq!((record.start_us, record.target.as_str()), (AT + 500_000, "/index.html?v=2"));
    assert_eq!(record.headers, vec![h("Host", "www.example.com"), h("User-Agent", "Mozilla/5.0 (Windows NT 10.0)")]);
    assert_eq!(record.response, response(200, Body::Size(392)));
}

#[test]
fn squid_native_and_ats_squid() {
    // Squid's own log: the time is the end, the elapsed time right-aligned in 6 columns.
    let squid = "1795690378.779    179 192.168.0.224 TCP_MISS/200 411 GET http://www.google.com/ - DIRECT/173.194.37.104 text/html";
    let (name, record) = one(squid);
    assert_eq!(name, "squid-native");
    assert_eq!(
        (record.start_us, record.target.as_str(), record.client.as_deref()),
        (AT + 600_000, "http://www.google.com/", Some("192.168.0.224"))
    );
    let ats = "1795690378.123 45 192.0.2.9 TCP_MISS/200 1432 GET http://example.com/ - DIRECT/203.0.113.5 text/html";
    let (name, record) = one(ats);
    assert_eq!((name.as_str(), record.start_us), ("squid", AT + 123_000));
}

#[test]
fn lines_that_hold_no_request_are_skipped_by_cause() {
    let line = |request: &str| format!(r#"1.2.3.4 - - [26/Nov/2026:10:52:58 +0000] "{request}" 400 157 "-" "-""#);
    let lines = [
        (line("-"), Some(BadKind::NoRequest)),
        (line(""), Some(BadKind::NoRequest)),
        (line(r"\x16\x03\x01\x00t\x01\x00\x00p\x03\x01YF}"), Some(BadKind::NotHttp)),
        (line(r"Gh0st\xAD\x00\x00\x00\xE0\x00\x00\x00x\x9CKS``"), Some(BadKind::NotHttp)),
        (line("HELP"), Some(BadKind::NotHttp)),
        (line("batman"), Some(BadKind::NotHttp)),
        (line("145.ll|'|'|SGFj|'|'|WIN-JNAPIER0859|'|'|Win 7 Professional SP1 x64|'|'|No"), Some(BadKind::NotHttp)),
        (line("GET /a b HTTP/1.1"), Some(BadKind::NotHttp)),
        (line("GET index.html HTTP/1.1"), Some(BadKind::NotHttp)),
        (line("GET / HTTP/1.1"), None),
        (line("OPTIONS * HTTP/1.1"), None),
        (line("CONNECT example.com:443 HTTP/1.1"), None),
        (line("GET http://example.com/ HTTP/1.0"), None),
        (line("GET /"), None),
        ("not a log line at all".to_owned(), Some(BadKind::Unmatched)),
    ];
    let text: String = lines.iter().map(|(l, _)| format!("{l}\n")).collect();
    let want: Vec<_> = lines.iter().map(|(_, kind)| *kind).collect();
    assert_eq!(kinds(&LogFormat::combined(), &text), want);
    // A log whose first lines are all scanners' is still told by its layout, and one whose
    // first line is in no layout by the lines after it.
    assert_eq!(detect(&text), Some(LogFormat::combined()));
    assert_eq!(detect(&format!("\u{1}\u{2}garbage\n{COMBINED}\n{COMBINED}\n")), Some(LogFormat::combined()));
}

#[test]
fn a_cut_off_last_line_is_truncated_and_only_the_last() {
    let cut = &COMBINED[..COMBINED.len() - 20];
    let kinds_of = |text: &str| kinds(&LogFormat::combined(), text);
    assert_eq!(kinds_of(&format!("{COMBINED}\n{cut}")), vec![None, Some(BadKind::Truncated)]);
    // With its newline, or anywhere but last, it is a bad line.
    assert_eq!(kinds_of(&format!("{COMBINED}\n{cut}\n")), vec![None, Some(BadKind::Unmatched)]);
    assert_eq!(kinds_of(&format!("{cut}\n{COMBINED}")), vec![Some(BadKind::Unmatched), None]);
    // A whole last line without a newline is a record.
    assert_eq!(kinds_of(COMBINED), vec![None]);
    // JSON cut mid-object.
    let caddy = LogFormat::preset("caddy").unwrap();
    let entry = r#"{"level":"info","ts":1795690378.5,"logger":"http.log.access","msg":"handled request","request":{"method":"GET","uri":"/"},"status":200}"#;
    assert_eq!(kinds(&caddy, &format!("{entry}\n{}", &entry[..60])), vec![None, Some(BadKind::Truncated)]);
}

#[test]
fn a_given_layout_that_does_not_match_names_its_field_and_shows_the_line() {
    let layout = LogFormat::parse(r#"$remote_addr [$time_local] "$request" $status $request_time"#).unwrap();
    let text = "192.0.2.1 [26/Nov/2026:10:52:58 +0000] \"GET / HTTP/1.1\" 200\n";
    let read = items(&Format::Log(layout), text.as_bytes()).unwrap();
    let bad = read[0].clone().unwrap_err();
    assert_eq!(bad.kind, BadKind::Unmatched);
    assert_eq!(
        bad.why,
        r#"does not match the nginx log_format layout at $status: "200" in "192.0.2.1 [26/Nov/2026:10:52:58 +0000] \"…""#
    );
}

#[test]
fn unknown_text_is_not_detected() {
    for text in
        ["", "\n\n", "hello world", "{\"time\": 1}", "#Version: 1.0\n", r#"1795690378.250 0.125 42 "GET / HTTP/1.1""#]
    {
        assert_eq!(detect(text), None, "{text:?}");
    }
}

#[test]
fn junk_never_panics() {
    // Pieces of every layout's lines, cut and spliced at every point, and bytes a client sent.
    let samples = [
        COMBINED,
        r#"{"level":"info","ts":1.5,"logger":"http.log.access","request":{"method":"GET","uri":"/","headers":{"A":"b"}}}"#,
        r#"Feb  6 12:14:14 h haproxy[1]: 10.0.1.2:33317 [06/Feb/2009:12:14:14.655] a b/c 1/2/3/4/5 200 1 - - ---- 1/1/1/1/0 0/0 "GET / HTTP/1.1""#,
        "1286536308.779    180 192.168.0.224 TCP_MISS/200 411 GET http://www.google.com/ - DIRECT/1.2.3.4 text/html",
        "\u{feff}\u{1}\\x\\\"\"\"\t\t#Fields: date\n",
    ];
    let formats: Vec<LogFormat> = PRESETS.into_iter().filter_map(LogFormat::preset).collect();
    for sample in samples {
        for cut in (0..sample.len()).filter(|&i| sample.is_char_boundary(i)) {
            let (a, b) = sample.split_at(cut);
            for text in [a, b, &format!("{b}{a}"), &format!("{a}\\\"{b}"), &format!("{a}#Fields: x\n{b}")] {
                let _ = detect(text);
                for format in &formats {
                    let _ = items(&Format::Log(format.clone()), text.as_bytes());
                }
            }
        }
    }
}

#[test]
fn every_layout_is_a_format_name() {
    for name in PRESETS {
        assert_eq!(LogFormat::parse(name).unwrap().describe(), name);
        assert_eq!(LogFormat::parse(&name.to_ascii_uppercase()).unwrap().describe(), name);
    }
    // `--format w3c` reads its columns from the file's `#Fields:` line.
    let w3c = LogFormat::parse("w3c").unwrap();
    let text = "2026-11-26 10:52:57 GET /early\n#Fields: date time cs-method cs-uri-stem\n2026-11-26 10:52:58 GET /x\n";
    assert_eq!(kinds(&w3c, text), vec![Some(BadKind::Unmatched), None]);
}
