//! Enums whose variants reports and JSON name (error kinds, connect causes, handshake
//! failures): a variant's name is its identifier in snake case (`TimedOut` is `timed_out`),
//! made when compiling, so each variant is written once and no list of names is kept in step
//! with the enum by hand.

/// Defines a fieldless enum (discriminants 0, 1, … in the order written, so a variant indexes
/// its count in an array) with `COUNT`, `ALL`, `name` and `from_name`.
macro_rules! named {
    ($(#[$meta:meta])* pub enum $name:ident { $($(#[$vmeta:meta])* $variant:ident,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            /// How many there are: the length of an array counting each.
            pub const COUNT: usize = [$(stringify!($variant)),+].len();
            /// Every one, in report order (the order written).
            pub const ALL: [$name; $name::COUNT] = [$($name::$variant),+];

            /// The name reports and JSON use: the variant's in snake case.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => {
                        const SNAKE: [u8; $crate::stats::named::snake_len(stringify!($variant))] =
                            $crate::stats::named::snake(stringify!($variant));
                        const NAME: &str = $crate::stats::named::text(&SNAKE);
                        NAME
                    })+
                }
            }

            /// The one reports and JSON call `name`, if any.
            pub fn from_name(name: &str) -> Option<$name> {
                $name::ALL.into_iter().find(|v| v.name() == name)
            }
        }
    };
}

/// The macro by path, for enums outside `stats` (gRPC's status codes).
pub(crate) use named;

/// How long identifier `camel` is in snake case: a byte more per word after the first.
pub(crate) const fn snake_len(camel: &str) -> usize {
    let b = camel.as_bytes();
    let (mut i, mut n) = (1, b.len());
    while i < b.len() {
        n += b[i].is_ascii_uppercase() as usize;
        i += 1;
    }
    n
}

/// Identifier `camel` (`AddressNotAvailable`) in snake case (`address_not_available`), `N`
/// ([`snake_len`]) bytes.
pub(crate) const fn snake<const N: usize>(camel: &str) -> [u8; N] {
    let b = camel.as_bytes();
    let mut out = [0u8; N];
    let (mut i, mut o) = (0, 0);
    while i < b.len() {
        if i > 0 && b[i].is_ascii_uppercase() {
            out[o] = b'_';
            o += 1;
        }
        out[o] = b[i].to_ascii_lowercase();
        i += 1;
        o += 1;
    }
    out
}

/// The text of [`snake`]'s bytes (an identifier is ASCII, so they are UTF-8).
pub(crate) const fn text(bytes: &'static [u8]) -> &'static str {
    match std::str::from_utf8(bytes) {
        Ok(s) => s,
        Err(_) => panic!("an identifier in snake case is UTF-8"),
    }
}

#[cfg(test)]
mod tests {
    use crate::stats::{ConnectCause, ErrorKind, HandshakeFailure};

    #[test]
    fn names_are_the_variants_in_snake_case_and_read_back() {
        let names = |all: &[&'static str]| all.join(" ");
        assert_eq!(names(&ErrorKind::ALL.map(ErrorKind::name)), "connect read write timeout parse content reset");
        assert_eq!(
            names(&ConnectCause::ALL.map(ConnectCause::name)),
            "address_not_available refused timed_out tls other"
        );
        assert_eq!(
            names(&HandshakeFailure::ALL.map(HandshakeFailure::name)),
            "no_answer timeout port_unreachable certificate alpn version other"
        );
        for cause in ConnectCause::ALL {
            assert_eq!(ConnectCause::from_name(cause.name()), Some(cause));
        }
        assert_eq!(HandshakeFailure::from_name("NoAnswer"), None);
    }
}
