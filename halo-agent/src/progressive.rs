//! Progressive disclosure in the loop: when a tool set's definitions cost the model more
//! than the agent's budget, the model is given `search_tools` and `call_tool` instead, and
//! the tools its searches find join its list for the rest of the run.

use halo_protocol::{
    CALL_TOOL, CLOSE_NAMES, CallRequest, Problem, SEARCH_TOOLS, SearchRequest, ToolCatalog,
    ToolDefinition, ToolIndex, ToolOutput, call_tool_definition, search_tools_definition,
    search_tools_reply, unknown_tool,
};
use serde_json::{Map, Value};

use crate::ToolSet;

/// The most tools that searches add to the model's list (within the budget too).
pub(crate) const MAX_FOUND_TOOLS: usize = 20;

/// What the model is given of a run's tools, and how its calls reach them: every
/// definition, or (above the budget) the two meta-tools and the tools found so far.
pub(crate) struct Disclosure<'a> {
    definitions: &'a [ToolDefinition],
    progressive: Option<Progressive<'a>>,
}

/// The state of a progressive run.
struct Progressive<'a> {
    index: Index<'a>,
    /// `search_tools` and `call_tool`.
    meta: [ToolDefinition; 2],
    meta_tokens: usize,
    budget: usize,
    /// What listing each definition costs, in estimated tokens.
    costs: Vec<usize>,
    /// The definitions found by searches and given to the model, the oldest first.
    found: Vec<usize>,
}

/// What searches run on: the set's own catalog (its tags and HALO schemas), or an index of
/// its definitions made for the run.
enum Index<'a> {
    Catalog(&'a ToolCatalog),
    Definitions(ToolIndex),
}

/// What to do with one tool call of the model.
pub(crate) enum Step {
    /// Call the set's tool at this index (of its definitions) with these arguments.
    Call {
        index: usize,
        arguments: Map<String, Value>,
    },
    /// Answer without calling a tool: a search, or what the model got wrong.
    Answer {
        output: ToolOutput,
        /// The definitions a search found, best first.
        found: Vec<usize>,
    },
}

impl<'a> Disclosure<'a> {
    /// The disclosure of `tools` under `budget` (none: every definition, whatever it
    /// costs).
    pub(crate) fn new<T: ToolSet + ?Sized>(tools: &'a T, budget: Option<usize>) -> Self {
        let definitions = tools.definitions();
        let progressive = budget.and_then(|budget| {
            let costs: Vec<usize> = definitions
                .iter()
                .map(ToolDefinition::function_tokens)
                .collect();
            if costs.iter().sum::<usize>() <= budget {
                return None;
            }
            let index = match tools.catalog() {
                Some(catalog) if same_tools(catalog.definitions(), definitions) => {
                    Index::Catalog(catalog)
                }
                _ => Index::Definitions(ToolIndex::from_definitions(definitions)),
            };
            let meta = [search_tools_definition(), call_tool_definition()];
            let meta_tokens = meta.iter().map(ToolDefinition::estimated_tokens).sum();
            Some(Progressive {
                index,
                meta,
                meta_tokens,
                budget,
                costs,
                found: Vec::new(),
            })
        });
        Self {
            definitions,
            progressive,
        }
    }

    /// Whether the model is given the meta-tools rather than every definition.
    #[cfg(test)]
    pub(crate) fn is_progressive(&self) -> bool {
        self.progressive.is_some()
    }

