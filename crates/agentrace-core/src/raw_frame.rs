//! A frame as read, kept as its JSON text ([`crate::model::Envelope::raw`]).
//!
//! Most frames of a live recording are lines an attributor has just parsed
//! whole with `serde_json`, which checks every byte as JSON on the way. A
//! `serde_json` raw value can only be made by checking its text again (a
//! fifth of what the thread that numbers events spent), so such a line is
//! kept as text the attributor vouches for ([`RawFrame::vouched`], in this
//! crate only), and checked once more only where it is handed to `serde`
//! as a raw value (an envelope serialized other than by the run writer,
//! which copies the text into the line as it is).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

/// One JSON value, as its text (see the module's doc).
#[derive(Clone)]
pub struct RawFrame(Text);

#[derive(Clone)]
enum Text {
    /// Checked by `serde_json` as a raw value.
    Checked(Box<RawValue>),
    /// Checked whole by the parse of the attributor that kept it.
    Vouched(Box<str>),
}

impl RawFrame {
    /// The JSON text.
    pub fn get(&self) -> &str {
        match &self.0 {
            Text::Checked(raw) => raw.get(),
            Text::Vouched(text) => text,
        }
    }

    /// A frame of `text`, which a `serde_json` parse of this crate has just
    /// read whole as one JSON value (nothing around it, not even spaces).
    pub(crate) fn vouched(text: String) -> RawFrame {
        RawFrame(Text::Vouched(text.into_boxed_str()))
    }

    /// The frame as a `serde_json` raw value (a vouched one checked now).
    pub fn to_raw_value(&self) -> serde_json::Result<Box<RawValue>> {
        match &self.0 {
            Text::Checked(raw) => Ok(raw.clone()),
            Text::Vouched(text) => RawValue::from_string(text.to_string()),
        }
    }
}

impl From<Box<RawValue>> for RawFrame {
    fn from(raw: Box<RawValue>) -> Self {
        RawFrame(Text::Checked(raw))
    }
}

impl fmt::Debug for RawFrame {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.debug_tuple("RawFrame").field(&format_args!("{}", self.get())).finish()
    }
}

impl PartialEq for RawFrame {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl Eq for RawFrame {}

impl Serialize for RawFrame {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Text::Checked(raw) => raw.serialize(serializer),
            Text::Vouched(text) => {
                let raw: &RawValue = serde_json::from_str(text).map_err(serde::ser::Error::custom)?;
                raw.serialize(serializer)
            }
        }
    }
}

impl<'de> Deserialize<'de> for RawFrame {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Box::<RawValue>::deserialize(deserializer).map(RawFrame::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vouched_frame_serializes_reads_back_and_compares_as_a_checked_one() {
        let text = r#"{"method":"item/agentMessage/delta","params":{"delta":"h\u00e9 \"x\""}}"#;
        let vouched = RawFrame::vouched(text.to_owned());
        let checked = RawFrame::from(RawValue::from_string(text.to_owned()).unwrap_or_else(|e| panic!("{e}")));
        let written = |frame: &RawFrame| serde_json::to_string(&vec![frame]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(written(&vouched), format!("[{text}]"));
        assert_eq!(written(&vouched), written(&checked));
        assert_eq!(vouched, checked);
        let read: RawFrame = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((read.get(), vouched.to_raw_value().map(|raw| raw.get().to_owned()).ok()), (text, Some(text.to_owned())));
        assert_eq!(format!("{vouched:?}"), format!("RawFrame({text})"));
    }

    /// Only a line that is its value alone, as the attributor parsed it, is
    /// kept unchecked; one with a byte order mark, a line break or spaces
    /// around the value is checked, its frame the value alone.
    #[test]
    fn only_a_line_that_is_its_value_alone_is_vouched_for() {
        let kept: Vec<(String, bool)> = [
            &b"{\"a\":1}"[..],
            b"\xEF\xBB\xBF{\"a\":1}",
            b"{\"a\":1}\r",
            b"  {\"a\":1} ",
        ]
        .into_iter()
        .map(|line| {
            let frame = crate::decode::vouched_frame(line.to_vec()).unwrap_or_else(|| panic!("{line:?}"));
            (frame.get().to_owned(), matches!(frame.0, Text::Vouched(_)))
        })
        .collect();
        let value = r#"{"a":1}"#.to_owned();
        assert_eq!(kept, vec![(value.clone(), true), (value.clone(), false), (value.clone(), false), (value, false)]);
        // Not UTF-8: no frame (the attributor never vouches for such a line).
        assert!(crate::decode::vouched_frame(b"{\"a\":\"\xFF\"}".to_vec()).is_none());
    }
}
