//! The one way a controller declares the reasons its conditions, waits and Events carry.

/// Declares a reason enum: each variant next to the reason string conditions and Events carry,
/// so the string is written once.
#[macro_export]
macro_rules! reasons {
    ($(#[$meta:meta])* pub enum $name:ident { $($(#[$vmeta:meta])* $variant:ident => $reason:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            #[cfg(test)]
            pub(crate) const ALL: &[Self] = &[$(Self::$variant,)+];

            /// The reason as conditions and Events carry it.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $reason,)+
                }
            }
        }
    };
}

/// Fails unless every reason is PascalCase and means one thing: the same string under two kinds
/// would make a condition's reason ambiguous about what happens next. One string under one kind
/// from two sources (the operator's own finding and ONTAP's answer that says the same) is fine.
/// For a controller's unit tests: panics with the offending reasons.
pub fn assert_distinct<'a>(all: impl IntoIterator<Item = (&'a str, &'a str)>) {
    let mut kinds: std::collections::BTreeMap<&str, std::collections::BTreeSet<&str>> =
        Default::default();
    for (kind, reason) in all {
        assert!(
            reason.starts_with(|c: char| c.is_ascii_uppercase())
                && reason.chars().all(|c| c.is_ascii_alphanumeric()),
            "{reason}"
        );
        kinds.entry(reason).or_default().insert(kind);
    }
    let repeated: Vec<_> = kinds.iter().filter(|(_, k)| k.len() > 1).collect();
    assert!(repeated.is_empty(), "{repeated:?}");
}
