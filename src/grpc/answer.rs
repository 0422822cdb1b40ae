//! Judging a completed HTTP/2 response as a gRPC answer: its HTTP status, the `grpc-status` it
//! ended with (in the trailers, or in the headers of a Trailers-Only response), and its
//! messages, framed and (with `--check`) decoded as the method's output type.

use prost_reflect::{DynamicMessage, MessageDescriptor};

use super::status::Code;
use super::wire::{Decoder, Encoding, MAX_MESSAGE};
use crate::grpc::counts::GrpcCounts;
use crate::http::response::Captured;

/// What a response was, as a gRPC answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// An HTTP status other than 200: not a gRPC answer.
    Http(u16),
    /// A 200 response without a `grpc-status`.
    NoStatus,
    /// The call ended with this status.
    Status(Code),
    /// OK, but a message was badly framed or did not decode as the output type.
    BadMessage,
}

impl Verdict {
    /// Whether the call succeeded.
    pub fn ok(self) -> bool {
        self == Verdict::Status(Code::Ok)
    }
}

/// Judges a response (`captured` holds its headers, trailers included, and body) and counts
/// it, its messages and their bytes in `counts`.
pub fn judge(
    status: u16,
    captured: Option<&Captured>,
    check: Option<&MessageDescriptor>,
    counts: &mut GrpcCounts,
) -> Verdict {
    if status != 200 {
        counts.http_errors += 1;
        return Verdict::Http(status);
    }
    let Some(captured) = captured else {
        counts.missing_status += 1;
        return Verdict::NoStatus;
    };
    let mut well_formed = true;
    let mut decoder = Decoder::new(MAX_MESSAGE);
    decoder.encoding(Encoding::of_fields(&captured.headers));
    let framed = decoder.feed(&captured.body, &mut |message| {
        counts.received(message.len() as u64);
        if let Some(output) = check {
            well_formed &= DynamicMessage::decode(output.clone(), message).is_ok();
        }
    });
    well_formed &= framed.is_ok() && decoder.finish().is_ok();
    // The trailers come after the headers: the last grpc-status is the call's.
    let code = captured.headers.iter().rev().find(|(n, _)| n == b"grpc-status").map(|(_, v)| Code::of_trailer(v));
    match code {
        None | Some(None) => {
            counts.missing_status += 1;
            Verdict::NoStatus
        }
        Some(Some(code)) => {
            counts.codes[code] += 1;
            if code == Code::Ok && !well_formed {
                counts.bad_messages += 1;
                return Verdict::BadMessage;
            }
            Verdict::Status(code)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grpc::wire::frame;

    fn answer(headers: &[(&str, &str)], messages: &[&[u8]]) -> Captured {
        let mut body = Vec::new();
        for m in messages {
            frame(m, &mut body);
        }
        let headers = headers.iter().map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec())).collect();
        Captured { headers, body }
    }

    #[test]
    fn each_answer_is_counted_once_by_what_it_was() {
        let mut c = GrpcCounts::default();
        let ok = answer(&[("content-type", "application/grpc"), ("grpc-status", "0")], &[b"abc", b"de"]);
        assert_eq!(judge(200, Some(&ok), None, &mut c), Verdict::Status(Code::Ok));
        assert_eq!((c.messages_received, c.message_bytes_received), (2, 5));
        // Trailers-Only: the status is in the only HEADERS.
        let only = answer(&[("grpc-status", "5"), ("grpc-message", "no such thing")], &[]);
        assert_eq!(judge(200, Some(&only), None, &mut c), Verdict::Status(Code::NotFound));
        assert_eq!(judge(503, Some(&only), None, &mut c), Verdict::Http(503));
        let none = answer(&[("content-type", "application/grpc")], &[b"x"]);
        assert_eq!(judge(200, Some(&none), None, &mut c), Verdict::NoStatus);
        let bad = answer(&[("grpc-status", "99")], &[]);
        assert_eq!(judge(200, Some(&bad), None, &mut c), Verdict::NoStatus);
        let mut cut = answer(&[("grpc-status", "0")], &[b"abcdef"]);
        cut.body.pop();
        assert_eq!(judge(200, Some(&cut), None, &mut c), Verdict::BadMessage);
        assert_eq!(c.codes[Code::Ok], 2);
        assert_eq!(c.codes[Code::NotFound], 1);
        assert_eq!((c.http_errors, c.missing_status, c.bad_messages), (1, 2, 1));
        assert_eq!(c.judged(), 6);
        assert_eq!(c.failed(), 5);
    }
}
