//! The logs of load balancers and proxies, each in the one layout its documentation gives:
//! HAProxy's `option httplog`, Envoy's default access log format, and the AWS Application and
//! Classic Load Balancers' access logs. They are space-separated fields with quoted strings, so
//! each is a built-in layout ([`super::dialect::builtin_layout`]) matched as any other; a newer
//! writer's fields after the documented ones are ignored.

use super::dialect::builtin_layout;
use super::fields::Escape;
use super::Layout;

/// HAProxy's `option httplog`, as its configuration manual (8.2.3) gives it:
/// `%ci:%cp [%tr] %ft %b/%s %TR/%Tw/%Tc/%Tr/%Ta %ST %B %CC %CS %tsc %ac/%fc/%bc/%sc/%rc
/// %sq/%bq %hr %hs %{+Q}r`. `%tr` is when the request's first byte came, in the server's
/// local time to the millisecond; the captured headers (`{…}`) are there only when configured,
/// so everything between the queues and the request is one ignored field; HAProxy writes `"`,
/// `#` and unprintable bytes as `#HH` there, so the request ends at the next quote. A syslog
/// header before it (`Feb  6 12:14:14 host haproxy[14389]: `) is skipped.
const HAPROXY: &str = r#"{client:port} [{start:clf}] {-} {-}/{-} {-}/{-}/{-}/{-}/{-} {status} {size} {-} {-} {-} {-}/{-}/{-}/{-}/{-} {-}/{-} {-}"{request}""#;

/// Envoy's default format (its access log documentation, "Default format string"):
/// `[%START_TIME%] "%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%"
/// %RESPONSE_CODE% %RESPONSE_FLAGS% %BYTES_RECEIVED% %BYTES_SENT% %DURATION%
/// %RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% "%REQ(X-FORWARDED-FOR)%" "%REQ(USER-AGENT)%"
/// "%REQ(X-REQUEST-ID)%" "%REQ(:AUTHORITY)%" "%UPSTREAM_HOST%"`. `%START_TIME%` is when the
/// request started, to the millisecond.
const ENVOY: &str =
    r#"[{start:iso}] "{request}" {status} {-} {-} {size} {ms} {-} "{-}" "{User-Agent}" "{-}" "{host}" "{-}""#;

/// The AWS Application Load Balancer's entry (its "Access log entries" documentation): `type
/// time elb client:port target:port request_processing_time target_processing_time
/// response_processing_time elb_status_code target_status_code received_bytes sent_bytes
/// "request" "user_agent" ssl_cipher ssl_protocol target_group_arn "trace_id" "domain_name"
/// "chosen_cert_arn" matched_rule_priority request_creation_time …`. `time` is when the response
/// was sent, `request_creation_time` when the request came: the start. The fields after it
/// (actions, redirect, error reason, classification…) grew over the years and are ignored.
const ALB: &str = r#"{-} {end:iso} {-} {client:port} {-} {-} {-} {-} {status} {-} {-} {size} "{request}" "{User-Agent}" {-} {-} {-} "{-}" "{-}" "{-}" {-} {start:iso}"#;

/// The AWS Classic Load Balancer's entry: `timestamp elb client:port backend:port
/// request_processing_time backend_processing_time response_processing_time elb_status_code
/// backend_status_code received_bytes sent_bytes "request" "user_agent" ssl_cipher
/// ssl_protocol`; `timestamp` is when the request came. A TCP listener's entry has `"- - - "`
/// for its request: no request.
const ELB: &str =
    r#"{start:iso} {-} {client:port} {-} {-} {-} {-} {status} {-} {-} {size} "{request}" "{User-Agent}" {-} {-}"#;

/// HAProxy's `option httplog`.
pub(super) fn haproxy() -> Layout {
    Layout { syslog: true, ..builtin_layout(HAPROXY, Escape::Hash) }
}

/// Envoy's default access log format.
pub(super) fn envoy() -> Layout {
    Layout { rest_ignored: true, ..builtin_layout(ENVOY, Escape::None) }
}

/// The AWS Application Load Balancer's access log.
pub(super) fn alb() -> Layout {
    Layout { rest_ignored: true, ..builtin_layout(ALB, Escape::None) }
}

/// The AWS Classic Load Balancer's access log.
pub(super) fn elb() -> Layout {
    Layout { rest_ignored: true, ..builtin_layout(ELB, Escape::None) }
}
