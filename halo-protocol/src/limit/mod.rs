//! `limits.rates`: rate limits with a dimension, each saying whose budget a call spends (its
//! caller's, its tenant's, the tool's as a whole, or that of a value of one of its arguments).

mod dimension;
mod text;
mod wire;

use crate::Rate;

pub use self::dimension::Dimension;
pub use self::text::LimitParseError;

/// A rate limit with its [`Dimension`]: at most `rate` calls per window for each caller,
/// tenant, argument value, combination of those, or for the tool as a whole. An entry of
/// `limits.rates`.
///
/// Its JSON form is `{"rate": "3/minute", "per": "argument", "argument": "sku"}` (`argument`
/// only with `per: argument`), and for a combination `{"rate": "100/50 seconds", "per":
/// "combined", "of": [{"per": "tenant"}, {"per": "argument", "argument": "campaign_id"}]}`
/// (`of` only with `per: combined`). Its text form, as `#[halo(rates(...))]` takes it, is
/// `"3/minute per sku"`: `per caller`, `per tenant`, `per tool`, or `per` an argument's name
/// (`per argument NAME` for an argument named like one of those words, `argument` or `and`);
/// parts joined by `and` make a combination (`"100/50 seconds per tenant and campaign_id"`).
///
/// ```
/// use halo_protocol::{Dimension, Limit, Rate};
///
/// let limit: Limit = "3/min per sku".parse().unwrap();
/// assert_eq!(limit, Limit::per_argument("3/minute".parse::<Rate>().unwrap(), "sku"));
/// assert_eq!(limit.to_string(), "3/minute per sku");
/// assert_eq!(
///     serde_json::to_value(&limit).unwrap(),
///     serde_json::json!({"rate": "3/minute", "per": "argument", "argument": "sku"})
/// );
/// let tenant: Limit = "1000/hour per tenant".parse().unwrap();
/// assert_eq!(tenant.per(), &Dimension::Tenant);
/// assert!("5/minute".parse::<Limit>().is_err(), "whose budget must be said");
///
/// let campaign: Limit = "100/50s per tenant and campaign_id".parse().unwrap();
/// assert_eq!(campaign.to_string(), "100/50 seconds per tenant and campaign_id");
/// assert_eq!(
///     serde_json::to_value(&campaign).unwrap(),
///     serde_json::json!({"rate": "100/50 seconds", "per": "combined", "of": [
///         {"per": "tenant"}, {"per": "argument", "argument": "campaign_id"}
///     ]})
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Limit {
    rate: Rate,
    per: Dimension,
}

impl Limit {
    /// `rate` for each value of `per`; the other constructors name the dimension.
    ///
    /// ```
    /// use halo_protocol::{Dimension, Limit, Rate};
    ///
    /// let rate: Rate = "20/minute".parse().unwrap();
    /// assert_eq!(Limit::new(rate, Dimension::Tool), Limit::per_tool(rate));
    /// assert_eq!(Limit::per_tenant(rate).per(), &Dimension::Tenant);
    /// assert_eq!(Limit::per_caller(rate).rate(), rate);
    /// assert_eq!(Limit::per_argument(rate, "sku").per().argument(), Some("sku"));
    /// ```
    #[must_use]
    pub const fn new(rate: Rate, per: Dimension) -> Self {
        Self { rate, per }
    }

    /// `rate` for each caller (the principal, or the client's address when anonymous).
    #[must_use]
    pub const fn per_caller(rate: Rate) -> Self {
        Self::new(rate, Dimension::Caller)
    }

    /// `rate` for each tenant (a caller without a tenant counts as a tenant of its own).
    #[must_use]
    pub const fn per_tenant(rate: Rate) -> Self {
        Self::new(rate, Dimension::Tenant)
    }

    /// `rate` for the tool as a whole: all its callers together.
    #[must_use]
    pub const fn per_tool(rate: Rate) -> Self {
        Self::new(rate, Dimension::Tool)
    }

    /// `rate` for each value of the top-level argument `name`.
    #[must_use]
    pub fn per_argument(rate: Rate, name: impl Into<String>) -> Self {
        Self::new(rate, Dimension::Argument(name.into()))
    }

    /// The rate.
    #[must_use]
    pub const fn rate(&self) -> Rate {
        self.rate
    }

    /// Whose budget a call spends.
    #[must_use]
    pub const fn per(&self) -> &Dimension {
        &self.per
    }
}
