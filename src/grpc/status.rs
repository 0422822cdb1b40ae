//! gRPC status codes, as the `grpc-status` trailer (or a Trailers-Only response's header)
//! carries them: reports name each by its canonical name, counts index by its number.

pub use super::counts::{GrpcCode as Code, GrpcCodes as Codes};

impl Code {
    /// The code a `grpc-status` value names; `None` for anything but a number 0-16 (a status
    /// outside them is a protocol error of the server's, counted apart).
    pub fn of_trailer(value: &[u8]) -> Option<Code> {
        let text = std::str::from_utf8(value).ok()?.trim();
        if text.is_empty() || text.len() > 2 || !text.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let n: usize = text.parse().ok()?;
        Code::ALL.get(n).copied()
    }

    /// The status a call ends with when the server resets its stream with HTTP/2 error `code`
    /// (gRPC's HTTP/2 mapping; a CANCEL after the call's deadline passed is the deadline's, as
    /// grpc-go's own client reads it).
    pub fn of_reset(code: u32, deadline_passed: bool) -> Code {
        match code {
            0x7 => Code::Unavailable,
            0x8 if deadline_passed => Code::DeadlineExceeded,
            0x8 => Code::Cancelled,
            0xb => Code::ResourceExhausted,
            0xc => Code::PermissionDenied,
            _ => Code::Internal,
        }
    }

    /// The name people know it by in gRPC's documents (`DEADLINE_EXCEEDED`).
    pub fn canonical(self) -> String {
        self.name().to_ascii_uppercase()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailers_name_their_codes() {
        assert_eq!(Code::COUNT, 17);
        assert_eq!(Code::of_trailer(b"0"), Some(Code::Ok));
        assert_eq!(Code::of_trailer(b"4"), Some(Code::DeadlineExceeded));
        assert_eq!(Code::of_trailer(b" 14 "), Some(Code::Unavailable));
        assert_eq!(Code::of_trailer(b"16"), Some(Code::Unauthenticated));
        for bad in [&b""[..], b"17", b"-1", b"OK", b"007", b"1e1", b"\xff"] {
            assert_eq!(Code::of_trailer(bad), None, "{bad:?}");
        }
        assert_eq!(Code::DeadlineExceeded.canonical(), "DEADLINE_EXCEEDED");
        assert_eq!(Code::of_reset(0x8, true), Code::DeadlineExceeded);
        assert_eq!(Code::of_reset(0x8, false), Code::Cancelled);
        assert_eq!(Code::of_reset(0x7, false), Code::Unavailable);
        assert_eq!(Code::of_reset(0x2, true), Code::Internal);
        assert_eq!(Code::NotFound.name(), "not_found");
    }
}