    /// The set's definitions.
    pub(crate) fn definitions(&self) -> &'a [ToolDefinition] {
        self.definitions
    }

    /// The definitions to give the model this turn.
    pub(crate) fn offered(&self) -> Vec<ToolDefinition> {
        match &self.progressive {
            None => self.definitions.to_vec(),
            Some(progressive) => progressive
                .meta
                .iter()
                .cloned()
                .chain(
                    progressive
                        .found
                        .iter()
                        .map(|&index| self.definitions[index].clone()),
                )
                .collect(),
        }
    }

    /// What to do with the model's call of `name` with `arguments` (parsed, or what to tell
    /// the model about them).
    pub(crate) fn step(&self, name: &str, arguments: Result<Map<String, Value>, String>) -> Step {
        let position = self.position(name);
        let Some(progressive) = &self.progressive else {
            return match (position, arguments) {
                (None, _) => {
                    Step::answer(ToolOutput::problem(Problem::new(404).with_detail(format!(
                        "there is no tool named `{name}`; the tools are: {}",
                        self.names()
                    ))))
                }
                (Some(index), Ok(arguments)) => Step::Call { index, arguments },
                (Some(_), Err(detail)) => Step::answer(bad_request(detail)),
            };
        };
        let arguments = match arguments {
            Ok(arguments) => Value::Object(arguments),
            Err(detail) => return Step::answer(bad_request(detail)),
        };
        match name {
            SEARCH_TOOLS => self.search(progressive, &arguments),
            CALL_TOOL => {
                let call = match CallRequest::from_arguments(&arguments) {
                    Ok(call) => call,
                    Err(detail) => return Step::answer(bad_request(detail)),
                };
                match self.position(&call.name) {
                    Some(index) => Step::Call {
                        index,
                        arguments: match call.arguments {
                            Value::Object(arguments) => arguments,
                            _ => Map::new(),
                        },
                    },
                    None => Step::answer(self.unknown(progressive, &call.name)),
                }
            }
            _ => match (position, arguments) {
                (Some(index), Value::Object(arguments)) => Step::Call { index, arguments },
                _ => Step::answer(self.unknown(progressive, name)),
            },
        }
    }

    /// A `search_tools` call: the answer, and the definitions found.
    fn search(&self, progressive: &Progressive<'_>, arguments: &Value) -> Step {
        let request = match SearchRequest::from_arguments(arguments) {
            Ok(request) => request,
            Err(detail) => return Step::answer(bad_request(detail)),
        };
        let (found, more, ignored_tags) = match &progressive.index {
            Index::Catalog(catalog) => {
                let (found, more) = catalog.search(&request);
                let found: Vec<usize> = found
                    .into_iter()
                    .filter_map(|definition| self.position(&definition.name))
                    .collect();
                (found, more, false)
            }
            Index::Definitions(index) => {
                let hits = index.search(&request.query, usize::MAX, |_| true);
                let more = hits.len().saturating_sub(request.limit);
                let found = hits
                    .iter()
                    .take(request.limit)
                    .map(|hit| hit.index)
                    .collect();
                (found, more, !request.tags.is_empty())
            }
        };
        let definitions: Vec<&ToolDefinition> = found
            .iter()
            .map(|&index| &self.definitions[index])
            .collect();
        let answer = search_tools_reply(&definitions, more, ignored_tags);
        Step::Answer {
            output: ToolOutput::from_response(200, answer),
            found,
        }
    }

    /// A `404` for a tool that does not exist, naming the closest ones.
    fn unknown(&self, progressive: &Progressive<'_>, name: &str) -> ToolOutput {
        let close: Vec<&str> = match &progressive.index {
            Index::Catalog(catalog) => catalog.close_names(name),
            Index::Definitions(index) => index
                .search(name, CLOSE_NAMES, |_| true)
                .iter()
                .map(|hit| self.definitions[hit.index].name.as_str())
                .collect(),
        };
        ToolOutput::problem(unknown_tool(name, &close))
    }

    /// Gives the model the definitions a search found (best first) from the next turn on:
    /// those that fit the budget, at most [`MAX_FOUND_TOOLS`] in all, the ones found longest
    /// ago leaving first.
    pub(crate) fn reveal(&mut self, found: &[usize]) {
        let Some(progressive) = &mut self.progressive else {
            return;
        };
        let room = progressive.budget.saturating_sub(progressive.meta_tokens);
        let mut added: Vec<usize> = Vec::new();
        let mut spent = 0;
        for &index in found {
            let Some(definition) = self.definitions.get(index) else {
                continue;
            };
            // A tool named like a meta-tool is called through call_tool: two tools of one
            // name would be refused by the model's API.
            if definition.name == SEARCH_TOOLS || definition.name == CALL_TOOL {
                continue;
            }
            let cost = progressive.costs[index];
            if added.contains(&index) || spent + cost > room || added.len() == MAX_FOUND_TOOLS {
                continue;
            }
            spent += cost;
            added.push(index);
        }
        if added.is_empty() {
            return;
        }
        let mut kept: Vec<usize> = progressive
            .found
            .iter()
            .copied()
            .filter(|index| !added.contains(index))
            .collect();
        let mut kept_cost: usize = kept.iter().map(|&index| progressive.costs[index]).sum();
        let mut drop = 0;
        while drop < kept.len()
            && (spent + kept_cost > room || kept.len() - drop + added.len() > MAX_FOUND_TOOLS)
        {
            kept_cost -= progressive.costs[kept[drop]];
            drop += 1;
        }
        kept.drain(..drop);
        kept.extend(added);
        progressive.found = kept;
    }

    /// The position of the definition named `name`.
    fn position(&self, name: &str) -> Option<usize> {
        self.definitions.iter().position(|tool| tool.name == name)
    }

    /// Every tool's name, for a model that called one that does not exist.
    fn names(&self) -> String {
        if self.definitions.is_empty() {
            return "none".to_owned();
        }
        let names: Vec<&str> = self
            .definitions
            .iter()
            .map(|tool| tool.name.as_str())
            .collect();
        names.join(", ")
    }
}

