//! What a gRPC run counts besides requests and errors (the status codes are defined here;
//! `status.rs` reads them from trailers): calls by the status they ended with, the
//! ways a response is not a gRPC answer at all, and messages and their bytes each way. The type
//! is also a result's `grpc` section: its serde form is the document's.

use serde::{Deserialize, Serialize};

crate::stats::named::named! {
    /// A call's outcome (the canonical codes 0-16 of gRPC's status-codes document).
    pub enum GrpcCode {
        /// Not an error.
        Ok,
        /// The operation was cancelled, typically by the caller.
        Cancelled,
        /// Unknown error.
        Unknown,
        /// The client gave an invalid argument.
        InvalidArgument,
        /// The deadline expired before the operation could complete.
        DeadlineExceeded,
        /// Some requested entity was not found.
        NotFound,
        /// The entity the client tried to create already exists.
        AlreadyExists,
        /// The caller may not run the operation.
        PermissionDenied,
        /// A resource has been exhausted (a quota, the file system).
        ResourceExhausted,
        /// The system is not in a state the operation requires.
        FailedPrecondition,
        /// The operation was aborted (a concurrency conflict).
        Aborted,
        /// The operation was attempted past the valid range.
        OutOfRange,
        /// The operation is not implemented or supported.
        Unimplemented,
        /// An internal error.
        Internal,
        /// The service is currently unavailable (a transient condition).
        Unavailable,
        /// Unrecoverable data loss or corruption.
        DataLoss,
        /// The request does not have valid authentication credentials.
        Unauthenticated,
    }
}

crate::stats::named::by_name! {
    /// Calls by the status they ended with.
    pub struct GrpcCodes(GrpcCode, fallback GrpcCode::Unknown);
}

crate::stats::counts! {
    /// gRPC counts of one thread, or merged; in a result, written field by field in this order.
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
    pub struct GrpcCounts {
        /// Calls answered with a `grpc-status` (in the trailers, or a Trailers-Only response's
        /// headers), by code; written by name, only the codes seen.
        pub codes: GrpcCodes,
        /// Responses whose HTTP status was not 200 (not gRPC answers: no code is counted).
        pub http_errors: u64,
        /// 200 responses that ended without a `grpc-status`.
        pub missing_status: u64,
        /// OK calls whose messages were not well framed, or (`--check`) did not decode as the
        /// method's output type; and streamed calls (client streaming, bidi) reset for a bad
        /// message flag before any status.
        pub bad_messages: u64,
        /// Request messages sent.
        pub messages_sent: u64,
        /// Response messages received.
        pub messages_received: u64,
        /// Their bytes (without the 5-byte prefixes), sent.
        pub message_bytes_sent: u64,
        /// And received.
        pub message_bytes_received: u64,
    }
}

impl GrpcCounts {
    /// A request message of `bytes` (without its prefix) went out: every message sent, a
    /// unary call's or a stream's, is counted here.
    pub fn sent(&mut self, bytes: u64) {
        self.messages_sent += 1;
        self.message_bytes_sent += bytes;
    }

    /// A reply message of `bytes` arrived: every message received is counted here.
    pub fn received(&mut self, bytes: u64) {
        self.messages_received += 1;
        self.message_bytes_received += bytes;
    }

    /// Calls that did not succeed: a status other than OK, an HTTP error, a missing status, or
    /// a bad message.
    pub fn failed(&self) -> u64 {
        self.codes.sum() - self.codes[GrpcCode::Ok] + self.http_errors + self.missing_status + self.bad_messages
    }

    /// Responses judged as gRPC answers (anything a gRPC run completed).
    pub fn judged(&self) -> u64 {
        self.codes.sum() + self.http_errors + self.missing_status
    }
}
