//! Kubernetes' own name rules, twice each: as a CEL expression the API server evaluates at
//! admission (a CRD's `x-kubernetes-validations`), and as a Rust predicate for the names a
//! controller derives itself. The unit tests keep the two in step on a table of examples.

/// CEL: a Kubernetes DNS subdomain (RFC 1123), the rule for Secret and OntapCluster names.
/// `[.]` rather than an escaped dot keeps the expression free of backslashes.
pub const DNS_SUBDOMAIN: &str =
    "self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')";
/// Message for [`DNS_SUBDOMAIN`].
pub const DNS_SUBDOMAIN_MESSAGE: &str = "must be a lowercase RFC 1123 subdomain: lowercase letters, digits, '-' and '.', starting and ending with a letter or digit";

/// CEL: a Kubernetes DNS label (RFC 1123), the rule for namespace names.
pub const DNS_LABEL: &str = "self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')";
/// Message for [`DNS_LABEL`].
pub const DNS_LABEL_MESSAGE: &str = "must be a lowercase RFC 1123 label: lowercase letters, digits and '-', starting and ending with a letter or digit";

/// The longest Kubernetes object name that is a DNS subdomain (Secrets, OntapClusters).
pub const DNS_SUBDOMAIN_MAX: usize = 253;

/// Rust twin of [`DNS_SUBDOMAIN`], with the [`DNS_SUBDOMAIN_MAX`] length limit.
pub fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= DNS_SUBDOMAIN_MAX && s.split('.').all(is_dns_label_body)
}

/// Rust twin of [`DNS_LABEL`], with the 63-character length limit.
pub fn is_dns_label(s: &str) -> bool {
    s.len() <= 63 && is_dns_label_body(s)
}

fn is_dns_label_body(s: &str) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    s.chars().next().is_some_and(alnum)
        && s.chars().last().is_some_and(alnum)
        && s.chars().all(|c| alnum(c) || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_names() {
        for ok in ["a", "a-b", "a.b", "0", "x1.y2-z", &"a".repeat(63)] {
            assert!(is_dns_subdomain(ok), "{ok}");
            assert_eq!(is_dns_label(ok), !ok.contains('.'), "{ok}");
        }
        for bad in [
            "",
            "A",
            "-a",
            "a-",
            "a..b",
            ".a",
            "a.",
            "a_b",
            &"a".repeat(254),
        ] {
            assert!(!is_dns_subdomain(bad), "{bad}");
        }
        assert!(!is_dns_label(&"a".repeat(64)));
        let long = vec!["a".repeat(63); 4].join(".");
        assert_eq!(long.len(), 255);
        assert!(!is_dns_subdomain(&long));
    }
}
