//! What MCP clients should see of the bookstore.

use rmcp::model::ProgressNotificationParam;

/// Asserts that `notes` are the progress of the bookstore's `summarize_book` over
/// `chapters` chapters: one notification per chapter, in order, with the total and the
/// handler's message.
///
/// # Panics
/// When they are not.
pub fn assert_chapter_progress(notes: &[ProgressNotificationParam], chapters: u32) {
    let seen: Vec<_> = notes
        .iter()
        .map(|note| (note.progress, note.total, note.message.clone()))
        .collect();
    let expected: Vec<_> = (1..=chapters)
        .map(|chapter| {
            (
                f64::from(chapter),
                Some(f64::from(chapters)),
                Some(format!("summarising chapter {chapter}")),
            )
        })
        .collect();
    assert_eq!(seen, expected);
}
