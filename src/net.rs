//! Outbound HTTP: the guard every tool request goes through ([`Outbound`]), and helpers shared
//! by the tool runners and the LLM client (no database, no domain logic).
//!
//! The guard (CONTRACT.md "Outbound requests") refuses every address that is not public
//! unicast unless `[tools] allow_cidrs` names it. It is applied where the connection is made:
//! a host name is resolved by [`GuardedResolver`], which hands the connector only permitted
//! addresses (so there is no window between a check and a second lookup for DNS rebinding);
//! an address literal never reaches a resolver, so [`Outbound::check_url`] checks it as the
//! URL parser read it — `http://2130706433/`, `http://0x7f.1/`, `http://017700000001/` and
//! `http://[::ffff:127.0.0.1]/` all arrive as the address they spell.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use ipnet::IpNet;

/// What went wrong with a request that got no HTTP answer, in a few words.
pub fn transport_error_kind(e: &reqwest::Error) -> &'static str {
    if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "connection failed"
    } else {
        "request failed"
    }
}

/// A URL as it may be shown: no user name, password, query or fragment.
pub fn redact_url(u: &reqwest::Url) -> String {
    let mut u = u.clone();
    let _ = u.set_username("");
    let _ = u.set_password(None);
    if u.query().is_some() {
        u.set_query(Some("[redacted]"));
    }
    u.set_fragment(None);
    u.to_string()
}

/// Same, for a URL kept as text (an unparseable one is shown as `[invalid URL]`).
pub fn redact_url_text(u: &str) -> String {
    reqwest::Url::parse(u)
        .map(|u| redact_url(&u))
        .unwrap_or_else(|_| "[invalid URL]".into())
}

/// Why an address is refused, in a word an operator recognises.
pub fn refused_range(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => refused_v4(v4),
        IpAddr::V6(v6) => refused_v6(v6),
    }
}

fn refused_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        _ if ip.is_broadcast() => "broadcast",
        (0, _, _) => "unspecified (0.0.0.0/8)",
        (10, _, _) => "private (10.0.0.0/8)",
        (100, 64..=127, _) => "shared CGNAT (100.64.0.0/10)",
        (127, _, _) => "loopback",
        (169, 254, _) => "link-local (169.254.0.0/16, cloud metadata)",
        (172, 16..=31, _) => "private (172.16.0.0/12)",
        (192, 0, 0) => "IETF protocol assignments (192.0.0.0/24)",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "documentation",
        (192, 88, 99) => "6to4 relay anycast",
        (192, 168, _) => "private (192.168.0.0/16)",
        (198, 18..=19, _) => "benchmarking (198.18.0.0/15)",
        (224..=239, _, _) => "multicast",
        (240..=255, _, _) => "reserved (240.0.0.0/4)",
        _ => return None,
    })
}

fn refused_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    // forms that carry an IPv4 address: the IPv4 address decides
    if let Some(v4) = ip.to_ipv4_mapped() {
        return refused_v4(v4);
    }
    if ip.is_unspecified() {
        return Some("unspecified");
    }
    if ip.is_loopback() {
        return Some("loopback");
    }
    if s[..6] == [0; 6] {
        // IPv4-compatible ::a.b.c.d (deprecated)
        let v4 = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
        return Some(refused_v4(v4).unwrap_or("IPv4-compatible IPv6 (deprecated)"));
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        // NAT64 well-known prefix: a public IPv4 address behind it is public
        let v4 = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
        return refused_v4(v4);
    }
    if s[0] == 0x2002 {
        // 6to4: the embedded IPv4 address decides
        let v4 = Ipv4Addr::new((s[1] >> 8) as u8, s[1] as u8, (s[2] >> 8) as u8, s[2] as u8);
        return refused_v4(v4);
    }
    Some(match s[0] {
        0xff00..=0xffff => "multicast",
        0xfe80..=0xfebf => "link-local (fe80::/10)",
        0xfec0..=0xfeff => "site-local (fec0::/10)",
        0xfc00..=0xfdff => "unique local (fc00::/7)",
        0x2001 if s[1] == 0x0db8 => "documentation (2001:db8::/32)",
        0x2001 if s[1] < 0x0200 => "IETF protocol assignments (2001::/23)",
        0x3fff if s[1] < 0x1000 => "documentation (3fff::/20)",
        0x2000..=0x3fff => return None,
        _ => "not global unicast",
    })
}

/// A destination the policy refuses.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "destination {addr} is refused by the outbound policy ({range}); [tools] allow_cidrs can allow it"
)]
pub struct Blocked {
    pub addr: IpAddr,
    pub range: &'static str,
}

