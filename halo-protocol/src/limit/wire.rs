//! The JSON form of a [`Limit`]: `{"rate": "3/minute", "per": "argument", "argument":
//! "sku"}`, and `of` for the parts of a combination.

use std::borrow::Cow;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::dimension::check_parts;
use super::{Dimension, Limit};
use crate::Rate;

/// The JSON form.
#[derive(Serialize, Deserialize)]
struct Wire<'a> {
    rate: Rate,
    #[serde(borrow)]
    per: Cow<'a, str>,
    #[serde(default, borrow, skip_serializing_if = "Option::is_none")]
    argument: Option<Cow<'a, str>>,
    #[serde(default, borrow, skip_serializing_if = "Option::is_none")]
    of: Option<Vec<Part<'a>>>,
}

/// A part of a combined dimension in the JSON form.
#[derive(Serialize, Deserialize)]
struct Part<'a> {
    #[serde(borrow)]
    per: Cow<'a, str>,
    #[serde(default, borrow, skip_serializing_if = "Option::is_none")]
    argument: Option<Cow<'a, str>>,
}

impl<'a> Part<'a> {
    fn of(dimension: &'a Dimension) -> Self {
        Self {
            per: Cow::Borrowed(dimension.as_str()),
            argument: dimension.argument().map(Cow::Borrowed),
        }
    }
}

