//! Naming and shape rules shared by admission and the controller.
//!
//! Each rule exists twice: as a CEL expression the API server evaluates at admission
//! (`x-kubernetes-validations` in `crds/`), and as a Rust predicate the controller uses for the
//! names it derives itself. The unit tests below keep the two in step on a table of examples;
//! `tests/operations/crd_validation.rs` checks the CEL side against a real API server. The
//! Kubernetes name rules come from the engine ([`reconcile_engine::names`]).

use super::protocol::Protocol;

pub use reconcile_engine::names::{
    DNS_LABEL, DNS_LABEL_MESSAGE, DNS_SUBDOMAIN, DNS_SUBDOMAIN_MAX, DNS_SUBDOMAIN_MESSAGE,
    is_dns_label, is_dns_subdomain,
};

/// The bytes of a Kubernetes quantity: digits with an optional fraction and a binary (`Ki` …
/// `Ei`) or decimal (`k` … `E`) suffix, whose value is a whole number of bytes. `None` for
/// anything else (exponent forms, milli-units, fractions of a byte, overflow).
pub fn quantity_bytes(quantity: &str) -> Option<u64> {
    let split = quantity
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(quantity.len());
    let (number, suffix) = quantity.split_at(split);
    let multiplier: u128 = match suffix {
        "" => 1,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "Ti" => 1 << 40,
        "Pi" => 1 << 50,
        "Ei" => 1 << 60,
        "k" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "T" => 1_000_000_000_000,
        "P" => 1_000_000_000_000_000,
        "E" => 1_000_000_000_000_000_000,
        _ => return None,
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    let digits: u128 = format!("{whole}{fraction}").parse().ok()?;
    let scale = 10u128.checked_pow(u32::try_from(fraction.len()).ok()?)?;
    let scaled = digits.checked_mul(multiplier)?;
    if !scaled.is_multiple_of(scale) {
        return None;
    }
    u64::try_from(scaled / scale).ok()
}

/// CEL: an ONTAP object name (SVM, IPspace, account): a letter or `_`, then letters, digits,
/// `_`, `-` or `.`. Lengths are enforced by the schema (`maxLength`), which also bounds the CEL
/// cost estimate.
pub const ONTAP_NAME: &str = "self.matches('^[A-Za-z_][A-Za-z0-9_.-]*$')";
/// Message for [`ONTAP_NAME`].
pub const ONTAP_NAME_MESSAGE: &str =
    "must start with a letter or '_' and contain only letters, digits, '_', '-' and '.'";

/// CEL over a list of aggregate names: ONTAP allows letters, digits and `_`, starting with a
/// letter or `_`.
pub const AGGREGATE_NAMES: &str = "self.all(a, a.matches('^[A-Za-z_][A-Za-z0-9_]*$'))";
/// Message for [`AGGREGATE_NAMES`].
pub const AGGREGATE_NAMES_MESSAGE: &str =
    "aggregate names start with a letter or '_' and contain only letters, digits and '_'";

/// Account names the operator refuses to manage: ONTAP's built-in cluster accounts, and
/// `vsadmin`, the locked account ONTAP creates in every SVM (managing it would mean taking over
/// an account the operator did not create).
pub const RESERVED_ACCOUNTS: [&str; 5] = ["admin", "diag", "autosupport", "root", "vsadmin"];

/// CEL for [`RESERVED_ACCOUNTS`], compared case-insensitively.
pub const NOT_RESERVED_ACCOUNT: &str =
    "!(self.lowerAscii() in ['admin', 'diag', 'autosupport', 'root', 'vsadmin'])";
/// Message for [`NOT_RESERVED_ACCOUNT`].
pub const NOT_RESERVED_ACCOUNT_MESSAGE: &str =
    "admin, diag, autosupport, root and vsadmin are ONTAP's built-in accounts; choose another name";

/// CEL: a credential rotation period, a Go duration of whole hours, minutes and seconds
/// (`720h`, `1h30m`), at least a minute: a rotation replaces a password that still works, and
/// one every few seconds would keep every consumer chasing it. The Rust twin is
/// [`rotation_period`]. `duration()` only after the pattern held, or an invalid value would be
/// a CEL runtime error instead of this message.
pub const ROTATION_PERIOD: &str =
    "self.matches('^([0-9]{1,9}(h|m|s))+$') && duration(self) >= duration('1m')";
/// Message for [`ROTATION_PERIOD`].
pub const ROTATION_PERIOD_MESSAGE: &str =
    "must be a duration of hours, minutes and seconds such as 720h or 1h30m, at least 1m";
/// The shortest rotation period.
pub const MIN_ROTATION_PERIOD: std::time::Duration = std::time::Duration::from_secs(60);

/// The period `value` names, if it is one [`ROTATION_PERIOD`] admits: an object stored before
/// the rule, or written around it, is refused by the controller with the same message.
pub fn rotation_period(value: &str) -> Option<std::time::Duration> {
    let mut total = 0u64;
    let mut digits = String::new();
    for c in value.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let unit = match c {
            'h' => 3600,
            'm' => 60,
            's' => 1,
            _ => return None,
        };
        if digits.is_empty() || digits.len() > 9 {
            return None;
        }
        let amount: u64 = digits.parse().ok()?;
        total = total.checked_add(amount.checked_mul(unit)?)?;
        digits.clear();
    }
    let period = std::time::Duration::from_secs(total);
    (digits.is_empty() && !value.is_empty() && period >= MIN_ROTATION_PERIOD).then_some(period)
}

