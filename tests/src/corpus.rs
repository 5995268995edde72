//! Real OpenAPI documents, kept gzip'd in `tests/corpus/` (see its README for their sources
//! and licences), for tests and benchmarks at the scale of APIs nobody here wrote.

use std::io::Read as _;
use std::path::PathBuf;

use serde_json::Value;

/// A document of the corpus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Document {
    /// GitHub's REST API, 2022-06-11: 771 operations, tags everywhere, large unions.
    GitHub,
    /// Stripe's API, 2023-08-16: 468 operations, no tags, a reference cycle through 71
    /// schemas, form-encoded bodies.
    Stripe,
    /// Slack's Web API, 1.7.0: Swagger 2.0, 174 operations, form fields everywhere, `type`
    /// lists and the type `null` Swagger 2.0 does not allow, only `default` responses.
    Slack,
    /// OpenAI's API, 2.3.0: OpenAPI 3.1 as YAML, 288 operations (and 16 webhooks), event
    /// streams and multipart bodies, an unquoted date in an example.
    OpenAi,
    /// Discord's API, v10: OpenAPI 3.1, 242 operations, `type` lists and `const` everywhere.
    Discord,
    /// Adyen's Checkout API, v72: OpenAPI 3.1, 28 operations with very large inputs.
    Adyen,
}

impl Document {
    /// The documents a strict build takes as they are (OpenAPI 3.0 as JSON), for the tests
    /// and benchmarks of the layer an application puts in front of its own API.
    pub const ALL: [Self; 2] = [Self::GitHub, Self::Stripe];

    /// Every document of the corpus, for reading and lenient builds
    /// (`halo_openapi::Document::read`).
    pub const EVERY: [Self; 6] = [
        Self::GitHub,
        Self::Stripe,
        Self::Slack,
        Self::OpenAi,
        Self::Discord,
        Self::Adyen,
    ];

    /// A short name: `github`, `stripe`, `slack`, `openai`, `discord`, `adyen`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::GitHub => "github",
            Self::Stripe => "stripe",
            Self::Slack => "slack",
            Self::OpenAi => "openai",
            Self::Discord => "discord",
            Self::Adyen => "adyen",
        }
    }

    /// How many operations the document describes under `paths`, as its README counts them
    /// (OpenAI's 16 webhooks are not among its 288).
    #[must_use]
    pub fn operations(self) -> usize {
        match self {
            Self::GitHub => 771,
            Self::Stripe => 468,
            Self::Slack => 174,
            Self::OpenAi => 288,
            Self::Discord => 242,
            Self::Adyen => 28,
        }
    }

    /// The gzip'd file.
    #[must_use]
    pub fn path(self) -> PathBuf {
        let file = match self {
            Self::GitHub => "github-2022-06-11.json.gz",
            Self::Stripe => "stripe-2023-08-16.json.gz",
            Self::Slack => "slack-web-1.7.0.json.gz",
            Self::OpenAi => "openai-2.3.0.yaml.gz",
            Self::Discord => "discord-v10.json.gz",
            Self::Adyen => "adyen-checkout-v72.json.gz",
        };
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("corpus")
            .join(file)
    }

    /// The document's bytes, as published (JSON, or YAML for OpenAI's).
    ///
    /// # Panics
    /// When the fixture is missing or not gzip'd (a broken checkout).
    #[must_use]
    pub fn bytes(self) -> Vec<u8> {
        let file =
            std::fs::File::open(self.path()).expect("the corpus fixture is in the repository");
        let mut bytes = Vec::new();
        flate2::read::GzDecoder::new(file)
            .read_to_end(&mut bytes)
            .expect("the corpus fixture is gzip'd");
        bytes
    }

    /// The document's text.
    ///
    /// # Panics
    /// As [`bytes`](Self::bytes), or when it is not UTF-8.
    #[must_use]
    pub fn text(self) -> String {
        String::from_utf8(self.bytes()).expect("the corpus fixture is UTF-8")
    }

    /// The document, parsed as JSON (all but OpenAI's, which is YAML: read that one with
    /// `halo_openapi::Document::read`).
    ///
    /// # Panics
    /// As [`text`](Self::text), or when it is not JSON.
    #[must_use]
    pub fn json(self) -> Value {
        serde_json::from_str(&self.text()).expect("the corpus fixture is JSON")
    }
}

/// Tasks as a user of GitHub's API would put them, each with the `operationId` of the
/// operation that does it: written from the operations' summaries in other words, for
/// measuring how well tool search finds the intended tool.
pub const GITHUB_TASKS: [(&str, &str); 22] = [
    (
        "list the open issues of a repository",
        "issues/list-for-repo",
    ),
    ("open a pull request to merge my branch", "pulls/create"),
    (
        "create a new repository for me",
        "repos/create-for-authenticated-user",
    ),
    ("add a comment to an issue", "issues/create-comment"),
    (
        "has this pull request been merged already",
        "pulls/check-if-merged",
    ),
    ("fork a repository into my account", "repos/create-fork"),
    ("render markdown text to HTML", "markdown/render"),
    (
        "show the most recent release of a repo",
        "repos/get-latest-release",
    ),
    (
        "star a repository",
        "activity/star-repo-for-authenticated-user",
    ),
    ("get the details of a branch", "repos/get-branch"),
    ("list the releases of a repository", "repos/list-releases"),
    ("close an issue or change its title", "issues/update"),
    ("delete a repository", "repos/delete"),
    ("create a gist with some files", "gists/create"),
    ("list the commits of a repository", "repos/list-commits"),
    (
        "who are the contributors to a repository",
        "repos/list-contributors",
    ),
    ("add labels to an issue", "issues/add-labels"),
    ("search code across repositories", "search/code"),
    ("get a user's public profile", "users/get-by-username"),
    (
        "list the workflow runs of a repository",
        "actions/list-workflow-runs-for-repo",
    ),
    ("merge a pull request", "pulls/merge"),
    ("create a webhook for a repository", "repos/create-webhook"),
];