impl Step {
    fn answer(output: ToolOutput) -> Self {
        Self::Answer {
            output,
            found: Vec::new(),
        }
    }
}

/// A `400` for arguments the model got wrong.
fn bad_request(detail: String) -> ToolOutput {
    ToolOutput::problem(Problem::new(400).with_detail(detail))
}

/// Whether a catalog holds these definitions, in this order.
fn same_tools(catalog: &[ToolDefinition], definitions: &[ToolDefinition]) -> bool {
    catalog.len() == definitions.len()
        && catalog
            .iter()
            .zip(definitions)
            .all(|(a, b)| a.name == b.name)
}

#[cfg(test)]
mod tests {
    use futures_util::FutureExt as _;
    use futures_util::future::BoxFuture;
    use halo_protocol::{Call, InputField, ToolEntry, ToolSchema, tool_definitions};
    use serde_json::json;

    use super::*;

    /// `count` tools, `op_0` to `op_{count-1}`, each about a different thing, tagged `even`
    /// or `odd`; with `catalog`, the set keeps a catalog of them.
    struct Many {
        definitions: Vec<ToolDefinition>,
        catalog: Option<ToolCatalog>,
    }

    const THINGS: [&str; 10] = [
        "invoice",
        "customer",
        "shipment",
        "warehouse",
        "refund",
        "coupon",
        "review",
        "supplier",
        "payout",
        "ticket",
    ];

    fn tools(count: usize) -> Vec<(ToolEntry, ToolSchema)> {
        (0..count)
            .map(|i| {
                let thing = THINGS[i % THINGS.len()];
                let url = format!("/{thing}s/v{i}");
                let entry = ToolEntry::new(
                    &url,
                    "POST",
                    format!("op_{i}"),
                    format!("Update a {thing} (version {i}) with the fields given"),
                )
                .with_tags([if i % 2 == 0 { "even" } else { "odd" }]);
                let mut schema = ToolSchema::new(Call::new("POST", &url));
                for field in ["name", "note", "amount"] {
                    schema.input.insert(
                        format!("{thing}_{field}"),
                        InputField::new(json!({"type": "string", "description": "A field"})),
                    );
                }
                (entry, schema)
            })
            .collect()
    }

    impl Many {
        fn new(count: usize, catalog: bool) -> Self {
            let tools = tools(count);
            Self {
                definitions: tool_definitions(&tools),
                catalog: catalog.then(|| ToolCatalog::new(&tools)),
            }
        }