/// Why the management LIF takes no `protocols`.
pub const MANAGEMENT_LIF_PROTOCOLS_MESSAGE: &str =
    "the management LIF serves no data protocol: its service policy is default-management";
/// Why a data LIF names one protocol: custom service policies could serve several, but each of
/// ONTAP's default data policies serves files or blocks, and NVMe/TCP shares a LIF with no
/// other protocol.
pub const LIF_PROTOCOL_COUNT_MESSAGE: &str =
    "a data LIF serves exactly one protocol with ONTAP's default service policies";
/// A data LIF names no protocol where it must. No `'` in this and the next two messages: CEL
/// message expressions quote them.
pub const LIF_PROTOCOL_REQUIRED: &str =
    "required when the SVM enables more than one protocol: name the one this data LIF serves";
/// After the protocol a data LIF names.
pub const LIF_PROTOCOL_NOT_ENABLED: &str = "is not among the protocols the SVM enables";
/// After the protocol and a comma.
pub const LIF_PROTOCOL_UNSERVED: &str = "which the SVM enables, is served by no data LIF";

/// Why the protocols data LIFs name do not fit the SVM's: the Rust twin of the
/// StorageVirtualMachine CRD's rules, for the SVM controller and the Gardener extension's
/// providerConfig alike. `lif` is the data LIF's index.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LifProtocolsError {
    #[error("{LIF_PROTOCOL_COUNT_MESSAGE}, not {count}")]
    NotOne { lif: usize, count: usize },
    #[error("{protocol} {LIF_PROTOCOL_NOT_ENABLED}")]
    NotEnabled { lif: usize, protocol: Protocol },
    #[error("{LIF_PROTOCOL_REQUIRED}")]
    Required { lif: usize },
    #[error("{protocol}, {LIF_PROTOCOL_UNSERVED}")]
    Unserved { protocol: Protocol },
}

impl LifProtocolsError {
    /// The data LIF at fault; `None`: the LIFs together.
    pub fn lif(&self) -> Option<usize> {
        match self {
            Self::NotOne { lif, .. } | Self::NotEnabled { lif, .. } | Self::Required { lif } => {
                Some(*lif)
            }
            Self::Unserved { .. } => None,
        }
    }
}

/// The protocol each data LIF serves, from the protocols it names (`None`: it names none) and
/// those the SVM enables: the one it names, else the SVM's only one; `None` only where the SVM
/// enables none. Refused as the CRD refuses: a LIF naming other than one protocol or one the
/// SVM does not enable; with several protocols, a LIF naming none or a protocol no LIF serves.
pub fn lif_protocols(
    enabled: &[Protocol],
    named: &[Option<&[Protocol]>],
) -> Result<Vec<Option<Protocol>>, LifProtocolsError> {
    let mut served = Vec::with_capacity(named.len());
    for (lif, names) in named.iter().enumerate() {
        let protocol = match names {
            Some([protocol]) if enabled.contains(protocol) => Some(*protocol),
            Some([protocol]) => {
                return Err(LifProtocolsError::NotEnabled {
                    lif,
                    protocol: *protocol,
                });
            }
            Some(names) => {
                return Err(LifProtocolsError::NotOne {
                    lif,
                    count: names.len(),
                });
            }
            None if enabled.len() > 1 => return Err(LifProtocolsError::Required { lif }),
            None => enabled.first().copied(),
        };
        served.push(protocol);
    }
    if let Some(protocol) = enabled.iter().find(|p| !served.contains(&Some(**p))) {
        return Err(LifProtocolsError::Unserved {
            protocol: *protocol,
        });
    }
    Ok(served)
}

/// Why a LIF's placement cannot be: `homePort` without its `homeNode`.
pub const HOME_PORT_NEEDS_NODE: &str = "homePort names a port of homeNode: set homeNode too";
/// Why a LIF's placement cannot be: both a port and a broadcast domain.
pub const PORT_OR_DOMAIN: &str = "homePort and broadcastDomain exclude each other: ONTAP homes a LIF on the port named, or picks a port in the broadcast domain";
/// Why a LIF's placement cannot be: a VIP LIF placed on a port or in a broadcast domain.
pub const VIP_UNPLACED: &str =
    "a VIP LIF lives on its node's VIP port: it takes no homePort or broadcastDomain";

