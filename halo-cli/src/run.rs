//! The commands: build the client, talk to the API, print.

use std::io::Read as _;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use halo_client::protocol::lint::thousands;
use halo_client::protocol::{DEFAULT_TOOL_BUDGET, TaskLimits, ToolListing, ToolSchema};
use halo_client::{Client, Defer, ExportError, ExportOptions, Method, Pin, ToolFormat};
use serde_json::Value;

use crate::cli::{CallArgs, Cli, Command, DeferWhen, ExportArgs, Format, Global};
use crate::connect::{anonymous, client, describe_manifest};
use crate::failure::Failure;
use crate::output::{self, print_err, print_out};
use crate::{approvals, interrupt, mcp, stream};

/// Runs a parsed command line on a small single-threaded runtime.
pub(crate) fn run(cli: Cli) -> Result<ExitCode, Failure> {
    // A gateway serves on every core; the client's commands need one thread.
    let mut runtime = match cli.command {
        Command::Gateway(_) => tokio::runtime::Builder::new_multi_thread(),
        _ => tokio::runtime::Builder::new_current_thread(),
    };
    let runtime = runtime
        .enable_all()
        .build()
        .map_err(|e| Failure::other(format!("cannot start the async runtime: {e}")))?;
    let anonymous = anonymous(&cli.global);
    runtime
        .block_on(execute(cli))
        .map_err(|failure| match failure {
            // Servers describe an operation only to callers that may call it.
            Failure::NotDescribed(message) if anonymous => Failure::NotDescribed(format!(
                "{message}; no credentials were sent, and an API may describe an operation only to \
             callers allowed to call it (try --bearer, --api-key or --credentials)"
            )),
            other => other,
        })
}

