//! Netmask and prefix-length arithmetic of LIF addresses: the `ip.netmask` the operator sends,
//! and the prefix length of one ONTAP reports in either notation.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The `ip.netmask` the operator sends: the prefix length as a decimal string, which ONTAP
/// accepts for IPv4 and IPv6 alike (a dotted mask would only work for IPv4).
pub fn netmask_for(prefix_length: u8) -> String {
    prefix_length.to_string()
}

/// The prefix length in an `ip.netmask` as ONTAP reports it: a decimal prefix length, or a
/// contiguous mask in address notation (`255.255.255.0`, `ffff:ffff:ffff:ffff::`), which some
/// versions return. None for anything else, or a prefix too long for `address`'s family.
pub fn prefix_from_netmask(netmask: &str, address: IpAddr) -> Option<u8> {
    let max = max_prefix(address);
    let netmask = netmask.trim();
    if let Ok(prefix) = netmask.parse::<u8>() {
        return (prefix <= max).then_some(prefix);
    }
    let prefix = match (netmask.parse::<IpAddr>().ok()?, address) {
        (IpAddr::V4(m), IpAddr::V4(_)) => contiguous_prefix(u128::from(u32::from(m)) << 96)?,
        (IpAddr::V6(m), IpAddr::V6(_)) => contiguous_prefix(u128::from(m))?,
        _ => return None,
    };
    Some(prefix)
}

/// Whether `address` lies in `cidr` (`192.0.2.0/24`, `2001:db8::/64`); `None` for a malformed
/// range. Addresses of the other family never do.
pub fn cidr_contains(cidr: &str, address: IpAddr) -> Option<bool> {
    let (network, prefix) = cidr.trim().split_once('/')?;
    let network: IpAddr = network.parse().ok()?;
    let prefix: u8 = prefix.parse().ok()?;
    if prefix > max_prefix(network) {
        return None;
    }
    let bits = |ip: IpAddr| match ip {
        IpAddr::V4(v4) => u128::from(u32::from(v4)) << 96,
        IpAddr::V6(v6) => u128::from(v6),
    };
    // Both families sit in the top bits, so the prefix counts from the top either way.
    let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
    Some(network.is_ipv4() == address.is_ipv4() && bits(network) & mask == bits(address) & mask)
}

/// The IPv4 mask of a prefix length (`24` → `255.255.255.0`); None above 32.
pub fn ipv4_mask(prefix_length: u8) -> Option<Ipv4Addr> {
    (prefix_length <= 32).then(|| {
        Ipv4Addr::from(
            u32::MAX
                .checked_shl(32 - u32::from(prefix_length))
                .unwrap_or(0),
        )
    })
}

/// The IPv6 mask of a prefix length (`64` → `ffff:ffff:ffff:ffff::`); None above 128.
pub fn ipv6_mask(prefix_length: u8) -> Option<Ipv6Addr> {
    (prefix_length <= 128).then(|| {
        Ipv6Addr::from(
            u128::MAX
                .checked_shl(128 - u32::from(prefix_length))
                .unwrap_or(0),
        )
    })
}

/// Leading ones of a left-aligned mask, if the ones are contiguous.
fn contiguous_prefix(bits: u128) -> Option<u8> {
    let ones = bits.leading_ones();
    (bits.checked_shl(ones).unwrap_or(0) == 0).then_some(ones as u8)
}

/// The longest prefix of `address`'s family.
pub fn max_prefix(address: IpAddr) -> u8 {
    if address.is_ipv4() { 32 } else { 128 }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn addresses_in_ranges() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(cidr_contains("192.0.2.0/24", ip("192.0.2.77")), Some(true));
        assert_eq!(cidr_contains("192.0.2.0/24", ip("192.0.3.1")), Some(false));
        assert_eq!(cidr_contains("0.0.0.0/0", ip("203.0.113.9")), Some(true));
        assert_eq!(cidr_contains("192.0.2.10/32", ip("192.0.2.10")), Some(true));
        assert_eq!(
            cidr_contains("2001:db8::/64", ip("2001:db8::1")),
            Some(true)
        );
        assert_eq!(
            cidr_contains("2001:db8::/64", ip("2001:db9::1")),
            Some(false)
        );
        assert_eq!(
            cidr_contains("::/0", ip("192.0.2.1")),
            Some(false),
            "families differ"
        );
        assert_eq!(cidr_contains("192.0.2.0/33", ip("192.0.2.1")), None);
        assert_eq!(cidr_contains("nonsense", ip("192.0.2.1")), None);
    }

    #[test]
    fn netmasks() {
        let v4: IpAddr = "192.0.2.1".parse().unwrap();
        let v6: IpAddr = "2001:db8::1".parse().unwrap();
        assert_eq!(netmask_for(24), "24");
        assert_eq!(prefix_from_netmask("24", v4), Some(24));
        assert_eq!(prefix_from_netmask("255.255.255.0", v4), Some(24));
        assert_eq!(prefix_from_netmask("255.255.255.255", v4), Some(32));
        assert_eq!(prefix_from_netmask("0.0.0.0", v4), Some(0));
        assert_eq!(prefix_from_netmask("255.0.255.0", v4), None);
        assert_eq!(prefix_from_netmask("33", v4), None);
        assert_eq!(prefix_from_netmask("64", v6), Some(64));
        assert_eq!(prefix_from_netmask("ffff:ffff:ffff:ffff::", v6), Some(64));
        assert_eq!(prefix_from_netmask("255.255.255.0", v6), None);
        assert_eq!(prefix_from_netmask("129", v6), None);
        assert_eq!(prefix_from_netmask("", v4), None);
        assert_eq!(ipv4_mask(24), Some(Ipv4Addr::new(255, 255, 255, 0)));
        assert_eq!(ipv4_mask(0), Some(Ipv4Addr::UNSPECIFIED));
        assert_eq!(ipv4_mask(33), None);
        assert_eq!(
            ipv6_mask(64),
            Some("ffff:ffff:ffff:ffff::".parse().unwrap())
        );
        assert_eq!(ipv6_mask(128), Some(Ipv6Addr::from(u128::MAX)));
        assert_eq!(ipv6_mask(129), None);
    }

    proptest! {
        #[test]
        fn netmask_round_trips(v4 in 0u8..=32, v6 in 0u8..=128) {
            let a4: IpAddr = "10.0.0.1".parse().unwrap();
            let a6: IpAddr = "2001:db8::1".parse().unwrap();
            prop_assert_eq!(prefix_from_netmask(&netmask_for(v4), a4), Some(v4));
            prop_assert_eq!(prefix_from_netmask(&ipv4_mask(v4).unwrap().to_string(), a4), Some(v4));
            prop_assert_eq!(prefix_from_netmask(&netmask_for(v6), a6), Some(v6));
            prop_assert_eq!(prefix_from_netmask(&ipv6_mask(v6).unwrap().to_string(), a6), Some(v6));
        }
    }
}
