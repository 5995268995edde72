//! The bookstore's hosted agent: a shopping assistant that may search the catalogue and
//! check stock, and nothing else (it cannot order, pay or change a book).
//!
//! Served at `POST /agents/shopping_assistant/run` when the bookstore has a model
//! ([`Options::llm`](crate::Options::llm); `--llm-base-url` and `--llm-model` on the command
//! line). Its tools are called in process as the caller: a caller without the `inventory`
//! scope gets an assistant that can search but not check stock.

use std::time::Duration;

use halo_agent::{Agent, LlmProvider, ModelSettings};
use halo_axum::agents::HostedAgent;

/// The agent's name: its tool name and path segment.
pub const NAME: &str = "shopping_assistant";

/// The tools the assistant may use, by name.
pub const TOOLS: [&str; 3] = ["search_books", "get_book", "get_stock"];

/// What the model is told (never shown to a caller).
pub const SYSTEM_PROMPT: &str = "You are the shopping assistant of an online bookstore. Help \
the customer find books and tell them what is in stock. Search the catalogue before naming a \
book, and check the stock before saying a book is available; never guess a price or a stock \
level. You cannot place orders or take payments: when the customer wants to buy, tell them the \
book's id and price so they can order it. Answer briefly, in the customer's language.";

/// The same in Chinese, chosen by `Accept-Language: zh`.
pub const SYSTEM_PROMPT_ZH: &str = "你是一家网上书店的导购助手。帮助顾客找书并告诉他们库存情况。\
提到某本书之前先搜索目录，说有货之前先查库存；不要猜测价格或库存。你不能下单或付款：\
顾客想买时，告诉他们书的 id 和价格，让他们自己下单。回答要简短，使用顾客的语言。";

/// The shopping assistant on `provider`: at most 8 turns and two minutes per run, a low
/// temperature.
pub fn shopping_assistant(provider: impl LlmProvider) -> HostedAgent {
    let agent = Agent::builder(provider)
        .max_turns(8)
        .timeout(Duration::from_secs(120))
        .model(ModelSettings::new().temperature(0.2))
        .build();
    HostedAgent::new(NAME, agent)
        .description(
            "Answers a customer's questions about books.\n\nFinds books by title, author or \
             price, gives their details and says how many copies are in stock. It does not \
             order or pay.",
        )
        .why(
            "Use when a customer asks about books, prices or availability in their own words; \
             it searches and checks stock by itself",
        )
        .system_prompt(SYSTEM_PROMPT)
        .system_prompt_in("zh", SYSTEM_PROMPT_ZH)
        .describe_in(
            "zh",
            "回答顾客关于图书的问题：按书名、作者或价格找书，给出详情和库存。不下单、不付款。",
            "顾客用自己的话询问图书、价格或库存时使用",
        )
        .tools_named(TOOLS)
        // Its tools only read, so the run changes nothing.
        .tags(["books", "agents", "read"])
        .security(crate::auth::BEARER_SCHEME, ["books:read"])
}
