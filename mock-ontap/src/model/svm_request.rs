//! What a client asks of SVMs: the POST and PATCH bodies, with the name-or-uuid references and
//! toggles inside them. Apart from the SVMs because a job carries its PATCH until the change
//! lands: jobs import these shapes, SVMs import jobs, and nothing imports back.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

#[derive(Debug, Clone, Default, Deserialize)]
pub struct NameRef {
    pub name: Option<String>,
    pub uuid: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Toggle {
    pub enabled: Option<bool>,
    pub allowed: Option<bool>,
}

/// `dns` of an SVM POST: the SVM's DNS domains and name servers.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct DnsSpec {
    #[serde(default)]
    pub domains: Vec<String>,
    #[serde(default)]
    pub servers: Vec<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct SvmCreate {
    pub name: Option<String>,
    pub comment: Option<String>,
    pub language: Option<String>,
    pub ipspace: Option<NameRef>,
    pub aggregates: Option<Vec<NameRef>>,
    pub nfs: Option<Toggle>,
    pub iscsi: Option<Toggle>,
    pub nvme: Option<Toggle>,
    pub dns: Option<DnsSpec>,
    pub max_volumes: Option<MaxVolumes>,
    pub storage: Option<StorageLimitSpec>,
}

impl SvmCreate {
    pub const FIELDS: &'static [&'static str] = &[
        "name",
        "comment",
        "language",
        "ipspace.name",
        "ipspace.uuid",
        "aggregates.name",
        "aggregates.uuid",
        "nfs.enabled",
        "nfs.allowed",
        "iscsi.enabled",
        "iscsi.allowed",
        "nvme.enabled",
        "nvme.allowed",
        "dns.domains",
        "dns.servers",
        "max_volumes",
        "storage.limit",
        "storage.limit_threshold_alert",
    ];

    /// netapp-ontap's `Svm` lists `qos_policy` as patchable, not postable.
    pub const NOT_POSTABLE: &'static [&'static str] = &["qos_policy"];
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct SvmPatch {
    pub name: Option<String>,
    pub comment: Option<String>,
    pub state: Option<String>,
    pub language: Option<String>,
    pub aggregates: Option<Vec<NameRef>>,
    pub nfs: Option<Toggle>,
    pub iscsi: Option<Toggle>,
    pub nvme: Option<Toggle>,
    pub max_volumes: Option<MaxVolumes>,
    pub storage: Option<StorageLimitSpec>,
    pub qos_policy: Option<NameRef>,
}

impl SvmPatch {
    pub const FIELDS: &'static [&'static str] = &[
        "name",
        "comment",
        "state",
        "language",
        "aggregates.name",
        "aggregates.uuid",
        "nfs.allowed",
        "iscsi.allowed",
        "nvme.allowed",
        "max_volumes",
        "storage.limit",
        "storage.limit_threshold_alert",
        "qos_policy.name",
        "qos_policy.uuid",
    ];

    /// Readable fields ONTAP sets only at creation: netapp-ontap's `SvmNfs`, `SvmIscsi` and
    /// `SvmNvme` list `enabled` in `postable_fields` but not in `patchable_fields`. The protocol
    /// is switched on its service (`/api/protocols/...`).
    pub const NOT_PATCHABLE: &'static [&'static str] = &[
        "nfs.enabled",
        "iscsi.enabled",
        "nvme.enabled",
        "fcp.enabled",
    ];
}

/// `max_volumes`: netapp-ontap's `Svm.max_volumes` is a string, "either the string
/// \"unlimited\" or a number"; NetApp's examples send the number as a string (`"200"`), so a
/// JSON number and a numeric string are both taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaxVolumes {
    Unlimited,
    Limit(u64),
}

impl MaxVolumes {
    pub fn limit(self) -> Option<u64> {
        match self {
            MaxVolumes::Unlimited => None,
            MaxVolumes::Limit(n) => Some(n),
        }
    }
}

impl<'de> Deserialize<'de> for MaxVolumes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match Value::deserialize(d)? {
            Value::String(s) if s == "unlimited" => Ok(MaxVolumes::Unlimited),
            Value::String(s) => s
                .parse()
                .map(MaxVolumes::Limit)
                .map_err(|_| D::Error::custom("max_volumes is \"unlimited\" or a number")),
            Value::Number(n) => n
                .as_u64()
                .map(MaxVolumes::Limit)
                .ok_or_else(|| D::Error::custom("max_volumes is \"unlimited\" or a number")),
            _ => Err(D::Error::custom("max_volumes is \"unlimited\" or a number")),
        }
    }
}

/// `storage` of an SVM POST or PATCH (ONTAP 9.13.1+): the SVM's capacity limit and the
/// percentage of it at which ONTAP alerts.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct StorageLimitSpec {
    pub limit: Option<Size>,
    pub limit_threshold_alert: Option<Size>,
}

/// A size in bytes as ONTAP takes it: a JSON number, or a string with an optional unit
/// (NetApp's examples send `"40GB"`; netapp-ontap's `Size` reads K, KB, M, MB, G, GB, T, TB,
/// P, PB as powers of 1024).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size(pub u64);

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let invalid = || D::Error::custom("not a size: a number of bytes or a number with a unit");
        match Value::deserialize(d)? {
            Value::Number(n) => n.as_u64().map(Size).ok_or_else(invalid),
            Value::String(s) => parse_size(&s).map(Size).ok_or_else(invalid),
            _ => Err(invalid()),
        }
    }
}

fn parse_size(text: &str) -> Option<u64> {
    const UNITS: &[(&str, u32)] = &[
        ("KB", 1),
        ("K", 1),
        ("MB", 2),
        ("M", 2),
        ("GB", 3),
        ("G", 3),
        ("TB", 4),
        ("T", 4),
        ("PB", 5),
        ("P", 5),
        ("B", 0),
    ];
    let upper = text.trim().to_ascii_uppercase();
    let (digits, power) = UNITS
        .iter()
        .find_map(|(unit, power)| upper.strip_suffix(unit).map(|d| (d.to_owned(), *power)))
        .unwrap_or((upper, 0));
    digits
        .trim()
        .parse::<u64>()
        .ok()?
        .checked_mul(1024_u64.checked_pow(power)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_netapp_ontap_reads_them() {
        assert_eq!(parse_size("40GB"), Some(40 << 30));
        assert_eq!(parse_size("400mb"), Some(400 << 20));
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("1T"), Some(1 << 40));
        assert_eq!(parse_size("lots"), None);
        assert_eq!(parse_size("-1GB"), None);
    }

    #[test]
    fn max_volumes_is_unlimited_or_a_number() {
        let read = |v: Value| serde_json::from_value::<MaxVolumes>(v).ok();
        assert_eq!(
            read(serde_json::json!("unlimited")),
            Some(MaxVolumes::Unlimited)
        );
        assert_eq!(read(serde_json::json!("200")), Some(MaxVolumes::Limit(200)));
        assert_eq!(read(serde_json::json!(7)), Some(MaxVolumes::Limit(7)));
        assert_eq!(read(serde_json::json!("many")), None);
        assert_eq!(read(serde_json::json!(-1)), None);
    }
}
