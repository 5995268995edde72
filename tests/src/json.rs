//! Reading JSON answers: fetching one, and its lists (the tags of a tool, the names of a
//! manifest's tools, the methods of a path's schemas).

use serde_json::Value;

/// The strings of the JSON array `array`, in order, leaving out what is not a string.
///
/// # Panics
/// When `array` is not an array.
#[must_use]
pub fn strings(array: &Value) -> Vec<&str> {
    items(array).iter().filter_map(Value::as_str).collect()
}

/// The string at the JSON pointer `pointer` (`/name`, `/call/method`) in each item of the
/// JSON array `array`, in order.
///
/// # Panics
/// When `array` is not an array, or an item has no string at `pointer`.
#[must_use]
pub fn each_str<'a>(array: &'a Value, pointer: &str) -> Vec<&'a str> {
    items(array)
        .iter()
        .map(|item| {
            item.pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or_else(|| panic!("no string at {pointer} in {item}"))
        })
        .collect()
}

/// Sends `request` and reads its answer's body as JSON.
///
/// # Panics
/// When the request fails or the body is not JSON.
pub async fn fetch(request: reqwest::RequestBuilder) -> Value {
    let answer = request.send().await.expect("an answer");
    answer.json().await.expect("a JSON body")
}

/// The items of the JSON array `array`.
fn items(array: &Value) -> &[Value] {
    array
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {array}"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{each_str, strings};

    #[test]
    fn strings_leave_out_what_is_not_a_string() {
        assert_eq!(
            strings(&json!(["read", 1, null, "books"])),
            ["read", "books"]
        );
    }

    #[test]
    fn each_str_reads_a_nested_field_of_every_item() {
        let schemas = json!([{"call": {"method": "GET"}}, {"call": {"method": "PUT"}}]);
        assert_eq!(each_str(&schemas, "/call/method"), ["GET", "PUT"]);
    }

    #[test]
    #[should_panic(expected = "no string at /name")]
    fn each_str_fails_on_an_item_without_the_field() {
        let _names = each_str(&json!([{"name": "a"}, {}]), "/name");
    }
}
