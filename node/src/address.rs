//! Which network addresses the node's outbound HTTP may connect to.
//!
//! The LLM judge's endpoint is the operator's own setting and may well be loopback or a
//! private address ([`Destinations::Any`]). The sources that tier verification retrieves are
//! named by whoever wrote the citation, so retrieval connects only to public unicast
//! addresses ([`Destinations::Public`]): a citation must not make the node read its own
//! loopback services, its private network or a cloud metadata endpoint (server-side
//! request forgery). The rule is applied to the addresses a host *resolves to* (a literal IP
//! in the URL included), and the connection is then made to exactly one of the addresses
//! that passed (`crate::http`), so a name cannot resolve to a public address for the check
//! and to a private one for the connection.
//!
//! The operator may exempt exact hosts (`[retrieval] allow_hosts`, for an internal source
//! mirror or a test server). An entry is matched against the URL's host as written, not
//! against what it resolves to: `127.0.0.1` exempts `https://127.0.0.1:8443/x` (any port),
//! never `https://localhost/x` nor a public name that resolves to 127.0.0.1.
//!
//! Everything here is pure (no I/O).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use thiserror::Error;

/// The config key that exempts hosts from the public-address rule (named in errors).
pub const ALLOW_HOSTS_KEY: &str = "retrieval.allow_hosts";

/// Why an address is not a public unicast address: the rule it falls under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NonPublic {
    /// 0.0.0.0 or ::.
    Unspecified,
    /// 0.0.0.0/8 ("this network").
    ThisNetwork,
    /// 127.0.0.0/8 or ::1.
    Loopback,
    /// 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16.
    Private,
    /// 100.64.0.0/10, carrier-grade NAT.
    Shared,
    /// 169.254.0.0/16 (the cloud metadata address 169.254.169.254 among them) or fe80::/10.
    LinkLocal,
    /// fc00::/7.
    UniqueLocal,
    /// 224.0.0.0/4 or ff00::/8.
    Multicast,
    /// 255.255.255.255.
    Broadcast,
    /// 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32, 3fff::/20.
    Documentation,
    /// 198.18.0.0/15.
    Benchmarking,
    /// 192.0.0.0/24 or 2001::/23 (Teredo among them).
    ProtocolAssignment,
    /// 192.88.99.0/24 (6to4 relays) or fec0::/10 (site-local).
    Deprecated,
    /// 240.0.0.0/4 (below the broadcast address).
    Reserved,
    /// An IPv6 address outside global unicast 2000::/3 (other than the forms above and the
    /// IPv4-carrying prefixes, which are judged by the IPv4 address they carry).
    NotGlobalUnicast,
}

impl NonPublic {
    /// The rule in words, with its ranges.
    pub fn rule(self) -> &'static str {
        match self {
            NonPublic::Unspecified => "the unspecified address (0.0.0.0, ::)",
            NonPublic::ThisNetwork => "\"this network\" (0.0.0.0/8)",
            NonPublic::Loopback => "loopback (127.0.0.0/8, ::1)",
            NonPublic::Private => "private (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16)",
            NonPublic::Shared => "carrier-grade NAT space (100.64.0.0/10)",
            NonPublic::LinkLocal => {
                "link-local (169.254.0.0/16, where cloud metadata services answer, fe80::/10)"
            }
            NonPublic::UniqueLocal => "unique local (fc00::/7)",
            NonPublic::Multicast => "multicast (224.0.0.0/4, ff00::/8)",
            NonPublic::Broadcast => "broadcast (255.255.255.255)",
            NonPublic::Documentation => {
                "documentation (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32, \
                 3fff::/20)"
            }
            NonPublic::Benchmarking => "benchmarking (198.18.0.0/15)",
            NonPublic::ProtocolAssignment => "IETF protocol assignments (192.0.0.0/24, 2001::/23)",
            NonPublic::Deprecated => "deprecated (192.88.99.0/24, fec0::/10)",
            NonPublic::Reserved => "reserved (240.0.0.0/4)",
            NonPublic::NotGlobalUnicast => "outside IPv6 global unicast (2000::/3)",
        }
    }
}

impl fmt::Display for NonPublic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.rule())
    }
}

/// `None` when `ip` is a public unicast address; otherwise the rule it falls under. An
/// IPv6 address that carries an IPv4 one (IPv4-mapped `::ffff:a.b.c.d`, NAT64
/// `64:ff9b::a.b.c.d`, 6to4 `2002:AABB:CCDD::/48`) is judged by the IPv4 address it carries.
pub fn non_public(ip: IpAddr) -> Option<NonPublic> {
    match ip {
        IpAddr::V4(v4) => non_public_v4(v4),
        IpAddr::V6(v6) => non_public_v6(v6),
    }
}

