//! strain's own gRPC service, `strain.echo.v1.Echo` ([`PROTO`]): its messages as prost structs
//! written to match the `.proto` (a test holds them to it), and the `.proto` compiled at run
//! time by protox ([`descriptor`]), so the origin can answer reflection with the very file a
//! client compiles and no build step generates code.

use prost_reflect::{DescriptorPool, FileDescriptor};

/// The service's `.proto` source.
pub const PROTO: &str = include_str!("proto/echo.proto");
/// The file's name as reflection gives it (and as `protoc -I src/grpc/proto` names it).
pub const FILE: &str = "echo.proto";
/// The service's full name.
pub const SERVICE: &str = "strain.echo.v1.Echo";
/// Largest `reply_size` a request may ask for: below gRPC's default 4 MiB limit on a received
/// message, with room for the reply's other fields and the framing.
pub const MAX_REPLY_SIZE: u32 = 4_000_000;

/// A request to any of the service's methods.
#[derive(Clone, PartialEq, prost::Message)]
pub struct EchoRequest {
    /// Sent back in every reply.
    #[prost(string, tag = "1")]
    pub message: String,
    /// Sent back in every reply unless `reply_size` is set.
    #[prost(bytes = "vec", tag = "2")]
    pub payload: Vec<u8>,
    /// ServerStream: how many replies; 0 means [`crate::defaults::GRPC_STREAM_COUNT`].
    #[prost(uint32, tag = "3")]
    pub count: u32,
    /// Above 0: each reply's payload is this many bytes instead of the request's.
    #[prost(uint32, tag = "4")]
    pub reply_size: u32,
}

/// A reply from any of the service's methods.
#[derive(Clone, PartialEq, prost::Message)]
pub struct EchoReply {
    /// The request's message.
    #[prost(string, tag = "1")]
    pub message: String,
    /// The request's payload, or `reply_size` bytes.
    #[prost(bytes = "vec", tag = "2")]
    pub payload: Vec<u8>,
    /// This reply's number on its call, from 0.
    #[prost(uint64, tag = "3")]
    pub sequence: u64,
    /// Requests the call had received when this reply was made.
    #[prost(uint32, tag = "4")]
    pub received: u32,
}

/// The only file the compiler may open: [`PROTO`], as [`FILE`].
struct Embedded;

impl protox::file::FileResolver for Embedded {
    fn open_file(&self, name: &str) -> Result<protox::file::File, protox::Error> {
        if name == FILE {
            protox::file::File::from_source(name, PROTO)
        } else {
            Err(protox::Error::file_not_found(name))
        }
    }
}

/// [`PROTO`] compiled: its descriptor, in a pool of its own (it imports nothing).
pub fn descriptor() -> Result<FileDescriptor, protox::Error> {
    let mut compiler = protox::Compiler::with_file_resolver(Embedded);
    compiler.open_file(FILE)?;
    let pool: DescriptorPool = compiler.descriptor_pool();
    pool.get_file_by_name(FILE).ok_or_else(|| protox::Error::file_not_found(FILE))
}

#[cfg(test)]
mod tests {
    use prost::Message;
    use prost_reflect::{DynamicMessage, Value};

    use super::*;

    #[test]
    fn the_structs_encode_as_the_proto_says() {
        let file = descriptor().unwrap();
        let pool = file.parent_pool();
        let service = pool.get_service_by_name(SERVICE).unwrap();
        let methods: Vec<(String, bool, bool)> = service
            .methods()
            .map(|m| (m.name().to_string(), m.is_client_streaming(), m.is_server_streaming()))
            .collect();
        let want = [
            ("Unary", false, false),
            ("ServerStream", false, true),
            ("ClientStream", true, false),
            ("Bidi", true, true),
        ];
        assert_eq!(methods, want.map(|(n, c, s)| (n.to_string(), c, s)));

        let request = EchoRequest { message: "hi".into(), payload: vec![1, 2, 3], count: 7, reply_size: 9 };
        let desc = pool.get_message_by_name("strain.echo.v1.EchoRequest").unwrap();
        let dynamic = DynamicMessage::decode(desc, request.encode_to_vec().as_slice()).unwrap();
        assert_eq!(dynamic.get_field_by_name("message").as_deref(), Some(&Value::String("hi".into())));
        assert_eq!(dynamic.get_field_by_name("payload").as_deref(), Some(&Value::Bytes(vec![1u8, 2, 3].into())));
        assert_eq!(dynamic.get_field_by_name("count").as_deref(), Some(&Value::U32(7)));
        assert_eq!(dynamic.get_field_by_name("reply_size").as_deref(), Some(&Value::U32(9)));
        assert_eq!(EchoRequest::decode(dynamic.encode_to_vec().as_slice()).unwrap(), request);

        let reply = EchoReply { message: "hi".into(), payload: vec![4], sequence: 1 << 40, received: 3 };
        let desc = pool.get_message_by_name("strain.echo.v1.EchoReply").unwrap();
        let dynamic = DynamicMessage::decode(desc, reply.encode_to_vec().as_slice()).unwrap();
        assert_eq!(dynamic.get_field_by_name("sequence").as_deref(), Some(&Value::U64(1 << 40)));
        assert_eq!(dynamic.get_field_by_name("received").as_deref(), Some(&Value::U32(3)));
        assert_eq!(EchoReply::decode(dynamic.encode_to_vec().as_slice()).unwrap(), reply);
        // Every field of each message is one the struct has, by number and name.
        for (name, fields) in [
            ("EchoRequest", ["message", "payload", "count", "reply_size"]),
            ("EchoReply", ["message", "payload", "sequence", "received"]),
        ] {
            let desc = pool.get_message_by_name(&format!("strain.echo.v1.{name}")).unwrap();
            let got: Vec<(u32, String)> = desc.fields().map(|f| (f.number(), f.name().to_string())).collect();
            let want: Vec<(u32, String)> =
                fields.iter().enumerate().map(|(i, f)| (i as u32 + 1, f.to_string())).collect();
            assert_eq!(got, want, "{name}");
        }
    }
}
