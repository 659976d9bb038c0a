//! A message to finish, and its 64-byte blocks with the padding: whole blocks are lent where they
//! lie in the pieces, and only a block that straddles pieces (or holds the padding) is copied.

/// A message to finish: the chaining value after `compressed` whole blocks, and the bytes that
/// follow them, in pieces (any lengths, empty ones too).
#[derive(Debug, Clone, Copy)]
pub struct Message<'a> {
    pub(crate) state: [u32; 8],
    compressed: u64,
    pieces: &'a [&'a [u8]],
}

impl<'a> Message<'a> {
    /// The message whose first `compressed` blocks gave chaining value `state` and whose other
    /// bytes are `pieces`, in order.
    pub fn new(state: [u32; 8], compressed: u64, pieces: &'a [&'a [u8]]) -> Self {
        Self {
            state,
            compressed,
            pieces,
        }
    }
}

/// The blocks of a [`Message`] not compressed yet, padding included.
pub(crate) struct Blocks<'a> {
    pieces: &'a [&'a [u8]],
    /// The piece read next (`pieces.len()` is the padding) and the offset in it.
    piece: usize,
    offset: usize,
    /// `0x80`, zeros and the message's length in bits: `padding_len` bytes of it.
    padding: [u8; 72],
    padding_len: usize,
    /// A block gathered from several pieces.
    gathered: [u8; 64],
}

impl<'a> Blocks<'a> {
    pub(crate) fn new(message: &Message<'a>) -> Self {
        let bytes = message.compressed * 64
            + message
                .pieces
                .iter()
                .map(|piece| piece.len() as u64)
                .sum::<u64>();
        // One 0x80 byte, then zeros up to 8 bytes short of a whole block, then the length.
        let tail = usize::try_from(bytes % 64).unwrap_or(0);
        let padding_len = if tail < 56 { 64 - tail } else { 128 - tail };
        let mut padding = [0; 72];
        padding[0] = 0x80;
        padding[padding_len - 8..padding_len]
            .copy_from_slice(&(bytes.wrapping_mul(8)).to_be_bytes());
        Self {
            pieces: message.pieces,
            piece: 0,
            offset: 0,
            padding,
            padding_len,
            gathered: [0; 64],
        }
    }

    /// Whether a block is left (the padding's last is the last).
    pub(crate) fn has_block(&self) -> bool {
        self.piece < self.pieces.len()
            || (self.piece == self.pieces.len() && self.offset < self.padding_len)
    }

    /// The next block, or `None` after the padding's last.
    pub(crate) fn next_block(&mut self) -> Option<&[u8; 64]> {
        let Self {
            pieces,
            piece,
            offset,
            padding,
            padding_len,
            gathered,
        } = self;
        let padding = padding.get(..*padding_len)?;
        // Skips what is used up (empty pieces too); after the padding there is nothing.
        while piece_at(pieces, padding, *piece)?.len() == *offset {
            *piece += 1;
            *offset = 0;
        }
        if let Some(whole) = pieces
            .get(*piece)
            .and_then(|current| current.get(*offset..*offset + 64))
        {
            *offset += 64;
            return whole.try_into().ok();
        }
        let mut filled = 0;
        while filled < 64 {
            // The padding makes the message whole blocks: it never ends inside one.
            let current = piece_at(pieces, padding, *piece)?;
            let rest = current.get(*offset..)?;
            let take = rest.len().min(64 - filled);
            gathered
                .get_mut(filled..filled + take)?
                .copy_from_slice(rest.get(..take)?);
            filled += take;
            *offset += take;
            if *offset == current.len() {
                *piece += 1;
                *offset = 0;
            }
        }
        Some(gathered)
    }
}

/// Piece `index` of a message: one of `pieces`, or `padding` after the last.
fn piece_at<'p>(pieces: &'p [&'p [u8]], padding: &'p [u8], index: usize) -> Option<&'p [u8]> {
    match pieces.get(index) {
        Some(piece) => Some(piece),
        None if index == pieces.len() => Some(padding),
        None => None,
    }
}
