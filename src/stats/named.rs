//! Enums whose variants reports and JSON name (error kinds, connect causes, handshake
//! failures): each variant is written once with its name, and the count, the list in report
//! order and both directions of the naming follow from that one line, so no array of names is
//! kept in step with the enum by hand.

/// Defines a fieldless enum of `Variant = "name",` lines (discriminants 0, 1, … in the order
/// written, so a variant indexes its count in an array) with `COUNT`, `ALL`, `name` and
/// `from_name`.
macro_rules! named {
    ($(#[$meta:meta])* pub enum $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            /// How many there are: the length of an array counting each.
            pub const COUNT: usize = [$($text),+].len();
            /// Every one, in report order (the order written).
            pub const ALL: [$name; $name::COUNT] = [$($name::$variant),+];

            /// The name reports and JSON use.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }

            /// The one reports and JSON call `name`, if any.
            pub fn from_name(name: &str) -> Option<$name> {
                match name {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }
        }
    };
}