        fn tokens(&self) -> usize {
            self.definitions
                .iter()
                .map(ToolDefinition::estimated_tokens)
                .sum()
        }
    }

    impl ToolSet for Many {
        fn definitions(&self) -> &[ToolDefinition] {
            &self.definitions
        }

        fn call<'a>(&'a self, _: &'a str, _: Map<String, Value>) -> BoxFuture<'a, ToolOutput> {
            async { ToolOutput::from_response(200, Value::Null) }.boxed()
        }

        fn catalog(&self) -> Option<&ToolCatalog> {
            self.catalog.as_ref()
        }
    }

    fn names(tools: &[ToolDefinition]) -> Vec<&str> {
        tools.iter().map(|tool| tool.name.as_str()).collect()
    }

    fn object(value: Value) -> Result<Map<String, Value>, String> {
        match value {
            Value::Object(map) => Ok(map),
            _ => Err("not an object".into()),
        }
    }

    /// The answer of a step that is not a call: its JSON and what it found.
    fn answered(step: Step) -> (Value, bool, Vec<usize>) {
        match step {
            Step::Answer { output, found } => (
                serde_json::from_str(&output.text).unwrap(),
                output.is_error,
                found,
            ),
            Step::Call { index, .. } => panic!("called {index}"),
        }
    }

    fn called(step: Step) -> (usize, Map<String, Value>) {
        match step {
            Step::Call { index, arguments } => (index, arguments),
            Step::Answer { output, .. } => panic!("answered {}", output.text),
        }
    }

    #[test]
    fn below_the_budget_every_tool_is_listed_as_it_is() {
        let set = Many::new(5, false);
        assert!(set.tokens() < 1_000, "{}", set.tokens());
        let disclosure = Disclosure::new(&set, Some(1_000));
        assert!(!disclosure.is_progressive());
        assert_eq!(disclosure.offered(), set.definitions);
        let (index, _) = called(disclosure.step("op_3", object(json!({"a": 1}))));
        assert_eq!(index, 3);
        // The meta-tools are not there: a call of one is a call of an unknown tool.
        let (answer, is_error, _) = answered(disclosure.step(SEARCH_TOOLS, object(json!({}))));
        assert!(is_error);
        assert_eq!(answer["status"], 404);
        assert!(
            answer["detail"]
                .as_str()
                .unwrap()
                .ends_with("the tools are: op_0, op_1, op_2, op_3, op_4"),
            "{answer}"
        );
        // No budget: everything, whatever it costs.
        let big = Many::new(300, false);
        assert!(!Disclosure::new(&big, None).is_progressive());
        assert!(Disclosure::new(&big, Some(4_000)).is_progressive());
        // No tools cost nothing.
        assert!(!Disclosure::new(&Many::new(0, false), Some(0)).is_progressive());
    }

    #[test]
    fn above_the_budget_the_model_searches_then_calls() {
        for catalog in [false, true] {
            let set = Many::new(300, catalog);
            assert!(set.tokens() > 4_000 * 5, "{}", set.tokens());
            let mut disclosure = Disclosure::new(&set, Some(4_000));
            assert_eq!(names(&disclosure.offered()), [SEARCH_TOOLS, CALL_TOOL]);

            let (answer, is_error, found) = answered(disclosure.step(
                SEARCH_TOOLS,
                object(json!({"query": "refund version 4", "limit": 3})),
            ));
            assert!(!is_error, "{answer}");
            assert_eq!(answer["tools"][0]["name"], "op_4", "{answer}");
            assert_eq!(answer["tools"].as_array().unwrap().len(), 3);
            assert!(answer["more"].as_u64().unwrap() > 0, "{answer}");
            assert_eq!(answer["tools"][0]["inputSchema"]["type"], "object");
            assert_eq!(found.len(), 3);
            assert_eq!(found[0], 4);

            // The tools found join the list on the next turn.
            disclosure.reveal(&found);
            let offered = disclosure.offered();
            assert_eq!(names(&offered)[..3], [SEARCH_TOOLS, CALL_TOOL, "op_4"]);
            assert_eq!(offered.len(), 5);

            // call_tool calls the tool it names, with its arguments (or none).
            let (index, arguments) = called(disclosure.step(
                CALL_TOOL,
                object(json!({"name": "op_4", "arguments": {"refund_name": "x"}})),
            ));
            assert_eq!((index, arguments["refund_name"].clone()), (4, json!("x")));
            let (index, arguments) =
                called(disclosure.step(CALL_TOOL, object(json!({"name": "op_9"}))));
            assert_eq!((index, arguments.len()), (9, 0));
            // Any tool by its own name, listed or not.
            let (index, _) = called(disclosure.step("op_299", object(json!({}))));
            assert_eq!(index, 299);
        }
    }

