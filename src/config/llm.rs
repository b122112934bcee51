//! `[llm]`: the OpenAI-compatible endpoint behind the LLM brain, its fallback, and prices.

use serde::Deserialize;

use super::ConfigError;

#[derive(Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmSettings {
    /// OpenAI-compatible API root, e.g. `https://api.openai.com/v1` (no base_url: rules brain).
    pub base_url: Option<String>,
    pub api_key: Option<String>,
    pub model: Option<String>,
    /// Per HTTP request (fractions allowed); default 60.
    pub timeout_secs: Option<f64>,
    /// Retries of 429, 5xx, timeouts and connection errors; default 3.
    pub max_retries: Option<u32>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    pub seed: Option<u64>,
    /// First retry delay, doubled each retry; default 500.
    pub retry_backoff_ms: Option<u64>,
    /// Default per-task cap on LLM calls (overridable at submit time); none: no cap.
    pub max_calls_per_task: Option<u32>,
    /// Default per-task cap on LLM tokens (overridable with `limits.max_llm_tokens`).
    pub max_tokens_per_task: Option<u64>,
    /// Nucleus sampling, sent with every request when set (0 < top_p ≤ 1).
    pub top_p: Option<f64>,
    /// A second OpenAI-compatible endpoint, asked when the primary fails after its retries.
    pub fallback_base_url: Option<String>,
    /// The fallback's model (default: `model`).
    pub fallback_model: Option<String>,
    pub fallback_api_key: Option<String>,
    /// The price map (`[[llm.prices]]`), set in the database at start like
    /// `PUT /api/v1/model-prices`: what each LLM call costs.
    pub prices: Vec<PriceSetting>,
}

/// One `[[llm.prices]]` entry: a model's prices per million tokens, from `valid_from` on.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PriceSetting {
    pub model: String,
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
    #[serde(default)]
    pub cached_input_per_mtok: Option<f64>,
    /// RFC 3339 (default: always).
    #[serde(default)]
    pub valid_from: Option<String>,
}

impl PriceSetting {
    /// When the price starts (none: always), checked.
    pub fn valid_from(&self) -> Result<chrono::DateTime<chrono::Utc>, String> {
        match &self.valid_from {
            None => Ok(chrono::DateTime::UNIX_EPOCH),
            Some(t) => chrono::DateTime::parse_from_rfc3339(t)
                .map(|t| t.with_timezone(&chrono::Utc))
                .map_err(|_| format!("llm.prices: valid_from {t:?} is not an RFC 3339 time")),
        }
    }
}

impl LlmSettings {
    /// An LLM is configured (a non-empty `base_url`).
    pub fn enabled(&self) -> bool {
        self.base_url
            .as_deref()
            .is_some_and(|u| !u.trim().is_empty())
    }
}

impl LlmSettings {
    /// The `[llm]` checks of [`Settings::validate`].
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        let bad = |m: &str| Err(ConfigError::Invalid(m.to_string()));
        let l = self;
        for p in &l.prices {
            let price = |v: f64| v.is_finite() && (0.0..=1e9).contains(&v);
            if p.model.is_empty() || p.model.len() > 200 {
                return bad("llm.prices: a model is 1 to 200 characters");
            }
            if !price(p.input_per_mtok)
                || !price(p.output_per_mtok)
                || !p.cached_input_per_mtok.is_none_or(price)
            {
                return bad("llm.prices: prices are between 0 and 1000000000 per million tokens");
            }
            p.valid_from().map_err(ConfigError::Invalid)?;
        }
        if let Some(t) = l.temperature
            && !(0.0..=2.0).contains(&t)
        {
            return bad("llm.temperature must be between 0 and 2");
        }
        if let Some(u) = &l.base_url
            && l.enabled()
            && !(u.starts_with("http://") || u.starts_with("https://"))
        {
            return bad("llm.base_url must be an http:// or https:// URL");
        }
        if let Some(u) = &l.fallback_base_url {
            let u = u.trim();
            if !(u.is_empty() || u.starts_with("http://") || u.starts_with("https://")) {
                return bad("llm.fallback_base_url must be an http:// or https:// URL");
            }
        }
        if let Some(p) = l.top_p
            && !(p > 0.0 && p <= 1.0)
        {
            return bad("llm.top_p must be above 0 and at most 1");
        }
        if let Some(t) = l.timeout_secs
            && !(t > 0.0 && t <= 3600.0)
        {
            return bad("llm.timeout_secs must be more than 0 and at most 3600");
        }
        if l.max_retries.is_some_and(|n| n > 10) {
            return bad("llm.max_retries must be at most 10");
        }
        Ok(())
    }
}

/// The API key never shows in `Debug` output (settings may be logged).
impl std::fmt::Debug for LlmSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmSettings")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("model", &self.model)
            .field("timeout_secs", &self.timeout_secs)
            .field("max_retries", &self.max_retries)
            .field("temperature", &self.temperature)
            .field("max_tokens", &self.max_tokens)
            .field("seed", &self.seed)
            .field("retry_backoff_ms", &self.retry_backoff_ms)
            .field("max_calls_per_task", &self.max_calls_per_task)
            .field("max_tokens_per_task", &self.max_tokens_per_task)
            .field("top_p", &self.top_p)
            .field("fallback_base_url", &self.fallback_base_url)
            .field("fallback_model", &self.fallback_model)
            .field(
                "fallback_api_key",
                &self.fallback_api_key.as_ref().map(|_| "[redacted]"),
            )
            .finish()
    }
}
