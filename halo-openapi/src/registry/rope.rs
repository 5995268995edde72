//! Pre-serialised bytes made of shared pieces.
//!
//! A definition that a hundred operations reach is serialised once; each served schema is a
//! [`Rope`] of pieces, the shared ones among them, so the memory of the registry grows with
//! the document rather than with the sum of what its paths serve.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use xxhash_rust::xxh3::{Xxh3, xxh3_64};

/// A rope no longer than this is copied into one piece when joined: small answers are one
/// buffer, as if written whole.
const COMPACT: usize = 64 * 1024;

/// Bytes as a tree of shared pieces, with their length and a hash of their content.
#[derive(Debug, Clone)]
pub struct Rope {
    node: Node,
    len: usize,
    hash: u64,
}

#[derive(Debug, Clone)]
enum Node {
    Leaf(Bytes),
    Join(Arc<[Rope]>),
}

impl From<Bytes> for Rope {
    fn from(bytes: Bytes) -> Self {
        Self {
            len: bytes.len(),
            hash: xxh3_64(&bytes),
            node: Node::Leaf(bytes),
        }
    }
}

impl From<Vec<u8>> for Rope {
    fn from(bytes: Vec<u8>) -> Self {
        Self::from(Bytes::from(bytes))
    }
}

impl Rope {
    /// `bytes`, in one piece, not copied.
    #[must_use]
    pub fn from_static(bytes: &'static [u8]) -> Self {
        Self::from(Bytes::from_static(bytes))
    }

    /// The ropes one after the other. Short results are copied into one piece.
    #[must_use]
    pub fn join(parts: Vec<Self>) -> Self {
        let len = parts.iter().map(|part| part.len).sum();
        if len <= COMPACT || parts.len() == 1 {
            if let [only] = &parts[..] {
                return only.clone();
            }
            let mut bytes = Vec::with_capacity(len);
            for part in &parts {
                part.for_each_piece(&mut |piece| bytes.extend_from_slice(piece));
            }
            return Self::from(bytes);
        }
        let mut hasher = Xxh3::new();
        for part in &parts {
            hasher.update(&part.hash.to_le_bytes());
        }
        Self {
            node: Node::Join(parts.into()),
            len,
            hash: hasher.digest(),
        }
    }

    /// The length in bytes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it has no bytes.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A hash of the content (equal content in equal pieces hashes equal).
    #[must_use]
    pub fn hash(&self) -> u64 {
        self.hash
    }

    fn for_each_piece(&self, each: &mut impl FnMut(&Bytes)) {
        match &self.node {
            Node::Leaf(bytes) => each(bytes),
            Node::Join(parts) => parts.iter().for_each(|part| part.for_each_piece(each)),
        }
    }

    /// The content in one buffer (a copy unless it is one piece).
    #[must_use]
    pub fn to_bytes(&self) -> Bytes {
        if let Node::Leaf(bytes) = &self.node {
            return bytes.clone();
        }
        let mut out = Vec::with_capacity(self.len);
        self.for_each_piece(&mut |piece| out.extend_from_slice(piece));
        Bytes::from(out)
    }

    /// The content as a response body: its pieces in order, none of them copied.
    #[must_use]
    pub fn into_body(self) -> RopeBody {
        let left = self.len as u64;
        match self.node {
            Node::Leaf(bytes) => RopeBody {
                next: Some(bytes),
                rest: Vec::new(),
                left,
            },
            Node::Join(_) => {
                let mut rest = Vec::new();
                self.for_each_piece(&mut |piece| rest.push(piece.clone()));
                rest.reverse();
                RopeBody {
                    next: None,
                    rest,
                    left,
                }
            }
        }
    }
}

/// A [`Rope`] as an HTTP body: one frame per piece, of an exact size.
#[derive(Debug)]
pub struct RopeBody {
    /// The next piece, when it is not in `rest` (a rope of one piece needs no vector).
    next: Option<Bytes>,
    /// The pieces after it, in reverse, the next one last.
    rest: Vec<Bytes>,
    left: u64,
}

impl Body for RopeBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let next = self.next.take().or_else(|| self.rest.pop());
        if let Some(piece) = &next {
            self.left -= piece.len() as u64;
        }
        Poll::Ready(next.map(|piece| Ok(Frame::data(piece))))
    }

    fn is_end_stream(&self) -> bool {
        self.next.is_none() && self.rest.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.left)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt as _;

    fn big(byte: u8) -> Rope {
        Rope::from(vec![byte; COMPACT])
    }

    #[tokio::test]
    async fn joined_pieces_read_back_in_order() {
        let rope = Rope::join(vec![
            Rope::from_static(b"["),
            big(b'a'),
            Rope::from_static(b","),
            big(b'b'),
            Rope::from_static(b"]"),
        ]);
        assert_eq!(rope.len(), 2 * COMPACT + 3);
        let bytes = rope.to_bytes();
        assert_eq!(bytes.len(), rope.len());
        assert_eq!(bytes[0], b'[');
        assert_eq!(bytes[COMPACT + 1], b',');
        let body = rope.clone().into_body();
        assert_eq!(
            http_body::Body::size_hint(&body).exact(),
            Some(rope.len() as u64)
        );
        let collected = body.collect().await.unwrap().to_bytes();
        assert_eq!(collected, bytes);
    }

    #[test]
    fn small_joins_are_one_piece_and_hashes_follow_content() {
        let joined = Rope::join(vec![Rope::from_static(b"ab"), Rope::from_static(b"c")]);
        assert!(matches!(joined.node, Node::Leaf(_)));
        assert_eq!(joined.hash(), Rope::from_static(b"abc").hash());
        let a = Rope::join(vec![big(b'a'), big(b'b')]);
        let b = Rope::join(vec![big(b'a'), big(b'c')]);
        assert_ne!(a.hash(), b.hash());
        assert_eq!(a.hash(), Rope::join(vec![big(b'a'), big(b'b')]).hash());
    }
}