    #[test]
    fn what_the_model_gets_wrong_is_an_answer_it_reads() {
        let set = Many::new(300, false);
        let disclosure = Disclosure::new(&set, Some(4_000));
        let problem = |name: &str, arguments: Result<Map<String, Value>, String>| {
            let (answer, is_error, found) = answered(disclosure.step(name, arguments));
            assert!(is_error && found.is_empty(), "{answer}");
            (
                answer["status"].as_u64().unwrap(),
                answer["detail"].as_str().unwrap().to_owned(),
            )
        };
        let (status, detail) = problem(SEARCH_TOOLS, object(json!({"limit": 3})));
        assert_eq!(status, 400);
        assert!(detail.contains("`query`"), "{detail}");
        let (status, _) = problem(SEARCH_TOOLS, object(json!({"query": "x", "limit": 0})));
        assert_eq!(status, 400);
        let (status, detail) = problem(SEARCH_TOOLS, Err("not valid JSON".into()));
        assert_eq!((status, detail.as_str()), (400, "not valid JSON"));
        let (status, detail) = problem(CALL_TOOL, object(json!({"arguments": {}})));
        assert_eq!(status, 400);
        assert!(detail.contains("`name`"), "{detail}");
        let (status, _) = problem(CALL_TOOL, object(json!({"name": "op_1", "arguments": [1]})));
        assert_eq!(status, 400);
        // An unknown tool, through call_tool or by name: 404, with the closest names and how
        // to find the right one, never the whole list.
        let (status, detail) = problem(
            CALL_TOOL,
            object(json!({"name": "update_coupon", "arguments": {}})),
        );
        assert_eq!(status, 404);
        assert!(detail.contains("`update_coupon`"), "{detail}");
        assert!(detail.contains(SEARCH_TOOLS), "{detail}");
        assert!(detail.contains("close names: op_"), "{detail}");
        assert!(detail.len() < 400, "{detail}");
        let (status, _) = problem("delete_everything", object(json!({})));
        assert_eq!(status, 404);
        // call_tool cannot name a meta-tool: they are not the set's tools.
        let (status, _) = problem(
            CALL_TOOL,
            object(json!({"name": CALL_TOOL, "arguments": {"name": "op_1"}})),
        );
        assert_eq!(status, 404);
        // A search that finds nothing says so.
        let (answer, is_error, found) =
            answered(disclosure.step(SEARCH_TOOLS, object(json!({"query": "kubernetes"}))));
        assert!(!is_error && found.is_empty());
        assert_eq!(answer["tools"], json!([]));
        assert!(answer["note"].as_str().unwrap().contains("no tool matched"));
    }

