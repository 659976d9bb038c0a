//! A journal file read in pieces of [`PIECE`] bytes, so that a line lying whole in the piece
//! can be checked where it is ([`Pieces::whole_line`]), not copied out first; any other line is
//! copied out exactly as [`BufRead::read_until`](std::io::BufRead::read_until) would give it
//! ([`Pieces::read_line`]).
//!
//! **Contract.** The bytes come in file order, each once, whichever way a line is taken: a line
//! shown by [`Pieces::whole_line`] and then [`consumed`](Pieces::consume) is the line
//! [`Pieces::read_line`] would have given there, and one not consumed is still there for it. A
//! read that gives 0 bytes is the end for now (an append in flight may add more: the next call
//! reads again), and an interrupted read is retried, as `read_until` does.

use std::fs::File;
use std::io::{ErrorKind, Read, Seek, SeekFrom};

/// Bytes read at once (what the `BufReader` before held).
const PIECE: usize = 1 << 16;

/// The file and the piece of it read last.
#[derive(Debug)]
pub(super) struct Pieces {
    file: File,
    /// [`PIECE`] bytes once something was read; `piece[pos..filled]` is what is left of it.
    piece: Vec<u8>,
    pos: usize,
    filled: usize,
}

impl Pieces {
    pub(super) fn new(file: File) -> Self {
        Self {
            file,
            piece: Vec::new(),
            pos: 0,
            filled: 0,
        }
    }

    /// Reads on from `offset` of the file (what the piece held is dropped).
    pub(super) fn seek(&mut self, offset: u64) -> std::io::Result<()> {
        self.file.seek(SeekFrom::Start(offset))?;
        self.pos = 0;
        self.filled = 0;
        Ok(())
    }

    /// How long the next line is with its LF (see [`Pieces::ahead`]), if it lies whole in the
    /// piece once what is left of the piece is moved to its start and the rest read (only when
    /// the LF is not there yet); `None` when no LF comes in the piece (the end of the file for
    /// now, or a line longer than the piece).
    pub(super) fn whole_line(&mut self) -> std::io::Result<Option<usize>> {
        let mut end = find_lf(&self.piece[self.pos..self.filled]);
        if end.is_none() {
            self.piece.copy_within(self.pos..self.filled, 0);
            self.filled -= self.pos;
            self.pos = 0;
            if self.fill()? == 0 {
                return Ok(None);
            }
            end = find_lf(&self.piece[..self.filled]);
        }
        Ok(end.map(|end| end + 1))
    }

    /// The next `len` bytes, as many as [`Pieces::whole_line`] gave (fewer if there are not).
    pub(super) fn ahead(&self, len: usize) -> &[u8] {
        let left = &self.piece[self.pos..self.filled];
        left.get(..len).unwrap_or(left)
    }

    /// Takes the `len` bytes [`Pieces::ahead`] showed.
    pub(super) fn consume(&mut self, len: usize) {
        self.pos = (self.pos + len).min(self.filled);
    }

    /// Appends the next line to `out`, up to and with its LF, or up to the end for now without
    /// one; gives how many bytes that was (0 at the end), as `read_until(b'\n', out)` does.
    pub(super) fn read_line(&mut self, out: &mut Vec<u8>) -> std::io::Result<usize> {
        let mut read = 0;
        loop {
            let left = &self.piece[self.pos..self.filled];
            if let Some(end) = find_lf(left) {
                out.extend_from_slice(&left[..=end]);
                self.pos += end + 1;
                return Ok(read + end + 1);
            }
            out.extend_from_slice(left);
            read += left.len();
            self.pos = 0;
            self.filled = 0;
            if self.fill()? == 0 {
                return Ok(read);
            }
        }
    }

    /// Appends everything left, the piece's and the file's, to `out`.
    pub(super) fn read_rest(&mut self, out: &mut Vec<u8>) -> std::io::Result<()> {
        out.extend_from_slice(&self.piece[self.pos..self.filled]);
        self.pos = self.filled;
        self.file.read_to_end(out).map(drop)
    }

    /// Reads once after what the piece holds; gives how many bytes came.
    fn fill(&mut self) -> std::io::Result<usize> {
        if self.piece.is_empty() {
            self.piece = vec![0; PIECE];
        }
        loop {
            match self.file.read(&mut self.piece[self.filled..]) {
                Ok(read) => {
                    self.filled += read;
                    return Ok(read);
                }
                Err(error) if error.kind() == ErrorKind::Interrupted => {}
                Err(error) => return Err(error),
            }
        }
    }
}

