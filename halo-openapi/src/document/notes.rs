//! What reading a document changed or dropped: each kind of change once, with how often it
//! happened and where first, so a document that does one odd thing a thousand times reads
//! as one sentence.

use std::collections::BTreeMap;

/// A kind of change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Note {
    Converted,
    VersionNumber,
    NoHost,
    OperationSchemes,
    XNullable,
    TypeList,
    NullType,
    FileOutsideForm,
    DefaultOnly,
    Tsv,
    UnknownIn,
    BodyAndForm,
    TwoBodies,
    BadParameter,
    UnresolvedParameter,
    BadSecurity,
    RecursiveRef,
    BooleanBound,
}

impl Note {
    fn sentence(self) -> &'static str {
        match self {
            Self::Converted => "Swagger 2.0 was converted to OpenAPI 3.0.3",
            Self::VersionNumber => {
                "`openapi` was a number (YAML's unquoted version); it is now the string"
            }
            Self::NoHost => {
                "the document gives no `host`: its server is the `basePath` alone, relative to \
                 where the document was read from"
            }
            Self::OperationSchemes => {
                "an operation's own `schemes` were dropped: its calls go to the document's \
                 servers"
            }
            Self::XNullable => "`x-nullable: true` was read as OpenAPI 3.0's `nullable: true`",
            Self::TypeList => {
                "a schema gave `type` as a list, which Swagger 2.0 does not allow: kept, as \
                 JSON Schema reads it"
            }
            Self::NullType => {
                "a schema named `null` as a type, which Swagger 2.0 does not allow: read as a \
                 nullable schema"
            }
            Self::FileOutsideForm => {
                "`type: file` outside a form was read as binary data (`type: string`, \
                 `format: binary`)"
            }
            Self::DefaultOnly => {
                "an operation describes only a `default` response, no successful one: its tool \
                 has no output schema"
            }
            Self::Tsv => {
                "a `collectionFormat` has no OpenAPI 3 style where it stands (`tsv`, or other than \
                 `csv` in a path or header): the array is described with the place's default"
            }
            Self::UnknownIn => "a parameter whose `in` is none of Swagger 2.0's was dropped",
            Self::BodyAndForm => {
                "an operation has both a `body` and `formData` parameters, which Swagger 2.0 \
                 does not allow: the `formData` ones were dropped"
            }
            Self::TwoBodies => {
                "an operation has more than one `body` parameter: all but the first were dropped"
            }
            Self::BadParameter => "a parameter that is not an object with a `name` was dropped",
            Self::UnresolvedParameter => {
                "a parameter `$ref` points nowhere in the document: kept as a reference, which \
                 leaves its operation out of a lenient build"
            }
            Self::BadSecurity => "a security definition of no type Swagger 2.0 knows was dropped",
            Self::RecursiveRef => {
                "a schema recurs with JSON Schema 2019-09's `$recursiveAnchor` and \
                 `$recursiveRef`, which OpenAPI 3.1 does not read: its `$recursiveRef: \"#\"` \
                 became `$ref`s to the schema itself"
            }
            Self::BooleanBound => {
                "a bound was written as OpenAPI 3.0 writes it (`exclusiveMinimum: true` beside \
                 `minimum`), which OpenAPI 3.1 does not read: it became the bound itself \
                 (`exclusiveMinimum: 0`)"
            }
        }
    }
}

/// The changes made to one document.
#[derive(Debug, Default)]
pub(super) struct Notes {
    seen: BTreeMap<Note, (usize, String)>,
}

impl Notes {
    /// Records a change of kind `note` at the JSON Pointer `at` gives (into the document as
    /// read), which is only asked the first time.
    pub(super) fn note(&mut self, note: Note, at: impl FnOnce() -> String) {
        self.seen
            .entry(note)
            .and_modify(|(count, _)| *count += 1)
            .or_insert_with(|| (1, at()));
    }

    /// One sentence for each kind of change, in a fixed order.
    pub(super) fn into_sentences(self) -> Vec<String> {
        self.seen
            .into_iter()
            .map(|(note, (count, at))| {
                let sentence = note.sentence();
                match (count, at.as_str()) {
                    (_, "") => format!("{sentence}."),
                    (1, at) => format!("{sentence} (at `{at}`)."),
                    (count, at) => format!("{sentence} ({count} times; first at `{at}`)."),
                }
            })
            .collect()
    }
}

/// `at` with `token` appended as a JSON Pointer token (`~` and `/` escaped).
pub(super) fn pointer(at: &str, token: &str) -> String {
    let token = token.replace('~', "~0").replace('/', "~1");
    format!("{at}/{token}")
}
