//! Macros that generate the protocol views from tables copied from the specs.

/// A protocol enum over a primitive that must round-trip values it does not know (smoltcp's
/// `enum_with_unknown!`): generates `From<prim>` and `Into<prim>`, with an `Unknown(prim)` variant.
macro_rules! enum_with_unknown {
    (
        $(#[$m:meta])*
        pub enum $name:ident($ty:ty) {
            $( $(#[$vm:meta])* $variant:ident = $value:literal ),+ $(,)?
        }
    ) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $( $(#[$vm])* $variant, )+
            /// A value this decoder does not know.
            Unknown($ty),
        }

        impl From<$ty> for $name {
            #[inline]
            fn from(v: $ty) -> Self {
                match v {
                    $( $value => $name::$variant, )+
                    other => $name::Unknown(other),
                }
            }
        }

        impl From<$name> for $ty {
            #[inline]
            fn from(v: $name) -> $ty {
                match v {
                    $( $name::$variant => $value, )+
                    $name::Unknown(other) => other,
                }
            }
        }
    };
}

/// Rust type returned by a field of the given kind.
macro_rules! kind_ty {
    (u8) => {
        u8
    };
    (char) => {
        u8
    };
    (u16) => {
        u16
    };
    (u32) => {
        u32
    };
    (i32) => {
        i32
    };
    (u48) => {
        u64
    };
    (u64) => {
        u64
    };
    (side) => {
        $crate::proto::Side
    };
    (symbol) => {
        $crate::proto::Symbol
    };
    (a2) => {
        [u8; 2]
    };
    (a4) => {
        [u8; 4]
    };
    (a8) => {
        [u8; 8]
    };
    (a5) => {
        [u8; 5]
    };
    (a6) => {
        [u8; 6]
    };
    (a20) => {
        [u8; 20]
    };
    (a10) => {
        [u8; 10]
    };
    (a14) => {
        [u8; 14]
    };
}

/// Width in bytes of a field kind.
macro_rules! kind_len {
    (u8) => {
        1
    };
    (char) => {
        1
    };
    (u16) => {
        2
    };
    (u32) => {
        4
    };
    (i32) => {
        4
    };
    (u48) => {
        6
    };
    (u64) => {
        8
    };
    (side) => {
        1
    };
    (symbol) => {
        8
    };
    (a2) => {
        2
    };
    (a4) => {
        4
    };
    (a8) => {
        8
    };
    (a5) => {
        5
    };
    (a6) => {
        6
    };
    (a20) => {
        20
    };
    (a10) => {
        10
    };
    (a14) => {
        14
    };
}

/// Reads a field of the given kind at a fixed offset.
macro_rules! kind_read {
    (u8, $b:expr, $at:expr) => {
        $crate::proto::read::u8($b, $at)
    };
    (char, $b:expr, $at:expr) => {
        $crate::proto::read::u8($b, $at)
    };
    (u16, $b:expr, $at:expr) => {
        $crate::proto::read::u16($b, $at)
    };
    (u32, $b:expr, $at:expr) => {
        $crate::proto::read::u32($b, $at)
    };
    (i32, $b:expr, $at:expr) => {
        $crate::proto::read::i32($b, $at)
    };
    (u48, $b:expr, $at:expr) => {
        $crate::proto::read::u48($b, $at)
    };
    (u64, $b:expr, $at:expr) => {
        $crate::proto::read::u64($b, $at)
    };
    (side, $b:expr, $at:expr) => {
        $crate::proto::Side::from($crate::proto::read::u8($b, $at))
    };
    (symbol, $b:expr, $at:expr) => {
        $crate::proto::Symbol($crate::proto::read::bytes::<8>($b, $at))
    };
    (a2, $b:expr, $at:expr) => {
        $crate::proto::read::bytes::<2>($b, $at)
    };
    (a4, $b:expr, $at:expr) => {
        $crate::proto::read::bytes::<4>($b, $at)
    };
    (a8, $b:expr, $at:expr) => {
        $crate::proto::read::bytes::<8>($b, $at)
    };
    (a5, $b:expr, $at:expr) => {
        $crate::proto::read::bytes::<5>($b, $at)
    };
    (a6, $b:expr, $at:expr) => {
        $crate::proto::read::bytes::<6>($b, $at)
    };
    (a20, $b:expr, $at:expr) => {
        $crate::proto::read::bytes::<20>($b, $at)
    };
    (a10, $b:expr, $at:expr) => {
        $crate::proto::read::bytes::<10>($b, $at)
    };
    (a14, $b:expr, $at:expr) => {
        $crate::proto::read::bytes::<14>($b, $at)
    };
}

/// A fixed-layout message view. The field table is the spec table (name, kind, offset); the kind
/// gives the width. `FIELDS` exposes the table so tests can check it tiles `0..LEN` exactly.
/// With `appendage @ OFF`, the message ends with a variable appendage whose u16 length sits at
/// `OFF`; `check_len` then also checks the appendage is inside the buffer.
macro_rules! message_view {
    (
        $(#[$m:meta])*
        pub struct $name:ident, what $what:literal, len $len:expr $(, appendage @ $app:expr)?;
        $( $(#[$fm:meta])* $field:ident : $kind:ident @ $off:expr ),* $(,)?
    ) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $name<T: AsRef<[u8]>> {
            buffer: T,
        }

        impl<T: AsRef<[u8]>> $name<T> {
            /// Length of the fixed part, from the spec table.
            pub const LEN: usize = $len;
            /// Human name used in errors.
            pub const WHAT: &'static str = $what;
            /// `(field, offset, width)` rows of the spec table, in order.
            pub const FIELDS: &'static [(&'static str, usize, usize)] =
                &[ $( (stringify!($field), $off, kind_len!($kind)) ),* ];

            /// Wraps a buffer without checking its length.
            #[inline]
            pub const fn new_unchecked(buffer: T) -> Self {
                $name { buffer }
            }

            /// Wraps a buffer after [`Self::check_len`].
            #[inline]
            pub fn new_checked(buffer: T) -> $crate::proto::Result<Self> {
                let v = Self::new_unchecked(buffer);
                v.check_len()?;
                Ok(v)
            }

            /// Checks that every field (and the appendage, if any) lies inside the buffer.
            #[inline]
            pub fn check_len(&self) -> $crate::proto::Result<()> {
                let b = self.buffer.as_ref();
                $crate::proto::need($what, b, $len)?;
                $(
                    let total = $len + usize::from($crate::proto::read::u16(b, $app));
                    $crate::proto::need($what, b, total)?;
                )?
                let _ = b;
                Ok(())
            }

            /// The message's length by its type: the fixed part, plus the appendage its length field
            /// announces (call after [`Self::check_len`]).
            #[inline]
            pub fn spec_len(&self) -> usize {
                let b = self.buffer.as_ref();
                let _ = b;
                $len $( + usize::from($crate::proto::read::u16(b, $app)) )?
            }

            /// The underlying buffer.
            pub fn into_inner(self) -> T {
                self.buffer
            }

            /// The bytes of the message (the whole buffer given).
            pub fn as_bytes(&self) -> &[u8] {
                self.buffer.as_ref()
            }

            $(
                $(#[$fm])*
                #[inline]
                pub fn $field(&self) -> kind_ty!($kind) {
                    kind_read!($kind, self.buffer.as_ref(), $off)
                }
            )*
        }

        $(
            impl<'a> $name<&'a [u8]> {
                /// The optional appendage (TagValue elements), after the fixed part.
                pub fn appendage(&self) -> &'a [u8] {
                    let n = usize::from($crate::proto::read::u16(self.buffer, $app));
                    &self.buffer[$len..$len + n]
                }
                /// The appendage's TagValue elements.
                pub fn options(&self) -> $crate::proto::ouch5::TagValues<'a> {
                    $crate::proto::ouch5::TagValues::new(self.appendage(), $len)
                }
            }
        )?
    };
}

/// Generates an OUCH direction's message enum, `message_type()` and parser (the type byte is only
/// unique within a direction).
macro_rules! ouch_direction {
    ($(#[$m:meta])* $enum:ident, $ty:ident, $parse:ident, $what:literal, [$( $variant:ident ),+ $(,)?]) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $enum<'a> {
            $(
                #[doc = concat!("See [`", stringify!($variant), "`].")]
                $variant($variant<&'a [u8]>),
            )+
            /// A type this decoder does not know: the type byte and the whole message.
            Unknown(u8, &'a [u8]),
        }

        /// Decodes one message of this direction (the payload of one SoupBinTCP data packet).
        #[inline]
        pub fn $parse(buf: &[u8]) -> $crate::proto::Result<$enum<'_>> {
            let Some(&t) = buf.first() else {
                return Err($crate::proto::ProtoError::Truncated { what: $what, offset: 0, need: 1, have: 0 });
            };
            Ok(match $ty::from(t) {
                $( $ty::$variant => {
                    let v = $variant::new_checked(buf)?;
                    // OUCH messages have a fixed length (plus an announced appendage), and the
                    // SoupBinTCP packet gives the exact one: a longer message is another version's
                    // or a damaged one, not this type with extra bytes.
                    if buf.len() != v.spec_len() {
                        return Err($crate::proto::ProtoError::Malformed {
                            what: $variant::<&[u8]>::WHAT,
                            offset: v.spec_len(),
                            reason: "bytes after the message's end (its fixed length, plus its appendage)",
                        });
                    }
                    $enum::$variant(v)
                } )+
                $ty::Unknown(t) => $enum::Unknown(t, buf),
            })
        }

        impl<'a> $enum<'a> {
            /// The fixed length of messages of type byte `t`; `None` for a type this decoder does not
            /// know.
            pub fn fixed_len(t: u8) -> Option<usize> {
                match $ty::from(t) {
                    $( $ty::$variant => Some($variant::<&[u8]>::LEN), )+
                    $ty::Unknown(_) => None,
                }
            }

            /// The length its type gives a message that starts `head` (its fixed length, plus the
            /// appendage it announces), once `head` holds its fixed part; `None` before that, and
            /// for a type this decoder does not know.
            pub fn len_at(head: &[u8]) -> Option<usize> {
                let &t = head.first()?;
                match $ty::from(t) {
                    $( $ty::$variant => (head.len() >= $variant::<&[u8]>::LEN)
                        .then(|| $variant::new_unchecked(head).spec_len()), )+
                    $ty::Unknown(_) => None,
                }
            }

            /// The message type.
            pub fn message_type(&self) -> $ty {
                match self {
                    $( $enum::$variant(_) => $ty::$variant, )+
                    $enum::Unknown(t, _) => $ty::Unknown(*t),
                }
            }
        }
    };
}