/// Where the first LF in `bytes` is, 32 bytes at a time (std's own search is not public): the
/// compiler compares a block's bytes at once when the test has no early exit.
fn find_lf(bytes: &[u8]) -> Option<usize> {
    let is_lf = |byte: &u8| *byte == b'\n';
    let (blocks, rest) = bytes.as_chunks::<32>();
    for (index, block) in blocks.iter().enumerate() {
        if block.iter().fold(false, |any, byte| any | is_lf(byte)) {
            return block.iter().position(is_lf).map(|at| index * 32 + at);
        }
    }
    let before = bytes.len() - rest.len();
    rest.iter().position(is_lf).map(|at| before + at)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::io::{BufRead, BufReader, Write};

    use super::*;

    #[test]
    fn the_first_lf_is_found_where_a_byte_by_byte_search_finds_it() {
        let fillers = [0u8, 0x09, 0x0b, 0x8a, 0x0a ^ 0x80, 0xff, b'a', 0x01];
        for len in 0..100 {
            for filler in fillers {
                let mut bytes = vec![filler; len];
                assert_eq!(find_lf(&bytes), None);
                for at in 0..len {
                    bytes[at] = b'\n';
                    if at + 1 < len {
                        bytes[at + 1] = b'\n';
                    }
                    assert_eq!(find_lf(&bytes), Some(at), "{len} {filler} {at}");
                    bytes.fill(filler);
                }
            }
        }
    }

    /// Lines of every length around the piece's, some without an LF at the end.
    fn file_of(lines: &[Vec<u8>]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lines");
        let mut file = File::create(&path).unwrap();
        for line in lines {
            file.write_all(line).unwrap();
        }
        (dir, path)
    }

    #[test]
    fn lines_come_as_read_until_gives_them_whichever_way_they_are_taken() {
        let mut lines = Vec::new();
        for len in [
            0,
            1,
            7,
            900,
            PIECE - 3,
            PIECE,
            PIECE + 1,
            2 * PIECE + 5,
            1000,
            3,
        ] {
            let mut line = vec![b'x'; len];
            line.push(b'\n');
            lines.push(line);
        }
        lines.push(b"torn \0 tail".to_vec());
        let (_dir, path) = file_of(&lines);
        let mut expected = Vec::new();
        let mut reader = BufReader::new(File::open(&path).unwrap());
        loop {
            let mut line = Vec::new();
            if reader.read_until(b'\n', &mut line).unwrap() == 0 {
                break;
            }
            expected.push(line);
        }
        // Whole lines taken in place where they fit, or never (copied out), or every other one.
        let takes: [fn(usize) -> bool; 3] = [|_| true, |_| false, |index| index % 2 == 0];
        for take in takes {
            let mut pieces = Pieces::new(File::open(&path).unwrap());
            let mut got = Vec::new();
            loop {
                let index = got.len();
                if take(index)
                    && let Some(len) = pieces.whole_line().unwrap()
                {
                    got.push(pieces.ahead(len).to_vec());
                    pieces.consume(len);
                    continue;
                }
                let mut line = Vec::new();
                if pieces.read_line(&mut line).unwrap() == 0 {
                    break;
                }
                got.push(line);
            }
            assert_eq!(got, expected);
            // Nothing is left at the end, and what was left before it is all there.
            let mut rest = Vec::new();
            pieces.read_rest(&mut rest).unwrap();
            assert!(rest.is_empty());
        }
        let mut pieces = Pieces::new(File::open(&path).unwrap());
        let first = pieces.whole_line().unwrap().unwrap();
        pieces.consume(first);
        let mut rest = Vec::new();
        pieces.read_rest(&mut rest).unwrap();
        assert_eq!(rest, expected[1..].concat());
        // From an offset, as a resumed reader reads.
        pieces.seek(first as u64).unwrap();
        let mut line = Vec::new();
        pieces.read_line(&mut line).unwrap();
        assert_eq!(line, expected[1]);
    }

    #[test]
    fn bytes_appended_after_the_end_are_read_on_the_next_call() {
        let (_dir, path) = file_of(&[b"one\n".to_vec(), b"tw".to_vec()]);
        let mut pieces = Pieces::new(File::open(&path).unwrap());
        assert_eq!(pieces.whole_line().unwrap(), Some(4));
        assert_eq!(pieces.ahead(4), b"one\n");
        pieces.consume(4);
        assert_eq!(pieces.whole_line().unwrap(), None);
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"o\nthree")
            .unwrap();
        assert_eq!(pieces.whole_line().unwrap(), Some(4));
        assert_eq!(pieces.ahead(4), b"two\n");
        pieces.consume(4);
        let mut line = Vec::new();
        assert_eq!(pieces.read_line(&mut line).unwrap(), 5);
        assert_eq!(line, b"three");
        assert_eq!(pieces.read_line(&mut line).unwrap(), 0);
    }
}