/// Whether `ip` is a public unicast address.
pub fn is_public(ip: IpAddr) -> bool {
    non_public(ip).is_none()
}

fn non_public_v4(ip: Ipv4Addr) -> Option<NonPublic> {
    let [a, b, c, _] = ip.octets();
    Some(if ip.is_unspecified() {
        NonPublic::Unspecified
    } else if a == 0 {
        NonPublic::ThisNetwork
    } else if ip.is_loopback() {
        NonPublic::Loopback
    } else if ip.is_private() {
        NonPublic::Private
    } else if a == 100 && (b & 0xc0) == 64 {
        NonPublic::Shared
    } else if ip.is_link_local() {
        NonPublic::LinkLocal
    } else if ip.is_documentation() {
        NonPublic::Documentation
    } else if a == 198 && (b & 0xfe) == 18 {
        NonPublic::Benchmarking
    } else if a == 192 && b == 0 && c == 0 {
        NonPublic::ProtocolAssignment
    } else if a == 192 && b == 88 && c == 99 {
        NonPublic::Deprecated
    } else if ip.is_multicast() {
        NonPublic::Multicast
    } else if ip.is_broadcast() {
        NonPublic::Broadcast
    } else if a >= 240 {
        NonPublic::Reserved
    } else {
        return None;
    })
}

fn non_public_v6(ip: Ipv6Addr) -> Option<NonPublic> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return non_public_v4(v4);
    }
    let s = ip.segments();
    Some(if ip.is_unspecified() {
        NonPublic::Unspecified
    } else if ip.is_loopback() {
        NonPublic::Loopback
    } else if ip.is_multicast() {
        NonPublic::Multicast
    } else if ip.is_unicast_link_local() {
        NonPublic::LinkLocal
    } else if ip.is_unique_local() {
        NonPublic::UniqueLocal
    } else if (s[0] & 0xffc0) == 0xfec0 {
        NonPublic::Deprecated
    } else if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        // NAT64 (well-known prefix): a DNS64 resolver answers it for IPv4-only names.
        return non_public_v4(Ipv4Addr::from(((s[6] as u32) << 16) | s[7] as u32));
    } else if (s[0] & 0xe000) != 0x2000 {
        NonPublic::NotGlobalUnicast
    } else if (s[0] == 0x2001 && s[1] == 0x0db8) || (s[0] == 0x3fff && s[1] < 0x1000) {
        NonPublic::Documentation
    } else if s[0] == 0x2001 && s[1] < 0x0200 {
        NonPublic::ProtocolAssignment
    } else if s[0] == 0x2002 {
        // 6to4: the IPv4 address of the site follows the prefix.
        return non_public_v4(Ipv4Addr::from(((s[1] as u32) << 16) | s[2] as u32));
    } else {
        return None;
    })
}

/// One `allow_hosts` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
enum AllowedHost {
    /// A host name, lowercased.
    Name(String),
    Ip(IpAddr),
}

/// Hosts exempt from the public-address rule (`[retrieval] allow_hosts`): exact host names
/// (case-insensitive) or IP addresses, matched against the URL's host as written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowHosts(Vec<AllowedHost>);

/// An `allow_hosts` entry that is not an exact host name or IP address.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error(
    "{ALLOW_HOSTS_KEY} entry {entry:?}: {reason}; give exact host names or IP addresses, \
     e.g. allow_hosts = [\"mirror.internal\", \"127.0.0.1\"]"
)]
pub struct AllowHostError {
    pub entry: String,
    pub reason: &'static str,
}

impl AllowHosts {
    /// Parses the configured entries. An IPv6 address may be given with or without
    /// brackets. Wildcards, ports, paths and URLs are refused rather than guessed at.
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<Self, AllowHostError> {
        let mut out = Vec::with_capacity(entries.len());
        for entry in entries {
            let entry = entry.as_ref();
            let bad = |reason| AllowHostError {
                entry: entry.to_owned(),
                reason,
            };
            let bare = entry
                .strip_prefix('[')
                .and_then(|e| e.strip_suffix(']'))
                .unwrap_or(entry);
            if let Ok(ip) = bare.parse::<IpAddr>() {
                out.push(AllowedHost::Ip(ip));
                continue;
            }
            if bare.is_empty() {
                return Err(bad("empty"));
            }
            if bare.contains("://") || bare.contains('/') {
                return Err(bad("a URL or path, not a host"));
            }
            if bare.contains('*') {
                return Err(bad("wildcards are not supported"));
            }
            if bare.contains(':') {
                return Err(bad(
                    "a port is not part of the host (every port is allowed)",
                ));
            }
            if !bare
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_')
            {
                return Err(bad(
                    "not a host name (letters, digits, '-', '_' and '.' only)",
                ));
            }
            out.push(AllowedHost::Name(bare.to_ascii_lowercase()));
        }
        Ok(Self(out))
    }

