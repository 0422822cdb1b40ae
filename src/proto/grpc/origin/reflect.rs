//! The origin's answers to server reflection (`grpc.reflection.v1` and `v1alpha`, whose
//! messages are the same): the services it serves, and `echo.proto`'s `FileDescriptorProto`
//! for its file name or any symbol it defines. The file is the one compiled at start from the
//! embedded source (see [`crate::grpc::echo`]), so what reflection gives is what a client
//! compiling the same file gets. Reflection's own `.proto` is not served: a question about a
//! reflection symbol is answered NOT_FOUND, as for any symbol not in `echo.proto`.

use prost_reflect::FileDescriptor;

use crate::grpc::echo;
use crate::grpc::reflection::{
    Answer, Ask, ErrorAnswer, ExtensionNumbers, FileDescriptors, Request, Response, ServiceList, ServiceName, PATHS,
};
use crate::grpc::status::Code;

/// What reflection answers, made once at start.
#[derive(Debug)]
pub(super) struct Reflection {
    /// `echo.proto`'s `FileDescriptorProto`, serialized.
    file: Vec<u8>,
    /// Every full name `echo.proto` defines: its service, methods, messages and their fields.
    symbols: Vec<String>,
    /// The messages among them (whose extension numbers, none, can be asked).
    messages: Vec<String>,
    /// The echo service and the reflection services.
    services: Vec<String>,
}

impl Reflection {
    /// The answers about `file` (`echo.proto`, compiled).
    pub(super) fn new(file: &FileDescriptor) -> Reflection {
        let mut symbols = Vec::new();
        let mut messages = Vec::new();
        for service in file.services() {
            symbols.push(service.full_name().to_string());
            symbols.extend(service.methods().map(|m| m.full_name().to_string()));
        }
        for message in file.messages() {
            messages.push(message.full_name().to_string());
            symbols.extend(message.fields().map(|f| f.full_name().to_string()));
        }
        symbols.extend(messages.iter().cloned());
        let mut services = vec![echo::SERVICE.to_string()];
        services.extend(PATHS.iter().map(|p| service_of(p).to_string()));
        Reflection { file: file.encode_to_vec(), symbols, messages, services }
    }

    /// The answer to one question.
    pub(super) fn answer(&self, request: Request) -> Response {
        let not_found = |what: &str| error(Code::NotFound, format!("{what} not found"));
        let answer = match &request.ask {
            Some(Ask::ListServices(_)) => Answer::Services(ServiceList {
                service: self.services.iter().map(|name| ServiceName { name: name.clone() }).collect(),
            }),
            Some(Ask::FileByFilename(name)) if name == echo::FILE => self.files(),
            Some(Ask::FileByFilename(name)) => not_found(&format!("file {name}")),
            Some(Ask::FileContainingSymbol(symbol)) if self.symbols.contains(symbol) => self.files(),
            Some(Ask::FileContainingSymbol(symbol)) => not_found(&format!("symbol {symbol}")),
            Some(Ask::AllExtensionNumbersOfType(name)) if self.messages.contains(name) => {
                Answer::ExtensionNumbers(ExtensionNumbers {
                    base_type_name: name.clone(),
                    extension_number: Vec::new(),
                })
            }
            Some(Ask::AllExtensionNumbersOfType(name)) => not_found(&format!("type {name}")),
            Some(Ask::FileContainingExtension(e)) => {
                not_found(&format!("extension {} of {}", e.extension_number, e.containing_type))
            }
            None => error(Code::Unimplemented, "a question this server does not know".into()),
        };
        Response { valid_host: request.host.clone(), original_request: Some(request), answer: Some(answer) }
    }

    fn files(&self) -> Answer {
        Answer::Files(FileDescriptors { file_descriptor_proto: vec![self.file.clone()] })
    }
}

/// The service of a method path: `/pkg.Service/Method` gives `pkg.Service`.
fn service_of(path: &str) -> &str {
    let path = path.strip_prefix('/').unwrap_or(path);
    path.rsplit_once('/').map_or(path, |(service, _)| service)
}

fn error(code: Code, message: String) -> Answer {
    Answer::Error(ErrorAnswer { error_code: code as i32, error_message: message })
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;

    fn reflection() -> Reflection {
        Reflection::new(&echo::descriptor().unwrap())
    }

    fn ask(question: Ask) -> Option<Answer> {
        let reflection = reflection();
        let request = Request { host: "h".into(), ask: Some(question) };
        let response = reflection.answer(request.clone());
        assert_eq!((response.valid_host.as_str(), response.original_request), ("h", Some(request)));
        response.answer
    }

    fn code(answer: Option<Answer>) -> i32 {
        match answer {
            Some(Answer::Error(e)) => e.error_code,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn services_files_and_symbols_are_answered() {
        let Some(Answer::Services(list)) = ask(Ask::ListServices(String::new())) else { panic!() };
        let names: Vec<&str> = list.service.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            ["strain.echo.v1.Echo", "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"]
        );
        for symbol in [
            "strain.echo.v1.Echo",
            "strain.echo.v1.Echo.Bidi",
            "strain.echo.v1.EchoRequest",
            "strain.echo.v1.EchoReply.sequence",
        ] {
            let Some(Answer::Files(files)) = ask(Ask::FileContainingSymbol(symbol.into())) else { panic!("{symbol}") };
            let file =
                prost_reflect::prost_types::FileDescriptorProto::decode(files.file_descriptor_proto[0].as_slice())
                    .unwrap();
            assert_eq!((file.name(), file.package()), ("echo.proto", "strain.echo.v1"), "{symbol}");
        }
        assert!(matches!(ask(Ask::FileByFilename("echo.proto".into())), Some(Answer::Files(_))));
        assert_eq!(code(ask(Ask::FileByFilename("other.proto".into()))), 5);
        assert_eq!(code(ask(Ask::FileContainingSymbol("strain.echo.v1.Nope".into()))), 5);
        assert_eq!(code(ask(Ask::FileContainingSymbol("grpc.reflection.v1.ServerReflection".into()))), 5);
        let Some(Answer::ExtensionNumbers(n)) = ask(Ask::AllExtensionNumbersOfType("strain.echo.v1.EchoReply".into()))
        else {
            panic!()
        };
        assert!(n.extension_number.is_empty());
        let unknown = reflection().answer(Request::default());
        assert_eq!(code(unknown.answer), 12);
    }
}
