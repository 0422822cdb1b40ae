//! Access log tests: lines as nginx, Apache and Traffic Server write them, read into exact
//! records; layouts parsed from each dialect; detection of the presets; bad lines.

use std::ops::ControlFlow;

use super::{detect, read, LogFormat, MAX_LINE_BYTES};
use crate::replay::read::Item;
use crate::replay::record::{BadRecord, Body, Record, Response};

use crate::replay::read::testing::AT_US as AT;

/// Every item `layout` reads from `text`.
fn read_all(layout: &LogFormat, text: &[u8]) -> Vec<Item> {
    crate::replay::read::testing::items(&crate::replay::read::Format::Log(layout.clone()), text)
        .expect("reading from memory does not fail")
}

/// The one record `layout` reads from `line`.
fn one(layout: &LogFormat, line: &str) -> Record {
    match read_all(layout, line.as_bytes()).as_slice() {
        [Ok(record)] => record.clone(),
        other => panic!("{line:?}: {other:?}"),
    }
}

/// The one bad record's reason.
fn why(layout: &LogFormat, line: &str) -> String {
    match read_all(layout, format!("{line}\n").as_bytes()).as_slice() {
        [Err(bad)] => bad.why.clone(),
        other => panic!("{line:?}: {other:?}"),
    }
}

fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect()
}

/// A response as a log records it: a status and perhaps a body's size, no header.
pub(super) fn response(status: u16, body: Body) -> Option<Response> {
    Some(Response { status, headers: vec![], body })
}

/// The record the first line gives for `request` (`METHOD target`) at `start_us`, from `client`,
/// answered `response`.
pub(super) fn logged(
    start_us: i64,
    whole_second: bool,
    request: &str,
    client: Option<&str>,
    response: Option<Response>,
) -> Record {
    let (method, target) = request.split_once(' ').unwrap_or_else(|| panic!("no target in {request:?}"));
    Record {
        start_us,
        whole_second,
        method: method.into(),
        target: target.into(),
        client: client.map(Into::into),
        response,
        line: 1,
        ..Record::default()
    }
}

/// nginx writes a quote in a value as `\x22`.
const NGINX_COMBINED_LINE: &str = r#"203.0.113.7 - - [26/Nov/2026:10:52:58 +0000] "GET /index.html?q=1 HTTP/1.1" 200 612 "https://example.com/" "Mozilla/5.0 \x22quoted\x22 (X11)""#;

fn nginx_combined_record() -> Record {
    Record {
        headers: headers(&[("Referer", "https://example.com/"), ("User-Agent", "Mozilla/5.0 \"quoted\" (X11)")]),
        ..logged(AT, true, "GET /index.html?q=1", Some("203.0.113.7"), response(200, Body::Size(612)))
    }
}

#[test]
fn nginx_combined_line_reads_with_the_preset_and_with_nginx_own_layout() {
    assert_eq!(one(&LogFormat::combined(), NGINX_COMBINED_LINE), nginx_combined_record());
    let nginx = LogFormat::parse(
        r#"$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent""#,
    )
    .unwrap();
    assert_eq!(nginx.describe(), "nginx log_format");
    assert_eq!(one(&nginx, NGINX_COMBINED_LINE), nginx_combined_record());
}