/// The rules of a LIF's placement, per ONTAP's interface schema ("specifying a port implies a
/// node"; "for POST, broadcast_domain can be specified alone or with home_node"; a VIP LIF has
/// no ethernet port): the Rust twin of `LifSpec`'s CEL rules. The error names the field of the
/// LIF it concerns and why.
pub fn lif_placement(
    home_node: bool,
    home_port: bool,
    broadcast_domain: bool,
    vip: bool,
) -> Result<(), (&'static str, &'static str)> {
    if home_port && !home_node {
        return Err(("homePort", HOME_PORT_NEEDS_NODE));
    }
    if home_port && broadcast_domain {
        return Err(("broadcastDomain", PORT_OR_DOMAIN));
    }
    if vip && (home_port || broadcast_domain) {
        return Err(("vip", VIP_UNPLACED));
    }
    Ok(())
}

/// The longest SVM name ONTAP accepts (error 13434911 beyond it).
pub const SVM_NAME_MAX: usize = 47;
/// ONTAP's bounds on user names (error 7077899 outside them).
pub const ACCOUNT_NAME_LEN: std::ops::RangeInclusive<usize> = 3..=64;
/// Rust twin of [`ONTAP_NAME`] (without length limits).
pub fn is_ontap_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(is_ontap_name_char)
}

/// A character [`ONTAP_NAME`] allows after the first.
pub fn is_ontap_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')
}

/// A valid SVM name: [`is_ontap_name`], at most [`SVM_NAME_MAX`] characters, not `all`.
pub fn is_svm_name(s: &str) -> bool {
    s.len() <= SVM_NAME_MAX && is_ontap_name(s) && s != "all"
}

/// A valid account name for the operator to manage: [`is_ontap_name`], within
/// [`ACCOUNT_NAME_LEN`], not one of [`RESERVED_ACCOUNTS`].
pub fn is_account_name(s: &str) -> bool {
    ACCOUNT_NAME_LEN.contains(&s.len())
        && is_ontap_name(s)
        && !RESERVED_ACCOUNTS.iter().any(|r| r.eq_ignore_ascii_case(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotation_periods() {
        use std::time::Duration;
        for (ok, secs) in [
            ("720h", 720 * 3600),
            ("1h30m", 5400),
            ("1m", 60),
            ("90s", 90),
        ] {
            assert_eq!(rotation_period(ok), Some(Duration::from_secs(secs)), "{ok}");
        }
        for bad in [
            "",
            "59s",
            "h",
            "1",
            "1d",
            "1.5h",
            "-1h",
            "1h 30m",
            "1234567890h",
        ] {
            assert_eq!(rotation_period(bad), None, "{bad}");
        }
    }

    #[test]
    fn ontap_names() {
        for ok in ["a", "_", "svm1", "k8s_ns_name", "A.b-c_9", "_x"] {
            assert!(is_ontap_name(ok), "{ok}");
        }
        for bad in ["", "1abc", "-a", ".a", "a b", "a/b", "ä", "a:b", "a@b"] {
            assert!(!is_ontap_name(bad), "{bad}");
        }
    }

    #[test]
    fn svm_names() {
        assert!(is_svm_name(&"a".repeat(47)));
        assert!(!is_svm_name(&"a".repeat(48)));
        assert!(!is_svm_name("all"));
        assert!(is_svm_name("All"), "ONTAP reserves lowercase 'all' only");
    }

    #[test]
    fn account_names() {
        assert!(is_account_name("vsadmin-x"));
        assert!(is_account_name(&"a".repeat(64)));
        for bad in [
            "ab", "vsadmin", "VSAdmin", "admin", "diag", "root", "1user", "a b c",
        ] {
            assert!(!is_account_name(bad), "{bad}");
        }
        assert!(!is_account_name(&"a".repeat(65)));
    }

    #[test]
    fn reserved_accounts_match_the_cel_list() {
        for name in RESERVED_ACCOUNTS {
            assert!(
                NOT_RESERVED_ACCOUNT.contains(&format!("'{name}'")),
                "{name}"
            );
        }
        assert_eq!(
            NOT_RESERVED_ACCOUNT.matches('\'').count(),
            2 * RESERVED_ACCOUNTS.len()
        );
    }

    #[test]
    fn quantities_become_bytes() {
        assert_eq!(quantity_bytes("500Gi"), Some(500 << 30));
        assert_eq!(quantity_bytes("2T"), Some(2_000_000_000_000));
        assert_eq!(quantity_bytes("1.5Gi"), Some(3 << 29));
        assert_eq!(quantity_bytes("1048576"), Some(1 << 20));
        assert_eq!(quantity_bytes("0"), Some(0));
        for refused in [
            "",
            "Gi",
            "1.5",
            "1e3",
            "100m",
            "-1",
            "20000Ei",
            "1.0000000001k",
        ] {
            assert_eq!(quantity_bytes(refused), None, "{refused}");
        }
    }
}
