//! Reading a DUMPI rank file's bytes: the trace's version, and a cursor that names the file,
//! rank and byte in every error.

use std::path::Path;

use crate::error::{Result, TraceError};
use crate::model::Rank;

/// A DUMPI trace version, as the header records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version(pub [u8; 3]);

impl Version {
    /// Whether this is version `a.b.c` or later.
    pub fn at_least(self, a: u8, b: u8, c: u8) -> bool {
        self.0 >= [a, b, c]
    }
}

/// A cursor over a rank file's bytes that names the file, rank and byte in every error.
#[derive(Debug)]
pub(super) struct Cursor<'a> {
    pub(super) b: &'a [u8],
    pub(super) pos: usize,
    pub(super) path: &'a Path,
    pub(super) rank: Rank,
    /// Bytes per element of each datatype, by DUMPI datatype id.
    pub(super) sizes: &'a [u32],
}

impl<'a> Cursor<'a> {
    pub(super) fn err(&self, at: usize, reason: impl Into<String>) -> TraceError {
        TraceError::Corrupt {
            path: self.path.to_path_buf(),
            rank: Some(self.rank),
            offset: at as u64,
            reason: reason.into(),
        }
    }

    pub(super) fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.b.len());
        let Some(end) = end else {
            return Err(self.err(self.pos, format!("{n} bytes needed, the file ends first")));
        };
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    pub(super) fn skip(&mut self, n: usize) -> Result<()> {
        self.take(n).map(|_| ())
    }

    pub(super) fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    pub(super) fn u16(&mut self) -> Result<u16> {
        let s = self.take(2)?;
        Ok(u16::from_be_bytes([s[0], s[1]]))
    }

    pub(super) fn u32(&mut self) -> Result<u32> {
        let s = self.take(4)?;
        Ok(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
    }

    pub(super) fn i32(&mut self) -> Result<i32> {
        Ok(self.u32()? as i32)
    }

    pub(super) fn u64(&mut self) -> Result<u64> {
        Ok((u64::from(self.u32()?) << 32) | u64::from(self.u32()?))
    }

    /// A 32-bit element count, checked against the bytes left (`each` per element).
    pub(super) fn length(&mut self, each: usize) -> Result<usize> {
        let at = self.pos;
        let n = self.u32()? as usize;
        let left = self.b.len() - self.pos;
        if n.checked_mul(each).is_none_or(|b| b > left) {
            return Err(
                self.err(at, format!("an array of {n} elements runs past the end of the file"))
            );
        }
        Ok(n)
    }

    pub(super) fn skip_array(&mut self, each: usize) -> Result<()> {
        let n = self.length(each)?;
        self.skip(n * each)
    }

    pub(super) fn i32_array(&mut self) -> Result<Vec<i32>> {
        let n = self.length(4)?;
        (0..n).map(|_| self.i32()).collect()
    }

    pub(super) fn u32_array(&mut self) -> Result<Vec<u32>> {
        let n = self.length(4)?;
        (0..n).map(|_| self.u32()).collect()
    }

    /// A 16-bit-length string.
    pub(super) fn string(&mut self) -> Result<String> {
        let n = self.u16()? as usize;
        Ok(String::from_utf8_lossy(self.take(n)?).into_owned())
    }

    /// `count` elements of datatype `dt`, in bytes.
    pub(super) fn bytes(&self, count: i32, dt: u16) -> Result<u64> {
        let at = self.pos;
        let count = u64::try_from(count)
            .map_err(|_| self.err(at, format!("negative element count {count}")))?;
        let size = self.sizes.get(dt as usize).ok_or_else(|| {
            self.err(at, format!("datatype {dt} is not in the trace's table of datatype sizes"))
        })?;
        Ok(count * u64::from(*size))
    }

    pub(super) fn all_bytes(&self, counts: &[i32], dt: u16) -> Result<Vec<u64>> {
        counts.iter().map(|&c| self.bytes(c, dt)).collect()
    }
}
