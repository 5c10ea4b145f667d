//! Enums of a fixed set of words (a plan's `swizzle: 128B`), each with its text, the list of
//! its values, and a parser whose error names the field and the words it accepts.

macro_rules! text_enum {
    ($(#[$m:meta])* $name:ident { $($var:ident => $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
        pub enum $name { $($var),+ }
        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$var),+];
            pub fn as_str(self) -> &'static str { match self { $($name::$var => $text),+ } }
            pub(crate) fn parse(field: &str, s: &str) -> Result<Self, String> {
                Self::ALL.iter().copied().find(|v| v.as_str() == s).ok_or_else(|| {
                    format!("{field} `{s}` is not one of: {}",
                        Self::ALL.iter().map(|v| v.as_str()).collect::<Vec<_>>().join(", "))
                })
            }
        }
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { f.write_str(self.as_str()) }
        }
    };
}

pub(crate) use text_enum;
