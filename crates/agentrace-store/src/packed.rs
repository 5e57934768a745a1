//! A text the catalog keeps compressed: a run's usage tree and its report.
//! They are JSON, a few kB each, read whole and never queried inside, and
//! together the catalog's largest columns: LZ4 (its block format, the
//! text's length first) keeps them at about a third of their size for
//! a few microseconds of work each way, and leaves the unpacking to
//! whichever thread reads the text, not the one that reads the catalog.

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};

use crate::StoreError;

/// The most a packed text may say it unpacks to: far above any usage tree
/// (a few kB), so that a damaged length cannot make a reader allocate
/// gigabytes.
const MOST_UNPACKED: usize = 64 * 1024 * 1024;

/// A text as the catalog keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Packed {
    /// Compressed (an SQL BLOB).
    Lz4(Vec<u8>),
    /// Plain (an SQL TEXT): what an agentrace before packing kept, or a
    /// user wrote by hand.
    Plain(String),
}

impl Packed {
    /// `text`, compressed.
    pub fn pack(text: &str) -> Self {
        Packed::Lz4(lz4_flex::compress_prepend_size(text.as_bytes()))
    }

    /// The text. `what` names it in the error a damaged value gives.
    pub fn unpack(&self, what: &'static str) -> Result<String, StoreError> {
        let bytes = match self {
            Packed::Plain(text) => return Ok(text.clone()),
            Packed::Lz4(bytes) => bytes,
        };
        let damaged = |reason: String| StoreError::Damaged { what, reason };
        let (length, _) = lz4_flex::block::uncompressed_size(bytes).map_err(|error| damaged(error.to_string()))?;
        if length > MOST_UNPACKED {
            return Err(damaged(format!("it says it holds {length} bytes")));
        }
        let text = lz4_flex::decompress_size_prepended(bytes).map_err(|error| damaged(error.to_string()))?;
        if text.len() != length {
            return Err(damaged(format!("it says it holds {length} bytes and holds {}", text.len())));
        }
        String::from_utf8(text).map_err(|error| damaged(error.to_string()))
    }
}

impl ToSql for Packed {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Packed::Lz4(bytes) => ToSqlOutput::Borrowed(ValueRef::Blob(bytes)),
            Packed::Plain(text) => ToSqlOutput::Borrowed(ValueRef::Text(text.as_bytes())),
        })
    }
}

impl FromSql for Packed {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        match value {
            ValueRef::Blob(bytes) => Ok(Packed::Lz4(bytes.to_vec())),
            ValueRef::Text(text) => std::str::from_utf8(text).map(|text| Packed::Plain(text.to_owned())).map_err(|error| FromSqlError::Other(Box::new(error))),
            ValueRef::Null | ValueRef::Integer(_) | ValueRef::Real(_) => Err(FromSqlError::InvalidType),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Packed;

    #[test]
    fn a_packed_text_unpacks_as_it_was_and_a_plain_one_as_it_is() {
        let text = r#"{"agents":[{"label":"Main","tokens":1}],"label":"Main","é":"ü"}"#.repeat(20);
        let packed = Packed::pack(&text);
        let Packed::Lz4(bytes) = &packed else { panic!("not packed: {packed:?}") };
        assert!(bytes.len() < text.len() / 4, "{} of {}", bytes.len(), text.len());
        assert_eq!(packed.unpack("usage tree").ok(), Some(text.clone()));
        assert_eq!(Packed::Plain(text.clone()).unpack("usage tree").ok(), Some(text));
        assert_eq!(Packed::pack("").unpack("usage tree").ok(), Some(String::new()));
    }

    #[test]
    fn a_damaged_value_is_an_error_that_names_it_never_a_huge_allocation() {
        let errors: Vec<String> = [
            vec![1, 2],
            // Says it holds 4 GB.
            vec![0xff, 0xff, 0xff, 0xff, 0x10, b'a'],
            // Says 100 bytes, holds a literal of one.
            vec![100, 0, 0, 0, 0x10, b'a'],
        ]
        .into_iter()
        .map(|bytes| Packed::Lz4(bytes).unpack("usage report").map_err(|error| error.to_string()).err().unwrap_or_default())
        .collect();
        assert_eq!(errors.len(), 3);
        for error in &errors {
            assert!(error.starts_with("a usage report kept in the catalog is damaged: "), "{error}");
        }
        assert!(errors[1].ends_with("it says it holds 4294967295 bytes"), "{}", errors[1]);
    }
}
