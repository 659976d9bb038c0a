//! Reading vector files line by line, gzip-compressed or not.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use flate2::read::MultiGzDecoder;

/// The lines of one vector file.
pub(super) struct VectorLines {
    reader: Box<dyn BufRead>,
    line_number: usize,
    buffer: Vec<u8>,
}

impl VectorLines {
    /// Opens `path`, decompressing it when its name ends in `.gz`.
    pub fn open(path: &Path) -> io::Result<Self> {
        let file = File::open(path)?;
        let raw: Box<dyn Read> = if path.extension().is_some_and(|extension| extension == "gz") {
            Box::new(MultiGzDecoder::new(file))
        } else {
            Box::new(file)
        };
        Ok(Self {
            reader: Box::new(BufReader::new(raw)),
            line_number: 0,
            buffer: Vec::new(),
        })
    }

    /// The next non-empty line (without its LF) and its 1-based number.
    pub fn next_line(&mut self) -> io::Result<Option<(usize, Vec<u8>)>> {
        loop {
            self.buffer.clear();
            if self.reader.read_until(b'\n', &mut self.buffer)? == 0 {
                return Ok(None);
            }
            self.line_number += 1;
            if self.buffer.last() == Some(&b'\n') {
                self.buffer.pop();
            }
            if !self.buffer.is_empty() {
                return Ok(Some((self.line_number, std::mem::take(&mut self.buffer))));
            }
        }
    }
}
