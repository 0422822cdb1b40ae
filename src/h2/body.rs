//! What a stream sends as its body ([`Body`]): bytes of its own, bytes shared by many streams,
//! or bytes made a frame at a time by a [`Source`]. [`super::session`]'s data callback reads
//! them; every access stays within the body's bounds, because it runs inside nghttp2.

use std::sync::Arc;

/// A body to send: owned, shared by every stream that sends the same bytes (the origin's
/// fixed response, so answering a request does not copy it), or made as it is sent.
pub enum Body {
    /// Bytes of this stream alone.
    Owned(Vec<u8>),
    /// Bytes shared with other streams.
    Shared(Arc<[u8]>),
    /// `len` bytes made a frame at a time (a large synthetic document never exists whole).
    /// With `cut` below `len`, the stream is reset (INTERNAL_ERROR) once `cut` bytes are out:
    /// a response that breaks off, as an aborting server's does.
    Made {
        /// Makes the bytes.
        source: Box<dyn Source>,
        /// The body's length, as announced.
        len: u64,
        /// Where sending stops; `len` for a whole body.
        cut: u64,
    },
}

/// Makes the bytes of a [`Body::Made`].
pub trait Source: Send {
    /// Writes the body's bytes from `offset` into all of `out`. Runs inside an nghttp2
    /// callback, so it must not panic (an unwind cannot cross the C frames: it aborts).
    fn fill(&mut self, offset: u64, out: &mut [u8]);
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Body({} bytes)", self.len())
    }
}

impl Body {
    pub(super) fn len(&self) -> u64 {
        match self {
            Body::Owned(v) => v.len() as u64,
            Body::Shared(a) => a.len() as u64,
            Body::Made { len, .. } => *len,
        }
    }

    /// Where sending stops.
    pub(super) fn end(&self) -> u64 {
        match self {
            Body::Made { cut, len, .. } => (*cut).min(*len),
            _ => self.len(),
        }
    }

    /// Writes the bytes from `offset` into all of `out` (within [`Body::end`]).
    pub(super) fn fill(&mut self, offset: u64, out: &mut [u8]) {
        let from = usize::try_from(offset).unwrap_or(usize::MAX);
        match self {
            Body::Owned(v) => out.copy_from_slice(&v[from..from + out.len()]),
            Body::Shared(a) => out.copy_from_slice(&a[from..from + out.len()]),
            Body::Made { source, .. } => source.fill(offset, out),
        }
    }
}

impl From<Vec<u8>> for Body {
    fn from(v: Vec<u8>) -> Body {
        Body::Owned(v)
    }
}

impl From<Arc<[u8]>> for Body {
    fn from(a: Arc<[u8]>) -> Body {
        Body::Shared(a)
    }
}
