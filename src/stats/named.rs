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

/// Defines a count per variant of a [`named!`] enum: a flat array the engine adds to without
/// hashing (indexed by the variant), written as an object of the variants seen, by name; a
/// name this strain does not know (a newer one wrote it) is read as `$fallback`.
macro_rules! by_name {
    ($(#[$meta:meta])* pub struct $name:ident($enum:ty, fallback $fallback:expr);) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $name([u64; <$enum>::COUNT]);

        impl Default for $name {
            fn default() -> Self {
                $name([0; <$enum>::COUNT])
            }
        }

        impl $name {
            /// The variants seen and their counts, in report order.
            pub fn seen(&self) -> impl Iterator<Item = ($enum, u64)> + '_ {
                <$enum>::ALL.into_iter().map(|c| (c, self[c])).filter(|(_, n)| *n > 0)
            }

            /// The variants seen by name, in the names' order (as results write them).
            pub fn named(&self) -> std::collections::BTreeMap<&'static str, u64> {
                self.seen().map(|(c, n)| (c.name(), n)).collect()
            }

            /// All the counts added up.
            pub fn sum(&self) -> u64 {
                self.0.iter().sum()
            }
        }

        impl std::ops::Index<$enum> for $name {
            type Output = u64;

            fn index(&self, v: $enum) -> &u64 {
                &self.0[v as usize]
            }
        }

        impl std::ops::IndexMut<$enum> for $name {
            fn index_mut(&mut self, v: $enum) -> &mut u64 {
                &mut self.0[v as usize]
            }
        }

        impl $crate::stats::Tally for $name {
            fn tally(&mut self, other: &$name) {
                $crate::stats::Tally::tally(&mut self.0, &other.0);
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                serde::Serialize::serialize(&self.named(), s)
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let mut counts = $name::default();
                let named: std::collections::BTreeMap<String, u64> = serde::Deserialize::deserialize(d)?;
                for (name, n) in named {
                    $crate::stats::Tally::tally(&mut counts[<$enum>::from_name(&name).unwrap_or($fallback)], &n);
                }
                Ok(counts)
            }
        }
    };
}

/// The macro by path, for counts outside `stats` (a unit's own).
pub(crate) use by_name;

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