    #[test]
    fn tags_filter_with_a_catalog_and_are_noted_without() {
        let search = json!({"query": "invoice", "tags": ["odd"], "limit": 50});
        let with = Many::new(300, true);
        let disclosure = Disclosure::new(&with, Some(4_000));
        let (answer, _, found) = answered(disclosure.step(SEARCH_TOOLS, object(search.clone())));
        // Invoices are the even tools: none is odd.
        assert!(found.is_empty(), "{answer}");
        let (_, _, found) = answered(disclosure.step(
            SEARCH_TOOLS,
            object(json!({"query": "invoice", "tags": ["even"], "limit": 50})),
        ));
        assert_eq!(found.len(), 30);
        assert!(found.iter().all(|index| index % 10 == 0));

        let without = Many::new(300, false);
        let disclosure = Disclosure::new(&without, Some(4_000));
        let (answer, _, found) = answered(disclosure.step(SEARCH_TOOLS, object(search)));
        assert_eq!(found.len(), 30);
        assert!(
            answer["note"].as_str().unwrap().contains("no tags"),
            "{answer}"
        );

        // A catalog of other tools is not used.
        let mut other = Many::new(300, true);
        other.catalog = Some(ToolCatalog::new(&tools(299)));
        let disclosure = Disclosure::new(&other, Some(4_000));
        assert!(matches!(
            disclosure.progressive.as_ref().unwrap().index,
            Index::Definitions(_)
        ));
    }

    #[test]
    fn found_tools_stay_few_within_the_budget_and_deterministic() {
        let set = Many::new(300, false);
        let cost = set.definitions[0].estimated_tokens();
        let meta: usize = [search_tools_definition(), call_tool_definition()]
            .iter()
            .map(ToolDefinition::estimated_tokens)
            .sum();
        // Room for 25 tools: the count bounds the list.
        let budget = meta + cost * 25 + cost / 2;
        let mut disclosure = Disclosure::new(&set, Some(budget));
        disclosure.reveal(&(0..15).collect::<Vec<_>>());
        disclosure.reveal(&(100..115).collect::<Vec<_>>());
        let offered = disclosure.offered();
        assert_eq!(offered.len(), 2 + MAX_FOUND_TOOLS);
        // The first search's oldest tools left first; the second's are all there, in order.
        assert_eq!(offered[2].name, "op_10");
        assert_eq!(offered[7].name, "op_100");
        assert_eq!(offered.last().unwrap().name, "op_114");
        // Found again, a tool moves to the end rather than appearing twice.
        disclosure.reveal(&[12]);
        let again = names(&disclosure.offered()).join(",");
        assert!(again.ends_with("op_114,op_12"), "{again}");
        assert_eq!(again.matches("op_12,").count(), 0, "{again}");

        // Room for 3 tools: the budget bounds the list, the best of a search come first.
        let budget = meta + cost * 3 + cost / 2;
        let mut disclosure = Disclosure::new(&set, Some(budget));
        disclosure.reveal(&[5, 6, 7, 8, 9]);
        assert_eq!(names(&disclosure.offered())[2..], ["op_5", "op_6", "op_7"]);
        disclosure.reveal(&[50]);
        assert_eq!(names(&disclosure.offered())[2..], ["op_6", "op_7", "op_50"]);
        let tokens: usize = disclosure
            .offered()
            .iter()
            .map(ToolDefinition::estimated_tokens)
            .sum();
        assert!(tokens <= budget);

        // A budget the meta-tools alone fill: the found tools are called through call_tool.
        let mut disclosure = Disclosure::new(&set, Some(10));
        disclosure.reveal(&[1, 2]);
        assert_eq!(names(&disclosure.offered()), [SEARCH_TOOLS, CALL_TOOL]);
    }

    #[test]
    fn a_tool_named_like_a_meta_tool_is_reached_through_call_tool() {
        let mut set = Many::new(300, false);
        set.definitions[7].name = SEARCH_TOOLS.to_owned();
        let mut disclosure = Disclosure::new(&set, Some(4_000));
        disclosure.reveal(&[7, 8]);
        assert_eq!(
            names(&disclosure.offered()),
            [SEARCH_TOOLS, CALL_TOOL, "op_8"]
        );
        // By its name, the model searches.
        let (_, is_error, _) =
            answered(disclosure.step(SEARCH_TOOLS, object(json!({"query": "refund"}))));
        assert!(!is_error);
        let (index, _) = called(disclosure.step(
            CALL_TOOL,
            object(json!({"name": SEARCH_TOOLS, "arguments": {}})),
        ));
        assert_eq!(index, 7);
    }
}
