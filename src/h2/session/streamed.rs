//! Streams whose bodies are made and read over time (gRPC's streaming calls): the streamed mode
//! that reports a stream's head, DATA and end as they arrive, and bodies the owner pushes a
//! piece at a time and ends with END_STREAM or with trailers. The plain paths (a request or
//! response whose body is known when it is submitted) do not go through here.

use libnghttp2_sys as ng;

use super::{check, nv, read_body, H2Error, Session};
use crate::h2::pipe::{End, Pipe};

impl Session {
    /// Reports streams as they arrive from now on: a server gets [`Event::Head`] when a
    /// request's headers are in, [`Event::Body`] with each DATA frame's bytes and [`Event::End`]
    /// when the client ends its side (instead of one [`Event::Request`] at the end, its body
    /// dropped); a client gets each response header block as [`Event::Fields`] and its DATA as
    /// [`Event::Body`] (instead of [`Event::Data`]), and [`Event::End`].
    ///
    /// [`Event::Head`]: super::Event::Head
    /// [`Event::Body`]: super::Event::Body
    /// [`Event::End`]: super::Event::End
    /// [`Event::Request`]: super::Event::Request
    /// [`Event::Fields`]: super::Event::Fields
    /// [`Event::Data`]: super::Event::Data
    pub fn set_streamed(&mut self, on: bool) {
        self.inbox.streamed = on;
    }

    /// Client: queues a request whose body is pushed later ([`Session::push_body`], then
    /// [`Session::end_body`]); returns its stream id.
    pub fn submit_request_streamed<N: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        fields: &[(N, V)],
    ) -> Result<i32, H2Error> {
        let nva = nv(fields, &mut self.nva);
        let provider = pushed();
        // SAFETY: `nva` points into `fields`, which outlive the call (nghttp2 copies names and
        // values); `provider` is copied by nghttp2.
        let id = unsafe {
            ng::nghttp2_submit_request2(
                self.raw,
                std::ptr::null(),
                nva.as_ptr(),
                nva.len(),
                &provider,
                std::ptr::null_mut(),
            )
        };
        if id < 0 {
            return Err(H2Error::lib(id.into()));
        }
        self.inbox.pipes.push((id, Pipe::new()));
        Ok(id)
    }

    /// Server: queues the response headers to `stream`; its body is pushed later
    /// ([`Session::push_body`]) and ended by [`Session::end_body`] or
    /// [`Session::end_with_trailers`].
    pub fn submit_response_streamed<N: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        stream: i32,
        fields: &[(N, V)],
    ) -> Result<(), H2Error> {
        let nva = nv(fields, &mut self.nva);
        let provider = pushed();
        // SAFETY: as in `submit_request_streamed`.
        let rv = unsafe { ng::nghttp2_submit_response2(self.raw, stream, nva.as_ptr(), nva.len(), &provider) };
        check(rv.into())?;
        self.inbox.pipes.push((stream, Pipe::new()));
        Ok(())
    }

    /// Queues `data` on `stream`'s pushed body, sent as the peer's flow-control window allows;
    /// an error if the stream has no open pushed body (it was ended, or reset and closed).
    pub fn push_body(&mut self, stream: i32, data: &[u8]) -> Result<(), H2Error> {
        self.open_pipe(stream)?.push(data);
        self.resume(stream);
        Ok(())
    }

    /// Ends `stream`'s pushed body: END_STREAM on its last DATA frame (an empty one if every
    /// byte is already out).
    pub fn end_body(&mut self, stream: i32) -> Result<(), H2Error> {
        self.open_pipe(stream)?.end = End::Stream;
        self.resume(stream);
        Ok(())
    }

    /// Server: ends `stream`'s pushed body with trailers: `fields` (no pseudo-headers) in a
    /// HEADERS frame with END_STREAM, after the body's last DATA frame.
    pub fn end_with_trailers<N: AsRef<[u8]>, V: AsRef<[u8]>>(
        &mut self,
        stream: i32,
        fields: &[(N, V)],
    ) -> Result<(), H2Error> {
        let owned = fields.iter().map(|(n, v)| (n.as_ref().to_vec(), v.as_ref().to_vec())).collect();
        self.open_pipe(stream)?.end = End::Trailers(owned);
        self.resume(stream);
        Ok(())
    }

    /// Bytes pushed on `stream` and not yet framed (held back by the peer's window, or not yet
    /// asked for by [`Session::output`]); 0 for a stream without a pushed body.
    pub fn queued(&self, stream: i32) -> usize {
        self.inbox.pipes.iter().find(|p| p.0 == stream).map_or(0, |p| p.1.queued())
    }

    fn open_pipe(&mut self, stream: i32) -> Result<&mut Pipe, H2Error> {
        match self.inbox.pipes.iter_mut().find(|p| p.0 == stream) {
            Some((_, pipe)) if pipe.end == End::Open => Ok(pipe),
            _ => Err(H2Error(format!("stream {stream} has no open body"))),
        }
    }

    /// Puts a deferred body back in nghttp2's queue after bytes were pushed or it was ended.
    fn resume(&mut self, stream: i32) {
        // SAFETY: a valid session; a stream whose data is not deferred (or is unknown) is an
        // error nghttp2 returns, not UB, and means its data is already queued.
        unsafe { ng::nghttp2_session_resume_data(self.raw, stream) };
    }
}

/// The data provider of a pushed body: [`read_body`], which finds the stream's pipe.
fn pushed() -> ng::nghttp2_data_provider2 {
    ng::nghttp2_data_provider2 {
        source: ng::nghttp2_data_source { ptr: std::ptr::null_mut() },
        read_callback: Some(read_body),
    }
}