/// The outbound policy: refused ranges, the allow-list, the answer size cap.
#[derive(Debug, Clone)]
pub struct Outbound {
    allow: Arc<Vec<IpNet>>,
    /// Whether public unicast addresses may be reached without being in `allow`.
    public: bool,
    /// A tool answer longer than this fails the attempt.
    pub max_output_bytes: u64,
    /// Names resolved without DNS (tests pin a name to an address with this; the guard still
    /// checks what they resolve to).
    hosts: Arc<HashMap<String, Vec<IpAddr>>>,
}

impl Default for Outbound {
    fn default() -> Self {
        Self::new(Vec::new(), 1_048_576)
    }
}

impl Outbound {
    pub fn new(allow: Vec<IpNet>, max_output_bytes: u64) -> Self {
        Self {
            allow: Arc::new(allow),
            public: true,
            max_output_bytes,
            hosts: Arc::default(),
        }
    }

    pub fn from_settings(t: &crate::config::ToolSettings) -> Self {
        Self::new(
            t.allow_cidrs.clone().unwrap_or_default(),
            t.max_output_bytes,
        )
        .public(t.allow_public)
    }

    /// Whether public unicast addresses may be reached (`false`: only the allow-list can be).
    pub fn public(mut self, allowed: bool) -> Self {
        self.public = allowed;
        self
    }

    /// Resolve `name` to `addrs` without DNS (the guard still applies).
    pub fn with_host(mut self, name: &str, addrs: Vec<IpAddr>) -> Self {
        Arc::make_mut(&mut self.hosts).insert(name.to_ascii_lowercase(), addrs);
        self
    }

    /// May a connection be made to `ip`?
    pub fn check(&self, ip: IpAddr) -> Result<(), Blocked> {
        let ip = ip.to_canonical();
        if self.allow.iter().any(|n| n.contains(&ip)) {
            return Ok(());
        }
        match refused_range(ip) {
            None if self.public => Ok(()),
            None => Err(Blocked {
                addr: ip,
                range: "public, and [tools] allow_public is false",
            }),
            Some(range) => Err(Blocked { addr: ip, range }),
        }
    }

