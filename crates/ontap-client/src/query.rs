//! What may go into a request's URL: values checked before they become an exact query filter
//! or a path segment. Below the client and the operations, which both use them.

use crate::error::{OntapError, Result};

/// Characters with a meaning in ONTAP query filters (wildcards, alternatives, negation, ranges).
/// A name containing one would match other objects.
pub(crate) fn filter_value<'a>(what: &str, value: &'a str) -> Result<&'a str> {
    if value.is_empty()
        || value.trim() != value
        || value.contains(['*', '|', '!', '<', '>', '{', '}'])
        || value.contains("..")
    {
        return Err(OntapError::InvalidInput(format!(
            "{what} {value:?} cannot be used as an exact ONTAP query filter"
        )));
    }
    Ok(value)
}

pub(crate) fn path_value<'a>(what: &str, value: &'a str) -> Result<&'a str> {
    if value.is_empty() || value == "." || value == ".." {
        return Err(OntapError::InvalidInput(format!("empty or invalid {what}")));
    }
    Ok(value)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn filter_values_reject_query_syntax() {
        for bad in ["", " a", "a ", "a*", "a|b", "!a", "<a", "a..b", "{a}"] {
            assert!(filter_value("x", bad).is_err(), "{bad:?}");
        }
        for ok in ["svm1", "svm_a-1.b", "vsadmin"] {
            assert_eq!(filter_value("x", ok).unwrap(), ok);
        }
    }
}
