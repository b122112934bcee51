//! `[tools]`: outbound requests of HTTP tools and `http_request` (CONTRACT.md "Outbound requests").

use serde::Deserialize;

use super::{ConfigError, invalid};

/// Outbound requests of HTTP tools and `http_request` (CONTRACT.md "Outbound requests").
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolSettings {
    /// Exceptions to the refused ranges, e.g. `["127.0.0.1/32", "10.1.0.0/16"]` (the
    /// environment takes them comma-separated). `None`: not set (`--dev` then allows loopback).
    #[serde(deserialize_with = "cidr_list")]
    pub allow_cidrs: Option<Vec<ipnet::IpNet>>,
    /// `false`: public addresses are refused too, so only `allow_cidrs` can be reached (an
    /// egress allow-list).
    pub allow_public: bool,
    /// A tool answer longer than this fails the attempt (`output_too_large`).
    pub max_output_bytes: u64,
}

impl Default for ToolSettings {
    fn default() -> Self {
        Self {
            allow_cidrs: None,
            allow_public: true,
            max_output_bytes: 1_048_576,
        }
    }
}

/// Accepts a TOML array of CIDR strings or one comma-separated string.
fn cidr_list<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Vec<ipnet::IpNet>>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        One(String),
        Many(Vec<String>),
    }
    let items = match Raw::deserialize(d)? {
        Raw::One(s) => s
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect(),
        Raw::Many(v) => v,
    };
    items
        .iter()
        .map(|c| parse_cidr(c).map_err(serde::de::Error::custom))
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// `10.0.0.0/8`, or a bare address meaning just that address.
pub fn parse_cidr(c: &str) -> Result<ipnet::IpNet, String> {
    c.parse::<ipnet::IpNet>()
        .or_else(|_| c.parse::<std::net::IpAddr>().map(ipnet::IpNet::from))
        .map_err(|_| format!("tools.allow_cidrs: {c:?} is not a CIDR (like 10.1.0.0/16)"))
}

impl ToolSettings {
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if self.max_output_bytes == 0 {
            return invalid("tools.max_output_bytes must be at least 1");
        }
        Ok(())
    }
}
