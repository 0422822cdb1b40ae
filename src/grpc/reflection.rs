//! gRPC server reflection's messages (`grpc.reflection.v1` and its older twin `v1alpha`, whose
//! messages are the same on the wire): what a client asks (`list_services`,
//! `file_containing_symbol`, `file_by_filename`, and the extension questions a client may put
//! while it resolves types) and what a server answers (service names, serialized
//! `FileDescriptorProto`s, extension numbers, or an error). Written as prost structs, with only the
//! fields strain asks or answers, so neither side needs the reflection `.proto` at run time.

/// The reflection service's method path in each version, newest first.
pub const PATHS: [&str; 2] = [
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
];

/// What a reflection client asks (one message on the bidirectional stream).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Request {
    /// The host the question is about (unused by most servers).
    #[prost(string, tag = "1")]
    pub host: String,
    /// The question.
    #[prost(oneof = "Ask", tags = "3, 4, 5, 6, 7")]
    pub ask: Option<Ask>,
}

/// A reflection question.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Ask {
    /// The file of this name, and the files it imports.
    #[prost(string, tag = "3")]
    FileByFilename(String),
    /// The file that defines this symbol (`pkg.Service`), and the files it imports.
    #[prost(string, tag = "4")]
    FileContainingSymbol(String),
    /// The file that defines this extension of a message type.
    #[prost(message, tag = "5")]
    FileContainingExtension(ExtensionRequest),
    /// The numbers of every extension of this message type (`pkg.Message`).
    #[prost(string, tag = "6")]
    AllExtensionNumbersOfType(String),
    /// The services the server has (the value is ignored).
    #[prost(string, tag = "7")]
    ListServices(String),
}

/// What a reflection server answers.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Response {
    /// The host the answer is about.
    #[prost(string, tag = "1")]
    pub valid_host: String,
    /// The question answered.
    #[prost(message, optional, tag = "2")]
    pub original_request: Option<Request>,
    /// The answer.
    #[prost(oneof = "Answer", tags = "4, 5, 6, 7")]
    pub answer: Option<Answer>,
}

/// A reflection answer.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Answer {
    /// Serialized `FileDescriptorProto`s.
    #[prost(message, tag = "4")]
    Files(FileDescriptors),
    /// A message type's extension numbers.
    #[prost(message, tag = "5")]
    ExtensionNumbers(ExtensionNumbers),
    /// The services.
    #[prost(message, tag = "6")]
    Services(ServiceList),
    /// The question could not be answered.
    #[prost(message, tag = "7")]
    Error(ErrorAnswer),
}

/// Serialized `FileDescriptorProto`s.
#[derive(Clone, PartialEq, prost::Message)]
pub struct FileDescriptors {
    /// Each file, serialized.
    #[prost(bytes = "vec", repeated, tag = "1")]
    pub file_descriptor_proto: Vec<Vec<u8>>,
}

/// An extension asked about: the message type it extends, and its field number.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExtensionRequest {
    /// `pkg.Message`.
    #[prost(string, tag = "1")]
    pub containing_type: String,
    /// The extension's field number.
    #[prost(int32, tag = "2")]
    pub extension_number: i32,
}

/// The extension numbers of a message type.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExtensionNumbers {
    /// `pkg.Message`.
    #[prost(string, tag = "1")]
    pub base_type_name: String,
    /// Each extension's field number.
    #[prost(int32, repeated, tag = "2")]
    pub extension_number: Vec<i32>,
}

/// The services a server has.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ServiceList {
    /// One per service.
    #[prost(message, repeated, tag = "1")]
    pub service: Vec<ServiceName>,
}

/// A service's full name.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ServiceName {
    /// `pkg.Service`.
    #[prost(string, tag = "1")]
    pub name: String,
}

/// Why a question was not answered.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ErrorAnswer {
    /// A gRPC status code.
    #[prost(int32, tag = "1")]
    pub error_code: i32,
    /// Its message.
    #[prost(string, tag = "2")]
    pub error_message: String,
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;

    #[test]
    fn questions_and_answers_have_the_wire_form_of_the_reflection_proto() {
        let ask = Request { host: String::new(), ask: Some(Ask::ListServices(String::new())) };
        // Field 7, length-delimited, empty.
        assert_eq!(ask.encode_to_vec(), [0x3a, 0x00]);
        let ask = Request { host: String::new(), ask: Some(Ask::FileContainingSymbol("a.B".into())) };
        assert_eq!(ask.encode_to_vec(), [0x22, 3, b'a', b'.', b'B']);
        let answer = Response {
            answer: Some(Answer::Services(ServiceList { service: vec![ServiceName { name: "x.Y".into() }] })),
            ..Response::default()
        };
        let back = Response::decode(answer.encode_to_vec().as_slice()).unwrap();
        assert_eq!(back, answer);
        let ask = Request { host: String::new(), ask: Some(Ask::AllExtensionNumbersOfType("a".into())) };
        assert_eq!(ask.encode_to_vec(), [0x32, 1, b'a']);
        // Field 5, a message holding field 1 (empty) and field 2 (packed, one number).
        let answer = Response {
            answer: Some(Answer::ExtensionNumbers(ExtensionNumbers {
                base_type_name: String::new(),
                extension_number: vec![7],
            })),
            ..Response::default()
        };
        assert_eq!(answer.encode_to_vec(), [0x2a, 3, 0x12, 1, 7]);
    }
}
