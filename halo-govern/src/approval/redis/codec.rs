//! The approvals the scripts answer with, read back as [`Entry`]s: one record per approval,
//! its id, whether the script expired it, and the fields of [`FIELDS`](super::scripts::FIELDS)
//! in order.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::StatusCode;
use serde_json::Value;

use super::scripts::FIELDS;
use crate::approval::ApprovalRequest;
use crate::approval::entry::{Answer, Entry, Made, Phase, State};
use crate::redis::decode_headers;

/// One approval as the scripts answer it: its id, whether the script expired it, and the
/// fields in the order of [`FIELDS`].
pub(super) struct Record<'a> {
    pub(super) id: &'a str,
    pub(super) expired: bool,
    fields: &'a [Option<Vec<u8>>],
}

/// The records of an answer; what is damaged is left out.
pub(super) fn records(answer: &[Option<Vec<u8>>]) -> Vec<Record<'_>> {
    answer
        .chunks_exact(FIELDS + 2)
        .filter_map(|chunk| {
            let id = std::str::from_utf8(chunk[0].as_deref()?).ok()?;
            Some(Record {
                id,
                expired: chunk[1].as_deref() == Some(b"1"),
                fields: &chunk[2..],
            })
        })
        .collect()
}

impl Record<'_> {
    fn bytes(&self, index: usize) -> Option<&[u8]> {
        self.fields.get(index)?.as_deref()
    }

    fn text(&self, index: usize) -> Option<String> {
        Some(String::from_utf8_lossy(self.bytes(index)?).into_owned())
    }

    fn millis(&self, index: usize) -> Option<SystemTime> {
        let ms = std::str::from_utf8(self.bytes(index)?).ok()?.parse().ok()?;
        Some(UNIX_EPOCH + Duration::from_millis(ms))
    }

    /// Its state word; `None` when the approval is gone.
    pub(super) fn state_word(&self) -> Option<&[u8]> {
        self.bytes(0)
    }

    /// The replica that runs it, once approved.
    pub(super) fn runner(&self) -> Option<&[u8]> {
        self.bytes(11)
    }

    /// Its state; `None` when it is gone or damaged.
    pub(super) fn state<R>(&self) -> Option<State<R>> {
        let decided = || (self.text(9).unwrap_or_default(), self.text(10));
        Some(match self.state_word()? {
            b"pending" => State::Pending(None),
            b"approved" => {
                let (by, reason) = decided();
                State::Approved {
                    by,
                    reason,
                    answer: None,
                }
            }
            b"ran" => {
                let (by, reason) = decided();
                let status = std::str::from_utf8(self.bytes(12)?).ok()?.parse().ok()?;
                let headers = decode_headers(self.bytes(13).unwrap_or_default());
                let answer = Answer {
                    status: StatusCode::from_u16(status).ok()?,
                    headers: headers
                        .iter()
                        .map(|(name, value)| (name.clone(), value.clone()))
                        .collect(),
                    body: self.bytes(14).map(Bytes::copy_from_slice),
                };
                State::Approved {
                    by,
                    reason,
                    answer: Some(answer),
                }
            }
            b"denied" => {
                let (by, reason) = decided();
                State::Denied { by, reason }
            }
            b"expired" => State::Expired,
            b"cancelled" => State::Cancelled {
                by: self.text(9).filter(|by| !by.is_empty()),
                reason: self.text(10).unwrap_or_default(),
            },
            _ => return None,
        })
    }

    /// Its phase; `None` when it is gone or damaged.
    pub(super) fn phase(&self) -> Option<Phase> {
        self.state::<()>().map(|state| state.phase())
    }

    /// The approval, as this replica knows its tools (`tools`: their names, by index);
    /// `None` when it is gone, damaged, or of a tool this replica does not serve.
    pub(super) fn entry<R>(&self, tools: &[String]) -> Option<Entry<R>> {
        let tool_name = self.text(1)?;
        let tool = tools.iter().position(|name| *name == tool_name)?;
        let arguments = match self.bytes(5) {
            Some(json) => Some(serde_json::from_slice::<Value>(json).ok()?),
            None => None,
        };
        let request = ApprovalRequest {
            id: String::new(),
            tool: tool_name,
            caller: self.text(2),
            method: self.text(3)?,
            target: self.text(4)?,
            arguments,
            expires_at: UNIX_EPOCH,
        };
        let made = Made {
            id: Arc::from(self.id),
            tool,
            request,
            quota: String::new(),
            key: None,
            requested_at: self.millis(6)?,
            expires_at: self.millis(7)?,
            trail: decode_headers(self.bytes(8).unwrap_or_default()),
        };
        Some(Entry::new(made, self.state()?, 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The records of an answer, as a book whose held requests run with `()` reads them.
    fn records(answer: &[Option<Vec<u8>>]) -> Vec<Read<'_>> {
        super::records(answer).into_iter().map(Read).collect()
    }

    /// A record read back by such a book.
    struct Read<'a>(Record<'a>);

    impl<'a> std::ops::Deref for Read<'a> {
        type Target = Record<'a>;

        fn deref(&self) -> &Record<'a> {
            &self.0
        }
    }

    impl Read<'_> {
        fn entry(&self, tools: &[String]) -> Option<Entry<()>> {
            self.0.entry(tools)
        }
    }

    /// A record as the scripts answer it, with `fields` by name.
    fn record(fields: &[(&str, &str)]) -> Vec<Option<Vec<u8>>> {
        let names = [
            "state",
            "tool",
            "caller",
            "method",
            "target",
            "args",
            "req_at",
            "exp",
            "trail",
            "by",
            "reason",
            "runner",
            "a_status",
            "a_headers",
            "a_body",
        ];
        let mut out = vec![Some(b"9f".to_vec()), Some(b"0".to_vec())];
        out.extend(names.iter().map(|name| {
            let value = fields.iter().find(|(field, _)| field == name)?.1;
            Some(value.as_bytes().to_vec())
        }));
        out
    }

    #[test]
    fn records_are_read_back_as_approvals() {
        let tools = ["ping".to_owned(), "refund".to_owned()];
        let ran = record(&[
            ("state", "ran"),
            ("tool", "refund"),
            ("caller", "alice"),
            ("method", "POST"),
            ("target", "/refunds/7"),
            ("args", "{\"amount\":20}"),
            ("req_at", "1000"),
            ("exp", "61000"),
            ("by", "carol"),
            ("a_status", "200"),
            ("a_headers", "content-type:application/json\n"),
            ("a_body", "{}"),
        ]);
        let read = records(&ran);
        assert_eq!(read.len(), 1);
        assert!(!read[0].expired);
        let entry = read[0].entry(&tools).expect("an approval");
        assert_eq!((entry.tool, &*entry.id), (1, "9f"));
        assert_eq!(entry.request.caller(), Some("alice"));
        assert_eq!(entry.phase(), Phase::Ran);
        let answer = entry.answer().expect("an answer");
        assert_eq!(answer.status, StatusCode::OK);
        assert_eq!(answer.body.as_deref(), Some(&b"{}"[..]));
        // A tool this replica does not serve, a damaged state: not an approval here.
        let other = record(&[("state", "pending"), ("tool", "wipe"), ("method", "POST")]);
        assert!(records(&other)[0].entry(&tools).is_none());
        let damaged = record(&[("state", "odd"), ("tool", "refund")]);
        assert!(records(&damaged)[0].entry(&tools).is_none());
        // A record cut short is left out.
        assert!(records(&ran[..5]).is_empty());
    }
}
