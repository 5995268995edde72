//! `halo stream`: a call's events printed as they arrive, and the call cancelled on Ctrl-C.
//!
//! The first Ctrl-C (SIGINT) sends the server a cancel request for the call
//! (`DELETE /.well-known/halo/calls/{call_id}`) and goes on printing until the stream ends
//! (with the server's `tool_error`), for at most [`GRACE`]; `halo` then exits 130, as a shell
//! does for a command interrupted by SIGINT. A second Ctrl-C stops waiting at once.

use std::pin::pin;
use std::process::ExitCode;
use std::time::Duration;

use futures_util::StreamExt as _;
use futures_util::future::{self, Either};
use halo_client::protocol::ToolEvent;
use halo_client::{CancelOutcome, Client, Method, StreamEvent};
use serde_json::Value;

use crate::failure::Failure;
use crate::interrupt::{INTERRUPTED, interrupted};
use crate::output::{self, print_err, print_out};

/// How long the stream may take to end once the call is cancelled.
const GRACE: Duration = Duration::from_secs(5);

/// Prints a call's events as they arrive; exit 1 unless it ends with a 2xx `tool_end`, 130
/// when interrupted.
pub(crate) async fn stream(
    client: &Client,
    path: &str,
    method: Method,
    args: Value,
    json: bool,
) -> Result<ExitCode, Failure> {
    let mut events = client.invoke_stream(path, method, args).await?;
    let call_id = events.call_id().cloned();
    let mut code = ExitCode::SUCCESS;
    let mut interrupt = pin!(interrupted());
    // Once cancelled: until when the stream may go on.
    let mut grace: Option<std::pin::Pin<Box<tokio::time::Sleep>>> = None;
    loop {
        // The next event, or `None` for a Ctrl-C (or, once cancelled, the end of the grace).
        let next = {
            let stop = async {
                match &mut grace {
                    None => interrupt.as_mut().await,
                    // A second Ctrl-C stops waiting too.
                    Some(grace) => {
                        let _ = future::select(grace.as_mut(), interrupt.as_mut()).await;
                    }
                }
            };
            // Ctrl-C first: it is listened for before the first event is printed.
            match future::select(pin!(stop), events.next()).await {
                Either::Left(((), _)) => None,
                Either::Right((event, _)) => Some(event),
            }
        };
        let event = match next {
            Some(Some(event)) => event,
            Some(None) => break,
            None if grace.is_some() => break,
            None => {
                interrupt.set(interrupted());
                cancel(client, call_id.as_ref()).await;
                grace = Some(Box::pin(tokio::time::sleep(GRACE)));
                continue;
            }
        };
        let event = match event {
            Ok(event) => event,
            Err(_) if grace.is_some() => break,
            Err(error) => return Err(error.into()),
        };
        print(&event, json);
        let failed = match event.event() {
            ToolEvent::ToolEnd(end) => !(200..300).contains(&end.status),
            ToolEvent::ToolError(_) => true,
            _ => false,
        };
        if failed {
            code = ExitCode::from(1);
        }
    }
    Ok(if grace.is_some() {
        ExitCode::from(INTERRUPTED)
    } else {
        code
    })
}

/// Asks the server to cancel the call, saying on stderr what came of it.
async fn cancel(client: &Client, call_id: Option<&halo_client::CallId>) {
    let Some(call_id) = call_id else {
        print_err("halo: interrupted; the server gave the call no id to cancel it by\n");
        return;
    };
    let note = match client.cancel(call_id).await {
        Ok(CancelOutcome::AlreadyEnded) => format!("halo: interrupted; call {call_id} had ended\n"),
        Ok(_) => format!("halo: interrupted; call {call_id} cancelled\n"),
        Err(error) => format!("halo: interrupted; cannot cancel call {call_id}: {error}\n"),
    };
    print_err(&note);
}

fn print(event: &StreamEvent, json: bool) {
    print_out(&if json {
        output::event_line(event.id(), event.event())
    } else {
        output::event(event.id(), event.event())
    });
}