#[test]
fn apache_combined_line_unescapes_and_drops_dashes() {
    // Apache writes `\"` and `\\`; `-` is no referer and, for %b, no body.
    let line =
        r#"192.0.2.1 - frank [26/Nov/2026:11:52:58 +0100] "GET /a%20b HTTP/1.0" 304 - "-" "curl/8.5 \"x\" \\ y""#;
    let record = one(&LogFormat::combined(), line);
    let user_agent = headers(&[("User-Agent", r#"curl/8.5 "x" \ y"#)]);
    let want = logged(AT, true, "GET /a%20b", Some("192.0.2.1"), response(304, Body::None));
    assert_eq!(record, Record { headers: user_agent, ..want });
}

#[test]
fn nginx_msec_is_the_end_and_request_time_gives_the_start() {
    let layout = LogFormat::parse(r#"$msec $request_time $connection "$request""#).unwrap();
    let record = one(&layout, r#"1795690378.250 0.125 42 "POST /api/v1/items HTTP/1.1""#);
    let want = logged(AT + 125_000, false, "POST /api/v1/items", None, None);
    assert_eq!(record, Record { connection: Some("42".into()), ..want });
}

#[test]
fn nginx_time_local_is_the_end_too() {
    let layout = LogFormat::parse(r#"[$time_local] $request_time "$request""#).unwrap();
    let record = one(&layout, r#"[26/Nov/2026:10:52:58 +0000] 1.500 "GET / HTTP/1.1""#);
    assert_eq!((record.start_us, record.whole_second), (AT - 1_500_000, true));
    // Unquoted, `$time_local`'s own space does not end it.
    let layout = LogFormat::parse("$time_local $status $request_uri").unwrap();
    let record = one(&layout, "26/Nov/2026:11:52:58 +0100 200 /x?y");
    assert_eq!((record.start_us, record.target.as_str()), (AT, "/x?y"));
}

#[test]
fn apache_t_is_the_start_and_d_is_not_taken_off() {
    let layout = LogFormat::parse(r#"%h %l %u %t \"%r\" %>s %b %D"#).unwrap();
    assert_eq!(layout.describe(), "Apache LogFormat");
    let record =
        one(&layout, r#"198.51.100.4 - - [26/Nov/2026:10:52:58 +0000] "GET /search?q=x HTTP/1.1" 200 1024 1534"#);
    assert_eq!(record, logged(AT, true, "GET /search?q=x", Some("198.51.100.4"), response(200, Body::Size(1024))));
}

#[test]
fn apache_end_times_and_fractions() {
    let layout = LogFormat::parse(r#"%{end:msec}t %D "%r""#).unwrap();
    let record = one(&layout, r#"1795690378250 125000 "GET / HTTP/1.1""#);
    assert_eq!((record.start_us, record.whole_second), (AT + 125_000, false));

    let layout = LogFormat::parse(r#"%{%d/%b/%Y:%H:%M:%S %z}t.%{msec_frac}t %{ms}T %m %U%q %{Host}i"#).unwrap();
    let record = one(&layout, "26/Nov/2026:10:52:58 +0000.250 3 GET /p?a=1 example.com");
    assert_eq!((record.start_us, record.whole_second), (AT + 250_000, false));
    assert_eq!((record.target.as_str(), record.headers), ("/p?a=1", headers(&[("Host", "example.com")])));

    let layout = LogFormat::parse(r#"%{sec}t %{us}T "%r""#).unwrap();
    assert_eq!(one(&layout, r#"1795690378 7 "GET / HTTP/1.1""#).start_us, AT);
}

#[test]
fn ats_squid_lines_start_at_cqtq() {
    // cqtq is "the time at which the client request was received": ttms is not taken off.
    let miss = "1795690378.123 45 192.0.2.9 TCP_MISS/200 1432 GET http://example.com/img.png?v=2 - DIRECT/203.0.113.5 image/png";
    let answered = response(200, Body::Size(1432));
    let want = logged(AT + 123_000, false, "GET http://example.com/img.png?v=2", Some("192.0.2.9"), answered);
    assert_eq!(one(&LogFormat::squid(), miss), want);
    let hit =
        "1795690379.000 0 192.0.2.9 TCP_MEM_HIT/304 212 GET http://example.com/ - NONE/- text/html; charset=utf-8";
    let record = one(&LogFormat::squid(), hit);
    assert_eq!((record.start_us, record.response), (AT + 1_000_000, response(304, Body::Size(212))));
}

#[test]
fn ats_custom_layout_with_a_header() {
    let layout = LogFormat::parse("%<cqtq> %<ttms> %<cqhm> %<pquc> %<{Host}cqh>").unwrap();
    assert_eq!(layout.describe(), "ATS log format");
    let record = one(&layout, "1795690378.500 20 HEAD http://origin.internal/x?y=1 www.example.com");
    let want = logged(AT + 500_000, false, "HEAD http://origin.internal/x?y=1", None, None);
    assert_eq!(record, Record { headers: headers(&[("Host", "www.example.com")]), ..want });
    // A path recorded with the URL makes the target origin-form; ATS writes it without its `/`.
    let layout = LogFormat::parse(r#"%<cqts> %<cqup> "%<{User-Agent}cqh>" %<{Content-Length}cqh>"#).unwrap();
    let record = one(&layout, r#"1795690378 img/a.png "Mozilla "x"" 10"#);
    assert_eq!(record.target, "/img/a.png");
    assert_eq!(record.method, "GET");
    // ATS does not escape quotes: the field ends at the quote the text after it starts with.
    assert_eq!(record.headers, headers(&[("User-Agent", r#"Mozilla "x""#)]));
    assert_eq!((record.body, record.whole_second), (Body::Size(10), true));
}

#[test]
fn detects_each_preset() {
    let common = r#"192.0.2.1 - - [26/Nov/2026:10:52:58 +0000] "GET / HTTP/1.1" 200 5"#;
    let squid = "1795690378.123 45 192.0.2.9 TCP_MISS/200 1432 GET http://example.com/ - DIRECT/203.0.113.5 text/html";
    assert_eq!(detect(NGINX_COMBINED_LINE), Some(LogFormat::combined()));
    assert_eq!(detect(&format!("{NGINX_COMBINED_LINE}\r\n")), Some(LogFormat::combined()));
    assert_eq!(detect(common), Some(LogFormat::common()));
    assert_eq!(detect(squid), Some(LogFormat::squid()));
    assert_eq!(detect(r#"1795690378.250 0.125 42 "GET / HTTP/1.1""#), None);
    assert_eq!(detect("{\"time\": 1}"), None);
    assert_eq!(detect(""), None);
}

#[test]
fn bad_lines_are_bad_records_with_their_line_numbers() {
    let missing_user = r#"203.0.113.7 - [26/Nov/2026:10:52:58 +0000] "GET / HTTP/1.1" 200 612 "-" "curl/8""#;
    let text = format!("{NGINX_COMBINED_LINE}\n{missing_user}\n\n   \n{NGINX_COMBINED_LINE}\n");
    let items = read_all(&LogFormat::combined(), text.as_bytes());
    assert_eq!(items.len(), 3);
    assert_eq!(items[0], Ok(nginx_combined_record()));
    // The field where matching stopped, the text there and the line's start.
    assert_eq!(
        items[1],
        Err(BadRecord::unmatched(
            2,
            r#"does not match the combined layout at %u: "[26/Nov/2026:10:52:58 +0000] \"GET / HTTP…" in "203.0.113.7 - [26/Nov/2026:10:52:58 +000…""#
        ))
    );
    assert_eq!(items[2], Ok(Record { line: 5, ..nginx_combined_record() }));
}

#[test]
fn bad_values_say_which() {
    let combined = LogFormat::combined();
    let bad_time = r#"192.0.2.1 - - [26/Nov/2026:25:52:58 +0000] "GET / HTTP/1.1" 200 5 "-" "-""#;
    assert_eq!(why(&combined, bad_time), r#"bad time "26/Nov/2026:25:52:58 +0000""#);
    let tls_probe = r#"192.0.2.1 - - [26/Nov/2026:10:52:58 +0000] "\x16\x03\x01" 400 150 "-" "-""#;
    assert_eq!(why(&combined, tls_probe), r#"not an HTTP request line: "\u{16}\u{3}\u{1}""#);
    let bad_status = r#"192.0.2.1 - - [26/Nov/2026:10:52:58 +0000] "GET / HTTP/1.1" OK 5 "-" "-""#;
    assert_eq!(why(&combined, bad_status), r#"bad status "OK""#);
    let extra = format!("{NGINX_COMBINED_LINE} \"1.2.3.4\"");
    assert_eq!(
        why(&combined, &extra),
        r#"does not match the combined layout at %{User-Agent}i: "Mozilla/5.0 \\x22quoted\\x22 (X11)\" \"1.2.3…" in "203.0.113.7 - - [26/Nov/2026:10:52:58 +0…""#
    );
    let squid_no_time = "- 45 192.0.2.9 TCP_MISS/200 1432 GET http://example.com/ - DIRECT/- text/html";
    assert_eq!(why(&LogFormat::squid(), squid_no_time), "no time");
}

#[test]
fn request_bodies_are_their_content_length() {
    let layout = LogFormat::parse(r#"$time_iso8601 "$request" $status $content_length "$http_content_type""#).unwrap();
    let record = one(&layout, r#"2026-11-26T10:52:58+00:00 "POST /upload HTTP/1.1" 201 5120 "application/json""#);
    let want = logged(AT, true, "POST /upload", None, response(201, Body::None));
    let content_type = headers(&[("Content-Type", "application/json")]);
    assert_eq!(record, Record { headers: content_type, body: Body::Size(5120), ..want });
    let layout = LogFormat::parse(r#"%t "%r" %>s %b "%{Content-Length}i""#).unwrap();
    let head = one(&layout, r#"[26/Nov/2026:10:52:58 +0000] "HEAD /big HTTP/1.1" 200 0 "-""#);
    assert_eq!((head.method.as_str(), head.body, head.response), ("HEAD", Body::None, response(200, Body::None)));
    let post = one(&layout, r#"[26/Nov/2026:10:52:58 +0000] "POST /form HTTP/1.1" 302 - "17""#);
    assert_eq!((post.method.as_str(), post.body, post.headers), ("POST", Body::Size(17), vec![]));
    let layout = LogFormat::parse(r#"%t "%r" %{Content-Length}i"#).unwrap();
    assert_eq!(why(&layout, r#"[26/Nov/2026:10:52:58 +0000] "POST / HTTP/1.1" lots"#), r#"bad content length "lots""#);
}

#[test]
fn crlf_and_bytes_that_are_not_utf8() {
    let mut text = format!("{NGINX_COMBINED_LINE}\r\n").into_bytes();
    text.extend_from_slice(
        b"203.0.113.7 - - [26/Nov/2026:10:52:58 +0000] \"GET / HTTP/1.1\" 200 1 \"-\" \"caf\xe9\"\r\n",
    );
    let items = read_all(&LogFormat::combined(), &text);
    assert_eq!(items[0], Ok(nginx_combined_record()));
    let record = items[1].clone().unwrap();
    assert_eq!((record.line, record.headers), (2, headers(&[("User-Agent", "caf\u{fffd}")])));
    // nginx's `\xHH` escapes of UTF-8 read back as the characters.
    let escaped = r#"203.0.113.7 - - [26/Nov/2026:10:52:58 +0000] "GET /caf\xC3\xA9 HTTP/1.1" 200 1 "-" "-""#;
    assert_eq!(one(&LogFormat::combined(), escaped).target, "/café");
}

#[test]
fn a_line_too_long_is_skipped_not_held() {
    let mut text = vec![b'a'; MAX_LINE_BYTES + 10];
    text.push(b'\n');
    text.extend_from_slice(NGINX_COMBINED_LINE.as_bytes());
    let items = read_all(&LogFormat::combined(), &text);
    assert_eq!(items.len(), 2);
    assert_eq!(items[0], Err(BadRecord::unmatched(1, format!("line longer than {MAX_LINE_BYTES} bytes"))));
    assert_eq!(items[1], Ok(Record { line: 2, ..nginx_combined_record() }));
}

#[test]
fn stops_when_the_sink_breaks() {
    let text = format!("{NGINX_COMBINED_LINE}\n{NGINX_COMBINED_LINE}\n");
    let mut seen = 0;
    read(&LogFormat::combined(), &mut text.as_bytes(), &mut |_| {
        seen += 1;
        ControlFlow::Break(())
    })
    .unwrap();
    assert_eq!(seen, 1);
}

#[test]
fn names_and_pasted_configs_parse() {
    for (spec, described) in
        [("combined", "combined"), ("common", "common"), ("squid", "squid"), ("Combined", "combined")]
    {
        assert_eq!(LogFormat::parse(spec).unwrap().describe(), described);
    }
    assert_eq!(LogFormat::parse("combined"), Ok(LogFormat::combined()));
    // Apache's `\"` as written in its config, or the quote it stands for.
    assert_eq!(LogFormat::parse(r#"%h %l %u %t "%r" %>s %b"#), LogFormat::parse(r#"%h %l %u %t \"%r\" %>s %b"#));

    let nginx_conf = r#"log_format main '$remote_addr - $remote_user [$time_local] "$request" '
                      '$status $body_bytes_sent "$http_referer" '
                      '"$http_user_agent" "$http_x_forwarded_for"';"#;
    let layout = LogFormat::parse(nginx_conf).unwrap();
    let line = format!("{NGINX_COMBINED_LINE} \"198.51.100.1, 10.0.0.1\"");
    let record = one(&layout, &line);
    assert_eq!(record.headers.last(), Some(&("X-Forwarded-For".to_string(), "198.51.100.1, 10.0.0.1".to_string())));

    let apache_conf = r#"LogFormat "%h %l %u %t \"%r\" %>s %b" common"#;
    assert_eq!(
        one(
            &LogFormat::parse(apache_conf).unwrap(),
            r#"1.2.3.4 - - [26/Nov/2026:10:52:58 +0000] "GET / HTTP/1.1" 200 5"#
        )
        .target,
        "/"
    );

    let ats_yaml = "format: '%<cqtq> %<cqhm> %<pquc>'";
    assert_eq!(one(&LogFormat::parse(ats_yaml).unwrap(), "1795690378.000 GET http://a/b").target, "http://a/b");

    let braced = LogFormat::parse("${msec} ${request_method} ${uri}$is_args$args ${host}").unwrap();
    let record = one(&braced, "1795690378.000 PUT /p?q=1 example.com");
    assert_eq!((record.method.as_str(), record.target.as_str()), ("PUT", "/p?q=1"));
    assert_eq!(record.headers, headers(&[("Host", "example.com")]));
}

#[test]
fn layouts_that_cannot_work_are_refused() {
    assert_eq!(LogFormat::parse("%h %Z %t %r"), Err("unknown Apache directive %Z".into()));
    assert!(LogFormat::parse("$msec $uri$args").unwrap_err().contains("$uri and $args have nothing between them"));
    assert!(LogFormat::parse("$remote_addr $request").unwrap_err().starts_with("the layout has no time"));
    assert!(LogFormat::parse("%<cqtq> %<chi>").unwrap_err().starts_with("the layout has no request"));
    assert!(LogFormat::parse("%t %r %{ks}T").unwrap_err().starts_with("unknown unit \"ks\""));
    assert!(LogFormat::parse("%{%e %b}t %r").unwrap_err().starts_with("strftime conversion %e"));
    assert_eq!(LogFormat::parse("  "), Err("the log format is empty".into()));
    assert!(LogFormat::parse("%t %r %").unwrap_err().contains("ends inside a % directive"));
}

#[test]
fn a_layout_longer_than_the_stack_holds_reads() {
    let extra: String = (0..40).map(|i| format!(" $v{i}")).collect();
    let layout = LogFormat::parse(&format!(r#"$msec "$request"{extra} $status"#)).unwrap();
    let values: String = (0..40).map(|i| format!(" {i}")).collect();
    let record = one(&layout, &format!(r#"1795690378.000 "GET /long HTTP/1.1"{values} 204"#));
    assert_eq!((record.target.as_str(), record.response), ("/long", response(204, Body::None)));
}