    /// Whether the URL host `host` (brackets of an IPv6 literal removed) is exempt.
    pub fn contains(&self, host: &str) -> bool {
        match host.parse::<IpAddr>() {
            Ok(ip) => self.0.contains(&AllowedHost::Ip(ip)),
            Err(_) => {
                let host = host.to_ascii_lowercase();
                self.0
                    .iter()
                    .any(|h| matches!(h, AllowedHost::Name(n) if *n == host))
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Where a client may connect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destinations {
    /// Any address: an endpoint the operator configured (the LLM judge).
    Any,
    /// Public unicast addresses only, except for the hosts listed (retrieval).
    Public(AllowHosts),
}

/// A destination refused by [`Destinations::Public`].
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error(
    "{host} ({ip}) is {rule}, not a public unicast address: sources are retrieved only from \
     public addresses, so that a citation cannot make the node read its own or its network's \
     services; to retrieve from this host anyway (an internal mirror, a test server), add \
     {host:?} to {ALLOW_HOSTS_KEY} in node.toml"
)]
pub struct AddressError {
    /// The URL's host.
    pub host: String,
    /// The first address it resolved to that was refused.
    pub ip: IpAddr,
    pub rule: NonPublic,
}

impl Destinations {
    /// Public addresses only, no host exempt.
    pub fn public_only() -> Self {
        Destinations::Public(AllowHosts::default())
    }

    /// The addresses `host` resolved to that may be connected to, in their order. An
    /// error when the rule refused every one of them; an empty list when there were none.
    pub fn vet(
        &self,
        host: &str,
        resolved: &[SocketAddr],
    ) -> Result<Vec<SocketAddr>, AddressError> {
        let allow = match self {
            Destinations::Any => return Ok(resolved.to_vec()),
            Destinations::Public(allow) => allow,
        };
        if allow.contains(host) {
            return Ok(resolved.to_vec());
        }
        let mut refused = None;
        let mut vetted = Vec::with_capacity(resolved.len());
        for addr in resolved {
            match non_public(addr.ip()) {
                None => vetted.push(*addr),
                Some(rule) => {
                    refused.get_or_insert(AddressError {
                        host: host.to_owned(),
                        ip: addr.ip(),
                        rule,
                    });
                }
            }
        }
        match refused {
            Some(e) if vetted.is_empty() => Err(e),
            _ => Ok(vetted),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(s: &str) -> Option<NonPublic> {
        non_public(s.parse().unwrap())
    }

    #[test]
    fn non_public_addresses_are_named_by_their_rule() {
        use NonPublic::*;
        for (ip, rule) in [
            ("0.0.0.0", Unspecified),
            ("0.1.2.3", ThisNetwork),
            ("127.0.0.1", Loopback),
            ("127.255.255.254", Loopback),
            ("10.0.0.1", Private),
            ("10.255.255.255", Private),
            ("172.16.0.1", Private),
            ("172.31.255.255", Private),
            ("192.168.1.1", Private),
            ("100.64.0.1", Shared),
            ("100.127.255.255", Shared),
            ("169.254.169.254", LinkLocal),
            ("169.254.0.1", LinkLocal),
            ("192.0.0.8", ProtocolAssignment),
            ("192.0.2.1", Documentation),
            ("198.51.100.7", Documentation),
            ("203.0.113.9", Documentation),
            ("198.18.0.1", Benchmarking),
            ("198.19.255.255", Benchmarking),
            ("192.88.99.1", Deprecated),
            ("224.0.0.1", Multicast),
            ("239.255.255.250", Multicast),
            ("240.0.0.1", Reserved),
            ("255.255.255.254", Reserved),
            ("255.255.255.255", Broadcast),
            ("::", Unspecified),
            ("::1", Loopback),
            ("::ffff:127.0.0.1", Loopback),
            ("::ffff:169.254.169.254", LinkLocal),
            ("::ffff:10.1.2.3", Private),
            ("::ffff:0.0.0.0", Unspecified),
            ("::127.0.0.1", NotGlobalUnicast),
            ("64:ff9b::127.0.0.1", Loopback),
            ("64:ff9b::a9fe:a9fe", LinkLocal),
            ("64:ff9b:1::1", NotGlobalUnicast),
            ("100::1", NotGlobalUnicast),
            ("fe80::1", LinkLocal),
            ("febf::1", LinkLocal),
            ("fec0::1", Deprecated),
            ("fc00::1", UniqueLocal),
            ("fd12:3456::1", UniqueLocal),
            ("ff02::1", Multicast),
            ("ff0e::1", Multicast),
            ("2001:db8::1", Documentation),
            ("3fff::1", Documentation),
            ("2001::1", ProtocolAssignment),
            ("2001:1ff::1", ProtocolAssignment),
            ("2002:7f00:1::1", Loopback),
            ("2002:c0a8:101::1", Private),
            ("4000::1", NotGlobalUnicast),
        ] {
            assert_eq!(class(ip), Some(rule), "{ip}");
        }
    }

    #[test]
    fn public_unicast_addresses_pass() {
        for ip in [
            "1.1.1.1",
            "8.8.8.8",
            "9.255.255.255",
            "11.0.0.1",
            "100.63.255.255",
            "100.128.0.1",
            "169.253.255.255",
            "172.15.255.255",
            "172.32.0.1",
            "192.0.1.1",
            "192.167.255.255",
            "192.169.0.1",
            "198.17.255.255",
            "198.20.0.1",
            "223.255.255.255",
            "2606:4700::1111",
            "2001:4860:4860::8888",
            "2001:200::1",
            "2a00:1450:4001::1",
            "3ffe::1",
            "::ffff:1.1.1.1",
            "64:ff9b::101:101",
            "2002:101:101::1",
        ] {
            assert_eq!(class(ip), None, "{ip}");
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
    }

    fn sa(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn vetting_filters_refuses_and_names_the_fix() {
        let public = Destinations::public_only();
        // Only private answers: refused, naming the host, the address, the rule and the key.
        let e = public
            .vet("localhost", &[sa("[::1]:443"), sa("127.0.0.1:443")])
            .unwrap_err();
        assert_eq!(e.ip, "::1".parse::<IpAddr>().unwrap());
        assert_eq!(e.rule, NonPublic::Loopback);
        let msg = e.to_string();
        assert!(
            msg.contains("localhost")
                && msg.contains("::1")
                && msg.contains("loopback")
                && msg.contains(ALLOW_HOSTS_KEY),
            "{msg}"
        );
        // Mixed answers: only the public ones are kept (the connection goes to one of them).
        assert_eq!(
            public
                .vet("x.example", &[sa("10.0.0.1:443"), sa("1.1.1.1:443")])
                .unwrap(),
            vec![sa("1.1.1.1:443")]
        );
        // Nothing resolved: nothing to connect to, nothing refused.
        assert_eq!(public.vet("x.example", &[]).unwrap(), vec![]);
        // The judge's client connects anywhere.
        assert_eq!(
            Destinations::Any
                .vet("localhost", &[sa("127.0.0.1:80")])
                .unwrap(),
            vec![sa("127.0.0.1:80")]
        );
    }

    #[test]
    fn allowed_hosts_match_the_url_host_exactly() {
        let allow =
            AllowHosts::parse(&["Mirror.Internal", "127.0.0.1", "[::1]", "fd00::7"]).unwrap();
        let d = Destinations::Public(allow.clone());
        assert!(allow.contains("mirror.internal") && allow.contains("MIRROR.internal"));
        assert!(allow.contains("127.0.0.1") && allow.contains("::1"));
        assert!(
            allow.contains("fd00:0::7"),
            "IP entries compare as addresses"
        );
        assert_eq!(
            d.vet("mirror.internal", &[sa("10.0.0.5:443")]).unwrap(),
            vec![sa("10.0.0.5:443")]
        );
        assert!(d.vet("127.0.0.1", &[sa("127.0.0.1:8443")]).is_ok());
        // Not by what a name resolves to, and not by suffix.
        assert!(d.vet("localhost", &[sa("127.0.0.1:8443")]).is_err());
        assert!(
            d.vet("evil.mirror.internal", &[sa("10.0.0.5:443")])
                .is_err()
        );
        assert!(d.vet("127.0.0.2", &[sa("127.0.0.2:443")]).is_err());
        assert!(!allow.is_empty() && AllowHosts::parse::<&str>(&[]).unwrap().is_empty());
    }

    #[test]
    fn allow_host_entries_that_are_not_hosts_are_refused() {
        for entry in [
            "",
            "*.internal",
            "mirror.internal:8443",
            "https://mirror.internal",
            "mirror.internal/x",
            "mirror internal",
            "127.0.0.0/8",
        ] {
            let e = AllowHosts::parse(&[entry]).unwrap_err();
            assert_eq!(e.entry, entry);
            assert!(e.to_string().contains(ALLOW_HOSTS_KEY), "{e}");
        }
    }
}