async fn execute(cli: Cli) -> Result<ExitCode, Failure> {
    let Cli { global, command } = cli;
    let json = global.json;
    match command {
        Command::Discover { url, tags } => {
            let manifest = client(&global, &url)?.discover(&strs(&tags)).await?;
            print_out(&if json {
                output::json(&manifest)
            } else {
                output::manifest(&manifest)
            });
        }
        Command::Search {
            url,
            query,
            tags,
            limit,
        } => {
            let found = client(&global, &url)?
                .search(query.as_str())
                .tags(&tags)
                .limit(usize::from(limit))
                .send()
                .await?;
            print_out(&if json {
                output::json(&found.tools)
            } else {
                output::found(&found.tools)
            });
            if found.total > found.tools.len() {
                print_err(&format!(
                    "halo: {} of {} matching tools shown (--limit shows more)\n",
                    found.tools.len(),
                    found.total
                ));
            } else if found.tools.is_empty() {
                print_err(&format!(
                    "halo: no tool matches \"{}\"\n",
                    output::line(&query)
                ));
            }
        }
        Command::Describe { url, path, method } => {
            let client = client(&global, &url)?;
            let text = match method {
                Some(method) => {
                    let schema = client.describe(&path, parse_method(&method)?).await?;
                    if json {
                        output::json(&schema)
                    } else {
                        output::schema(&schema)
                    }
                }
                None => {
                    let schemas = schemas_of(&client, &path).await?;
                    if json {
                        output::json(&schemas)
                    } else {
                        let texts: Vec<String> = schemas.iter().map(output::schema).collect();
                        texts.join("\n")
                    }
                }
            };
            print_out(&text);
        }
        Command::Call(call) => {
            let waiting = approvals::Waiting::default();
            let (client, method, args) =
                target(&global, &call, &waiting, halo_client::Transport::Sse).await?;
            let invoked = client.invoke(&call.path, method, args);
            let Some(response) = approvals::interruptible(&client, &waiting, invoked).await? else {
                return Ok(ExitCode::from(interrupt::INTERRUPTED));
            };
            print_out(&if json {
                output::json(&response.to_value())
            } else {
                output::response(&response)
            });
        }
        Command::Stream(stream) => {
            let call = stream.call;
            let transport = stream.transport.into();
            let waiting = Default::default();
            let (client, method, args) = target(&global, &call, &waiting, transport).await?;
            return stream::stream(&client, &call.path, method, args, json).await;
        }
        Command::Export(args) => return export(&global, args).await,
        Command::Approvals { url } => return approvals::list(&client(&global, &url)?, json).await,
        Command::Approve { url, id } => {
            return approvals::approve(&client(&global, &url)?, &id, json).await;
        }
        Command::Deny { url, id, reason } => {
            let client = client(&global, &url)?;
            return approvals::deny(&client, &id, reason.as_deref(), json).await;
        }
        Command::Pin { url, tags, out } => {
            let pin = client(&global, &url)?.pin(&strs(&tags)).await?;
            let text = output::json(&pin);
            match out {
                Some(path) => {
                    std::fs::write(&path, text).map_err(|e| {
                        Failure::other(format!("cannot write {}: {e}", path.display()))
                    })?;
                    if !json {
                        print_out(&output::pinned(&pin, &path));
                    }
                }
                None => print_out(&text),
            }
        }
        Command::Agent(agent) => {
            let client = client(&global, &agent.url)?;
            let options = crate::agent::Options {
                tool_budget: agent.budget(),
                task: agent.task,
                llm_base_url: agent.llm_base_url,
                model: agent.model,
                llm_api_key: agent.llm_api_key,
                tags: agent.tags,
                system: agent.system,
                max_turns: agent.max_turns,
            };
            return crate::agent::run(&client, options, json).await;
        }
        Command::Gateway(command) => return crate::gateway::execute(command).await,
        Command::Lint(args) => {
            return match (&args.openapi, &args.url) {
                (Some(document), _) => crate::lint::run_document(document, &args, json),
                (None, Some(url)) => {
                    let client = client(&global, url)?;
                    crate::lint::run(&client, args, json, anonymous(&global)).await
                }
                (None, None) => Err(Failure::other(
                    "lint needs the API's URL, or an OpenAPI document with --openapi FILE",
                )),
            };
        }
        Command::Mcp {
            url,
            tags,
            poll,
            all_tools,
            tool_budget,
            output_schemas,
            task_grace,
        } => {
            let options = mcp::Options {
                tags,
                poll: Duration::from_secs_f64(poll),
                listing: ToolListing::default()
                    .budget((!all_tools).then_some(tool_budget))
                    .all_output_schemas(output_schemas),
                task_limits: TaskLimits::default().grace(Duration::from_secs_f64(task_grace)),
            };
            return mcp::serve(crate::connect::builder(&global, &url)?, options).await;
        }
        Command::Diff { url, pin } => {
            let pinned = read_pin(&pin)?;
            let current = client(&global, &url)?.pin(&strs(&pinned.tags)).await?;
            let diff = pinned.diff(&current);
            print_out(&if json {
                output::json(&diff)
            } else {
                output::diff(&pinned, &current, &diff)
            });
            if !diff.is_empty() {
                return Ok(ExitCode::from(1));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `export`: the tools as an LLM API's definitions, within its limits; how many tools there
/// are, and the flags that fit them, when they do not fit.
async fn export(global: &Global, args: ExportArgs) -> Result<ExitCode, Failure> {
    let format = match args.format {
        Format::OpenAi => ToolFormat::OpenAi,
        Format::Anthropic => ToolFormat::Anthropic,
    };
    if args.strict && format != ToolFormat::OpenAi {
        return Err(Failure::other(
            "--strict is OpenAI's strict mode: use it with --format openai",
        ));
    }
    let client = client(global, &args.url)?;
    let manifest = client.discover(&strs(&args.tags)).await?;
    let tools = describe_manifest(&client, manifest).await?;
    let mut options = ExportOptions::new(format)
        .strict(args.strict)
        .defer(match args.defer {
            DeferWhen::Auto => Defer::Auto,
            DeferWhen::Always => Defer::Always,
            DeferWhen::Never => Defer::Never,
        });
    if let Some(budget) = args.budget {
        options = options.budget(budget);
    }
    if let Some(query) = &args.query {
        options = options.query(query.as_str());
    }
    if let Some(max) = args.max {
        options = options.max(usize::try_from(max).unwrap_or(usize::MAX));
    }
    let exported = options
        .export(&tools)
        .map_err(|error| export_failure(error, &args))?;
    print_out(&output::json(&exported.tools));
    if exported.deferred {
        print_err(&format!(
            "halo: {} tools (~{} tokens) deferred behind {format}'s tool search\n",
            exported.selected.len(),
            thousands(exported.tokens)
        ));
    } else if args.budget.is_none() && exported.tokens > DEFAULT_TOOL_BUDGET {
        print_err(&format!(
            "halo: these {} tools cost ~{} tokens, more than a model should load up front \
             ({}); choose fewer with --q \"WORDS\" --max N, or defer them with --defer\n",
            exported.selected.len(),
            thousands(exported.tokens),
            thousands(DEFAULT_TOOL_BUDGET)
        ));
    }
    for (name, reason) in &exported.not_strict {
        print_err(&format!(
            "halo: {} is exported without strict mode: its schema has {reason}\n",
            output::line(name)
        ));
    }
    if let Some(query) = &args.query
        && exported.selected.is_empty()
    {
        print_err(&format!(
            "halo: no tool matches \"{}\"\n",
            output::line(query)
        ));
    }
    Ok(ExitCode::SUCCESS)
}

/// Why an export failed, with the flags that fix it.
fn export_failure(error: ExportError, args: &ExportArgs) -> Failure {
    let ExportError::TooMany {
        format,
        tools,
        tokens,
        max_tools,
        budget,
        ..
    } = error
    else {
        return Failure::Other(error.to_string());
    };
    let chosen = !args.tags.is_empty() || args.query.is_some() || args.max.is_some();
    let plural = if tools == 1 { "" } else { "s" };
    let subject = if chosen {
        format!("the {tools} tool{plural} chosen")
    } else {
        format!("the API's {tools} tool{plural}")
    };
    let tokens = thousands(tokens);
    let choose = "choose fewer with --tags TAG,..., --q \"WORDS\" --max N, or --max N";
    if format == ToolFormat::Anthropic {
        return Failure::Other(format!(
            "{subject} (~{tokens} tokens) cannot be deferred: Anthropic's tool search takes at \
             most {}; {choose}",
            thousands(max_tools)
        ));
    }
    let (why, raise) = match budget {
        Some(budget) if tools <= max_tools => (
            format!("more than --budget {} tokens", thousands(budget)),
            ", raise --budget",
        ),
        _ => (format!("OpenAI takes at most {max_tools} functions"), ""),
    };
    Failure::Other(format!(
        "{subject} (~{tokens} tokens) cannot be loaded up front: {why}; {choose}{raise}, or \
         defer them behind OpenAI's tool search with --defer (Responses API, gpt-5.4 and later)"
    ))
}

/// The client, method and arguments of `call` and `stream`; `waiting` keeps the approval a
/// held call waits for.
async fn target(
    global: &Global,
    call: &CallArgs,
    waiting: &approvals::Waiting,
    transport: halo_client::Transport,
) -> Result<(Client, Method, Value), Failure> {
    let args = match &call.data {
        Some(data) => read_data(data)?,
        None => Value::Null,
    };
    let builder = crate::connect::builder(global, &call.url)?;
    let builder = builder.stream_transport(transport);
    let client = builder.on_approval_pending(waiting.hook()).build()?;
    let method = match &call.method {
        Some(method) => parse_method(method)?,
        None => only_method(&client, &call.path).await?,
    };
    Ok((client, method, args))
}

fn strs(items: &[String]) -> Vec<&str> {
    items.iter().map(String::as_str).collect()
}

fn parse_method(text: &str) -> Result<Method, Failure> {
    let upper = text.trim().to_ascii_uppercase();
    if upper.is_empty() || !upper.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(Failure::other(format!("`{text}` is not an HTTP method")));
    }
    Method::from_bytes(upper.as_bytes())
        .map_err(|_| Failure::other(format!("`{text}` is not an HTTP method")))
}

/// Every schema a path describes (one request).
async fn schemas_of(client: &Client, path: &str) -> Result<Vec<ToolSchema>, Failure> {
    let schemas = client.describe_path(path).await?;
    if schemas.is_empty() {
        return Err(Failure::NotDescribed(format!(
            "{path} describes no operation"
        )));
    }
    Ok(schemas)
}

/// The method of the only operation at `path`; an error listing them when there are several.
async fn only_method(client: &Client, path: &str) -> Result<Method, Failure> {
    let schemas = schemas_of(client, path).await?;
    if let [only] = schemas.as_slice() {
        return parse_method(&only.call.method);
    }
    let methods: Vec<&str> = schemas.iter().map(|s| s.call.method.as_str()).collect();
    Err(Failure::other(format!(
        "{path} has {} operations ({}); choose one with --method",
        methods.len(),
        methods.join(", ")
    )))
}

/// `--data`: JSON, `@FILE` or `@-` (stdin).
fn read_data(data: &str) -> Result<Value, Failure> {
    let (text, source) = match data.strip_prefix('@') {
        Some("-") => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| Failure::other(format!("cannot read standard input: {e}")))?;
            (text, "standard input".to_owned())
        }
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| Failure::other(format!("cannot read {path}: {e}")))?;
            (text, path.to_owned())
        }
        None => (data.to_owned(), "--data".to_owned()),
    };
    // serde_json's message names the line and column, never the content.
    serde_json::from_str(&text).map_err(|e| Failure::other(format!("{source} is not JSON: {e}")))
}

fn read_pin(path: &Path) -> Result<Pin, Failure> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Failure::other(format!("cannot read {}: {e}", path.display())))?;
    serde_json::from_str(&text)
        .map_err(|e| Failure::other(format!("{} is not a pin: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods() {
        assert_eq!(parse_method("post").unwrap(), Method::POST);
        assert_eq!(parse_method("QUERY").unwrap().as_str(), "QUERY");
        assert!(parse_method("").is_err());
        assert!(parse_method("GE T").is_err());
    }

    #[test]
    fn data() {
        assert_eq!(read_data(r#"{"id": 1}"#).unwrap()["id"], 1);
        let Failure::Other(message) = read_data("{secret").unwrap_err() else {
            panic!("expected a usage error");
        };
        assert!(!message.contains("secret"), "{message}");
        let Failure::Other(message) = read_data("@/nonexistent/file.json").unwrap_err() else {
            panic!("expected a usage error");
        };
        assert!(message.contains("/nonexistent/file.json"));
    }
}
