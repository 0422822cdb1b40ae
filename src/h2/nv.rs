//! Header fields as nghttp2 takes them: name-value structs pointing into the caller's bytes,
//! for the session's submissions and the data callback's trailers.

use libnghttp2_sys as ng;

/// Header fields as received: lowercase names and their values, in the order sent.
pub type Fields = Vec<(Vec<u8>, Vec<u8>)>;

/// Name-value pairs as nghttp2 takes them, in `out` (pointing into `fields`).
pub(super) fn nv<'o, N: AsRef<[u8]>, V: AsRef<[u8]>>(
    fields: &[(N, V)],
    out: &'o mut Vec<ng::nghttp2_nv>,
) -> &'o [ng::nghttp2_nv] {
    out.clear();
    out.extend(fields.iter().map(|(n, v)| {
        let (n, v) = (n.as_ref(), v.as_ref());
        ng::nghttp2_nv {
            name: n.as_ptr().cast_mut(),
            value: v.as_ptr().cast_mut(),
            namelen: n.len(),
            valuelen: v.len(),
            flags: ng::NGHTTP2_NV_FLAG_NONE as u8,
        }
    }));
    out
}