/// The dimension of a `per` and its `argument`, but for `combined`.
fn single(per: &str, argument: Option<Cow<'_, str>>) -> Result<Dimension, &'static str> {
    match (per, argument) {
        ("argument", Some(name)) if !name.trim().is_empty() => {
            Ok(Dimension::Argument(name.into_owned()))
        }
        ("argument", _) => {
            Err("a limit per argument names it: {\"per\": \"argument\", \"argument\": \"sku\"}")
        }
        (_, Some(_)) => Err("`argument` goes only with \"per\": \"argument\""),
        (word, None) => {
            Ok(Dimension::keyword(word).unwrap_or_else(|| Dimension::Unknown(word.to_owned())))
        }
    }
}

impl Serialize for Limit {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let of = match &self.per {
            Dimension::Combined(parts) => Some(parts.iter().map(Part::of).collect()),
            _ => None,
        };
        Wire {
            rate: self.rate,
            per: Cow::Borrowed(self.per.as_str()),
            argument: self.per.argument().map(Cow::Borrowed),
            of,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Limit {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let wire = Wire::deserialize(deserializer)?;
        let per = match (&*wire.per, wire.of) {
            ("combined", _) if wire.argument.is_some() => {
                return Err(D::Error::custom(
                    "`argument` goes only with \"per\": \"argument\"; a combined limit's \
                     arguments are among its parts in `of`",
                ));
            }
            ("combined", None) => {
                return Err(D::Error::custom(
                    "a combined limit lists its parts in `of`: {\"per\": \"combined\", \"of\": \
                     [{\"per\": \"tenant\"}, {\"per\": \"argument\", \"argument\": \"sku\"}]}",
                ));
            }
            ("combined", Some(of)) => {
                let parts = of
                    .into_iter()
                    .map(|part| {
                        if part.per == "combined" {
                            return Err("a combined dimension cannot hold another: list all \
                                        its parts in one `of`");
                        }
                        single(&part.per, part.argument)
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(D::Error::custom)?;
                check_parts(&parts).map_err(D::Error::custom)?;
                Dimension::Combined(parts)
            }
            (_, Some(_)) => {
                return Err(D::Error::custom(
                    "`of` goes only with \"per\": \"combined\"",
                ));
            }
            (per, None) => single(per, wire.argument).map_err(D::Error::custom)?,
        };
        Ok(Self {
            rate: wire.rate,
            per,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    #[test]
    fn serde_round_trip() {
        let cases = [
            json!({"rate": "1000/hour", "per": "tenant"}),
            json!({"rate": "20/minute", "per": "tool"}),
            json!({"rate": "100/day", "per": "caller"}),
            json!({"rate": "3/minute", "per": "argument", "argument": "sku"}),
            json!({"rate": "100/50 seconds", "per": "tenant"}),
            json!({"rate": "100/50 seconds", "per": "combined", "of": [
                {"per": "tenant"}, {"per": "argument", "argument": "campaign_id"}
            ]}),
            json!({"rate": "2/minute", "per": "combined", "of": [
                {"per": "argument", "argument": "sku"}, {"per": "caller"},
                {"per": "argument", "argument": "region"}
            ]}),
        ];
        for case in cases {
            let limit: Limit = serde_json::from_value(case.clone()).unwrap();
            assert_eq!(serde_json::to_value(&limit).unwrap(), case);
        }
        let canonical: Limit =
            serde_json::from_value(json!({"rate": "3/min", "per": "tool"})).unwrap();
        assert_eq!(canonical, Limit::per_tool("3/minute".parse().unwrap()));
        let text: Limit = "100/50s per tenant and campaign_id".parse().unwrap();
        let json: Limit = serde_json::from_value(json!({"rate": "100/50s", "per": "combined",
            "of": [{"per": "tenant"}, {"per": "argument", "argument": "campaign_id"}]}))
        .unwrap();
        assert_eq!(text, json);
        let borrowed = r#"{"rate":"1/s","per":"combined",
            "of":[{"per":"caller"},{"per":"argument","argument":"sku"}]}"#;
        let limit: Limit = serde_json::from_str(borrowed).unwrap();
        assert_eq!(limit.to_string(), "1/second per caller and sku");
    }

    #[test]
    fn the_json_form_of_a_combination_is_checked() {
        let of = |parts: Value| json!({"rate": "1/s", "per": "combined", "of": parts});
        let (tenant, caller) = (json!({"per": "tenant"}), json!({"per": "caller"}));
        for (bad, says) in [
            (
                json!({"rate": "1/s", "per": "combined"}),
                "lists its parts in `of`",
            ),
            (of(json!([tenant])), "two parts or more"),
            (of(json!([])), "two parts or more"),
            (
                of(json!([tenant, {"per": "tool"}])),
                "`tool` cannot be combined",
            ),
            (of(json!([tenant, tenant])), "named twice"),
            (
                of(json!([tenant, {"per": "region"}])),
                "\"region\" cannot be combined",
            ),
            (of(json!([tenant, {"per": "argument"}])), "names it"),
            (
                of(json!([tenant, of(json!([caller, tenant]))])),
                "cannot hold another",
            ),
            (
                json!({"rate": "1/s", "per": "combined", "argument": "sku",
                    "of": [tenant, caller]}),
                "`argument` goes only with",
            ),
            (
                json!({"rate": "1/s", "per": "tenant", "of": [tenant, caller]}),
                "`of` goes only with",
            ),
            (of(tenant), "invalid type"),
        ] {
            let error = serde_json::from_value::<Limit>(bad.clone()).unwrap_err();
            assert!(error.to_string().contains(says), "{bad}: {error}");
        }
    }

    #[test]
    fn an_older_reader_sees_a_combination_as_an_unknown_dimension() {
        /// The JSON form as this crate read it before `combined`.
        #[derive(Deserialize)]
        struct Older {
            per: String,
            argument: Option<String>,
        }
        let older: Older = serde_json::from_value(json!({"rate": "1/s", "per": "combined",
            "of": [{"per": "tenant"}, {"per": "caller"}]}))
        .unwrap();
        assert_eq!((older.per.as_str(), older.argument), ("combined", None));
    }

    #[test]
    fn the_json_form_is_checked_and_tolerates_new_dimensions() {
        for bad in [
            json!({"rate": "3/minute", "per": "argument"}),
            json!({"rate": "3/minute", "per": "argument", "argument": " "}),
            json!({"rate": "3/minute", "per": "tenant", "argument": "sku"}),
            json!({"rate": "3/eon", "per": "tool"}),
            json!({"per": "tool"}),
        ] {
            assert!(
                serde_json::from_value::<Limit>(bad.clone()).is_err(),
                "{bad}"
            );
        }
        let newer: Limit =
            serde_json::from_value(json!({"rate": "3/minute", "per": "region"})).unwrap();
        assert_eq!(newer.per(), &Dimension::Unknown("region".into()));
        assert_eq!(
            serde_json::to_value(&newer).unwrap(),
            json!({"rate": "3/minute", "per": "region"})
        );
    }
}
