//! OpenAPI 3.0's boolean `exclusiveMinimum`/`exclusiveMaximum` in a 3.1 document, where JSON
//! Schema 2020-12 wants the bound itself: read as 3.0 means them (OpenAI's document writes
//! `minimum: 0, exclusiveMinimum: true` for its fine-tuning hyperparameters). Left as they
//! are, no validator compiles the schemas that hold them.

use serde_json::Value;

use super::notes::{Note, Notes, pointer};
use crate::upgrade::{boolean_bounds, is_data};

/// Rewrites every boolean bound of a 3.1 `document` as a 2020-12 one.
pub(super) fn rewrite(document: &mut Value, notes: &mut Notes) {
    walk(document, &mut Vec::new(), notes);
}

/// A token of a JSON Pointer, kept cheaply while walking.
enum Token<'d> {
    Key(&'d str),
    Index(usize),
}

/// `value` and what it holds; `at` is its pointer's tokens. Recursive: the document is at
/// most 128 levels deep (the reader's bound).
fn walk<'d>(value: &'d mut Value, at: &mut Vec<Token<'d>>, notes: &mut Notes) {
    match value {
        Value::Object(object) => {
            if boolean_bounds(object) {
                notes.note(Note::BooleanBound, || {
                    at.iter().fold(String::new(), |at, token| match token {
                        Token::Key(key) => pointer(&at, key),
                        Token::Index(index) => format!("{at}/{index}"),
                    })
                });
            }
            for (key, child) in object.iter_mut() {
                if !is_data(key) {
                    at.push(Token::Key(key));
                    walk(child, at, notes);
                    at.pop();
                }
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter_mut().enumerate() {
                at.push(Token::Index(index));
                walk(item, at, notes);
                at.pop();
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn boolean_bounds_become_2020_12_bounds() {
        let mut document = json!({"openapi": "3.1.0", "components": {"schemas": {"Rate": {
            "oneOf": [
                {"type": "string"},
                {"type": "number", "minimum": 0, "exclusiveMinimum": true,
                 "maximum": 1, "exclusiveMaximum": false}
            ],
            "example": {"minimum": 0, "exclusiveMinimum": true}
        }}}});
        let mut notes = Notes::default();
        rewrite(&mut document, &mut notes);
        let rate = &document["components"]["schemas"]["Rate"];
        assert_eq!(
            rate["oneOf"][1],
            json!({"type": "number", "exclusiveMinimum": 0, "maximum": 1})
        );
        assert_eq!(rate["example"]["exclusiveMinimum"], true, "data stays");
        let sentences = notes.into_sentences();
        assert!(
            sentences[0].ends_with("(at `/components/schemas/Rate/oneOf/1`)."),
            "{sentences:?}"
        );
    }
}