    /// Check a URL whose host is an address literal (a name is checked when it is resolved).
    pub fn check_url(&self, url: &reqwest::Url) -> Result<(), Blocked> {
        match url.host() {
            Some(url::Host::Ipv4(ip)) => self.check(IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => self.check(IpAddr::V6(ip)),
            _ => Ok(()),
        }
    }

    /// Would a request to `url` be refused? A literal is checked as it is; a name is resolved
    /// (as the guarded resolver would) and refused when every address it has is. Used to say
    /// where a refused redirect pointed; requests themselves are checked at connect time.
    pub async fn check_destination(&self, url: &reqwest::Url) -> Result<(), Blocked> {
        self.check_url(url)?;
        let Some(url::Host::Domain(name)) = url.host() else {
            return Ok(());
        };
        let name = name.to_ascii_lowercase();
        let found: Vec<IpAddr> = match self.hosts.get(&name) {
            Some(a) => a.clone(),
            None => match tokio::net::lookup_host((name.as_str(), 0)).await {
                Ok(addrs) => addrs.map(|a| a.ip()).collect(),
                Err(_) => return Ok(()),
            },
        };
        let mut first = None;
        for ip in found {
            match self.check(ip) {
                Ok(()) => return Ok(()),
                Err(b) => {
                    first.get_or_insert(b);
                }
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// An HTTP client that connects only where this policy allows: guarded resolution, no
    /// redirects followed, no proxy from the environment.
    pub fn client(&self) -> reqwest::Client {
        reqwest::Client::builder()
            .dns_resolver(Arc::new(GuardedResolver {
                policy: self.clone(),
            }))
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .pool_idle_timeout(std::time::Duration::from_secs(30))
            .build()
            .expect("reqwest client")
    }
}

/// Resolves host names and keeps only the addresses the policy permits; when it refuses them
/// all, the lookup fails with [`Blocked`] and no connection is attempted.
#[derive(Debug)]
pub struct GuardedResolver {
    policy: Outbound,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.policy.clone();
        let host = name.as_str().to_ascii_lowercase();
        Box::pin(async move {
            let found: Vec<IpAddr> = match policy.hosts.get(&host) {
                Some(addrs) => addrs.clone(),
                None => tokio::net::lookup_host((host.as_str(), 0))
                    .await?
                    .map(|a| a.ip())
                    .collect(),
            };
            let mut refused = None;
            let permitted: Vec<SocketAddr> = found
                .into_iter()
                .filter_map(|ip| match policy.check(ip) {
                    Ok(()) => Some(SocketAddr::new(ip, 0)),
                    Err(b) => {
                        refused.get_or_insert(b);
                        None
                    }
                })
                .collect();
            match (permitted.is_empty(), refused) {
                (true, Some(b)) => Err(Box::new(b) as Box<dyn std::error::Error + Send + Sync>),
                _ => Ok(Box::new(permitted.into_iter()) as reqwest::dns::Addrs),
            }
        })
    }
}

/// The [`Blocked`] refusal behind a failed request, if that is why it failed.
pub fn blocked_in<'a>(e: &'a (dyn std::error::Error + 'static)) -> Option<&'a Blocked> {
    let mut cur: Option<&'a (dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(b) = err.downcast_ref::<Blocked>() {
            return Some(b);
        }
        cur = err.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn refuses_every_special_range() {
        for a in [
            "0.0.0.0",
            "0.1.2.3",
            "10.0.0.1",
            "10.255.255.255",
            "100.64.0.1",
            "100.127.255.254",
            "127.0.0.1",
            "127.0.0.2",
            "127.255.255.254",
            "169.254.169.254",
            "172.16.0.1",
            "172.31.255.255",
            "192.0.0.8",
            "192.0.2.1",
            "192.88.99.1",
            "192.168.1.1",
            "198.18.0.1",
            "198.19.255.255",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "::10.0.0.1",
            "64:ff9b::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::1",
            "2002:c0a8:0101::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "febf::1",
            "fec0::1",
            "ff02::1",
            "2001:db8::1",
            "2001::1",
            "3fff::1",
            "100::1",
            "4000::1",
        ] {
            assert!(refused_range(ip(a)).is_some(), "{a} should be refused");
            assert!(Outbound::default().check(ip(a)).is_err(), "{a}");
        }
    }

    #[test]
    fn permits_public_unicast() {
        for a in [
            "1.1.1.1",
            "8.8.8.8",
            "100.63.255.255",
            "100.128.0.1",
            "172.15.255.255",
            "172.32.0.1",
            "192.0.1.1",
            "192.169.0.1",
            "198.17.255.255",
            "198.20.0.1",
            "223.255.255.255",
            "2606:4700:4700::1111",
            "2a00:1450::1",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:0808:0808::1",
        ] {
            assert_eq!(refused_range(ip(a)), None, "{a} should be permitted");
        }
    }

    #[test]
    fn the_allow_list_makes_exceptions_in_every_spelling() {
        let o = Outbound::new(vec!["127.0.0.1/32".parse().unwrap()], 10);
        assert!(o.check(ip("127.0.0.1")).is_ok());
        assert!(o.check(ip("::ffff:127.0.0.1")).is_ok());
        assert!(o.check(ip("127.0.0.2")).is_err());
        assert!(o.check(ip("::ffff:127.0.0.2")).is_err());
    }

    #[test]
    fn without_public_only_the_allow_list_is_reachable() {
        let o = Outbound::new(vec!["10.1.0.0/16".parse().unwrap()], 10).public(false);
        assert!(o.check(ip("10.1.2.3")).is_ok());
        let e = o.check(ip("8.8.8.8")).unwrap_err();
        assert!(e.to_string().contains("allow_public"), "{e}");
        assert!(o.check(ip("2606:4700::1111")).is_err());
        assert!(o.check(ip("10.2.0.1")).is_err());
        let open = Outbound::new(vec![], 10);
        assert!(open.check(ip("8.8.8.8")).is_ok());
        let s = crate::config::ToolSettings {
            allow_public: false,
            ..Default::default()
        };
        assert!(Outbound::from_settings(&s).check(ip("8.8.8.8")).is_err());
    }

    #[test]
    fn every_spelling_of_an_address_literal_is_the_address() {
        let o = Outbound::default();
        for u in [
            "http://127.0.0.2/",
            "http://2130706434/",
            "http://0x7f000002/",
            "http://0x7f.0.0.2/",
            "http://017700000002/",
            "http://0177.0.0.2/",
            "http://127.2/",
            "http://127.0.2/",
            "http://[::ffff:127.0.0.2]/",
            "http://[::ffff:7f00:2]/",
            "http://[0:0:0:0:0:ffff:127.0.0.2]/",
            "http://[::1]/",
            "http://169.254.169.254/latest/meta-data/",
            "http://0251.0376.0251.0376/",
            "http://0/",
        ] {
            let url = reqwest::Url::parse(u).unwrap();
            let e = o.check_url(&url).expect_err(u);
            assert!(e.to_string().contains("refused"), "{u}: {e}");
        }
        let fine = reqwest::Url::parse("http://example.com/").unwrap();
        assert!(
            o.check_url(&fine).is_ok(),
            "names are checked when resolved"
        );
    }

    #[test]
    fn urls_are_shown_without_credentials_or_query() {
        let u = reqwest::Url::parse("https://user:s3cret@api.example.com/run?token=abc#x").unwrap();
        let shown = redact_url(&u);
        assert!(!shown.contains("s3cret") && !shown.contains("abc") && !shown.contains("user"));
        assert!(shown.starts_with("https://api.example.com/run"), "{shown}");
    }
}
