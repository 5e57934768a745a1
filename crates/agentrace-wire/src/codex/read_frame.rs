//! A frame read in one walk ([`ReadFrame`]): [`Frame`]'s members, with a
//! notification's params typed by its method where they are met and a
//! response's result read as [`ReadResult`]. A notification's params were
//! walked once for the frame (to borrow them) and again to type them, and
//! notifications are nearly half of a session's bytes.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::Value;

use super::{lenient_field, Frame, Notification, ReadResult};

/// A frame read in one walk (see the module's doc). It reads only a JSON
/// object whose `params`, when it has any, come after its `method` and
/// before an `id` (as Codex writes notifications); any other frame fails
/// to read so, and is read as [`Frame`] is.
#[derive(Debug)]
pub struct ReadFrame<'a> {
    /// The frame; its `params` are `None` where `notification` holds them.
    pub frame: Frame<'a, ReadResult>,
    /// A notification's params, typed by its method as
    /// [`Notification::decode`] types them; `None` when the frame has none
    /// to type (no params, `null` params, or no notification).
    pub notification: Option<Notification>,
}

impl<'de> Deserialize<'de> for ReadFrame<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(FrameVisitor)
    }
}

/// The members a frame is read for; any other is passed over.
enum Key {
    Id,
    Method,
    Params,
    Result,
    Error,
    EmittedAtMs,
    Other,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;

        impl Visitor<'_> for KeyVisitor {
            type Value = Key;

            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("a member name")
            }

            fn visit_str<E: de::Error>(self, name: &str) -> Result<Key, E> {
                Ok(match name {
                    "id" => Key::Id,
                    "method" => Key::Method,
                    "params" => Key::Params,
                    "result" => Key::Result,
                    "error" => Key::Error,
                    "emittedAtMs" => Key::EmittedAtMs,
                    _ => Key::Other,
                })
            }
        }

        deserializer.deserialize_identifier(KeyVisitor)
    }
}

/// A string borrowed from the line when it has no escapes (as
/// `#[serde(borrow)]` reads a `Cow<str>`).
struct CowStr<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for CowStr<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct CowVisitor;

        impl<'de> Visitor<'de> for CowVisitor {
            type Value = CowStr<'de>;

            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("a string")
            }

            fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Borrowed(text)))
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Owned(text.to_owned())))
            }

            fn visit_string<E: de::Error>(self, text: String) -> Result<Self::Value, E> {
                Ok(CowStr(Cow::Owned(text)))
            }
        }

        deserializer.deserialize_str(CowVisitor)
    }
}

/// `emittedAtMs`, read as [`Frame`] reads it.
struct LenientMillis;

impl<'de> DeserializeSeed<'de> for LenientMillis {
    type Value = Option<i64>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<i64>, D::Error> {
        lenient_field(deserializer)
    }
}

/// A notification's params, typed by its method; `null` is none.
struct TypedParams<'m>(&'m str);

impl<'de> DeserializeSeed<'de> for TypedParams<'_> {
    type Value = Option<Notification>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        struct OptionVisitor<'m>(&'m str);

        impl<'de> Visitor<'de> for OptionVisitor<'_> {
            type Value = Option<Notification>;

            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("params")
            }

            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(None)
            }

            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(None)
            }

            fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
                Notification::read(self.0, deserializer).map(Some)
            }
        }

        deserializer.deserialize_option(OptionVisitor(self.0))
    }
}

struct FrameVisitor;

impl<'de> Visitor<'de> for FrameVisitor {
    type Value = ReadFrame<'de>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a JSON-RPC object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        // Each member once, as the derived `Frame` allows it.
        let mut id: Option<Option<Value>> = None;
        let mut method: Option<Option<CowStr<'de>>> = None;
        let mut params: Option<Option<&'de RawValue>> = None;
        let mut notification: Option<Option<Notification>> = None;
        let mut result: Option<Option<ReadResult>> = None;
        let mut error: Option<Option<&'de RawValue>> = None;
        let mut emitted_at_ms: Option<Option<i64>> = None;
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Id if id.is_some() => return Err(de::Error::duplicate_field("id")),
                Key::Id => id = Some(map.next_value()?),
                Key::Method if method.is_some() => return Err(de::Error::duplicate_field("method")),
                Key::Method => method = Some(map.next_value()?),
                Key::Params if params.is_some() || notification.is_some() => {
                    return Err(de::Error::duplicate_field("params"))
                }
                Key::Params => match &method {
                    Some(Some(name)) if !is_request(id.as_ref()) => {
                        notification = Some(map.next_value_seed(TypedParams(&name.0))?);
                    }
                    _ => params = Some(map.next_value()?),
                },
                Key::Result if result.is_some() => return Err(de::Error::duplicate_field("result")),
                Key::Result => result = Some(map.next_value()?),
                Key::Error if error.is_some() => return Err(de::Error::duplicate_field("error")),
                Key::Error => error = Some(map.next_value()?),
                Key::EmittedAtMs if emitted_at_ms.is_some() => return Err(de::Error::duplicate_field("emittedAtMs")),
                Key::EmittedAtMs => emitted_at_ms = Some(map.next_value_seed(LenientMillis)?),
                Key::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        // Params typed as a notification's belong to a request after all:
        // the frame is read as written instead.
        if notification.is_some() && is_request(id.as_ref()) {
            return Err(de::Error::custom("params typed before the request's id"));
        }
        Ok(ReadFrame {
            frame: Frame {
                id: id.flatten(),
                method: method.flatten().map(|method| method.0),
                params: params.flatten(),
                result: result.flatten(),
                error: error.flatten(),
                emitted_at_ms: emitted_at_ms.flatten(),
            },
            notification: notification.flatten(),
        })
    }
}

/// Whether an `id` read so far makes the frame a request (with a method).
fn is_request(id: Option<&Option<Value>>) -> bool {
    id.is_some_and(|id| id.as_ref().is_some_and(|id| !id.is_null()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every line of the repo's Codex app-server captures, and frames of
    /// the shapes the one walk gives up on or reads otherwise.
    fn lines() -> Vec<String> {
        let mut lines = super::super::capture_lines();
        lines.extend(
            [
                r#"{"params":{"threadId":"t","turn":{"id":"u"}},"method":"turn/started"}"#,
                r#"{"method":"item/commandExecution/requestApproval","params":{"threadId":"t","itemId":"i"},"id":3}"#,
                r#"{"method":"turn/started","params":null}"#,
                r#"{"method":"turn/started"}"#,
                r#"{"method":"turn/started","params":{"threadId":7}}"#,
                r#"{"method":"new/method","params":{"threadId":"t"},"emittedAtMs":"soon"}"#,
                r#"{"method":"new/method","params":null}"#,
                r#"{"method":"turn/started","params":{},"params":{}}"#,
                r#"{"method":"item\/started","params":{"threadId":"t","item":{"type":"agentMessage","id":"a","text":"x"}}}"#,
                r#"["turn/started"]"#,
                r#"{"id":null,"method":"thread/status/changed","params":{"threadId":"t","status":{"type":"idle"}}}"#,
            ]
            .map(str::to_owned),
        );
        lines
    }

    /// A frame read in one walk says what the frame read as written says,
    /// and its notification (typed in the walk, or from the params it kept)
    /// is what the params typed apart are; the captures' notifications are
    /// typed in the walk.
    #[test]
    fn a_frame_read_in_one_walk_reads_as_the_frame_and_its_params_read_apart() {
        let notification = |method: Option<&Cow<'_, str>>, params: Option<&RawValue>| {
            method.and_then(|method| Notification::decode(method, params).ok())
        };
        let mut typed = 0;
        for line in lines() {
            let Ok(read) = serde_json::from_str::<ReadFrame<'_>>(&line) else {
                continue;
            };
            let written = serde_json::from_str::<Frame<'_>>(&line).unwrap_or_else(|e| panic!("{line}: {e}"));
            typed += usize::from(read.notification.is_some());
            let kind = read.frame.kind();
            let read_notification = match read.notification {
                Some(typed) => Some(typed),
                None => notification(read.frame.method.as_ref(), read.frame.params),
            };
            assert_eq!(
                (
                    kind,
                    read.frame.id.clone(),
                    read.frame.method.clone(),
                    read.frame.error.map(RawValue::get),
                    read.frame.emitted_at_ms,
                    read.frame.result.is_some(),
                    format!("{read_notification:?}"),
                ),
                (
                    written.kind(),
                    written.id.clone(),
                    written.method.clone(),
                    written.error.map(RawValue::get),
                    written.emitted_at_ms,
                    written.result.is_some(),
                    format!("{:?}", notification(written.method.as_ref(), written.params)),
                ),
                "{line}"
            );
        }
        assert!(typed > 1000, "{typed} notifications typed in one walk");
    }

    /// The frames the one walk gives up on: params typed before a request's
    /// id, a member given twice, a frame that is no object.
    #[test]
    fn a_frame_it_cannot_read_in_one_walk_is_refused() {
        let refused: Vec<bool> = [
            r#"{"method":"item/commandExecution/requestApproval","params":{"threadId":"t","itemId":"i"},"id":3}"#,
            r#"{"method":"turn/started","params":{},"params":{}}"#,
            r#"["turn/started"]"#,
            r#"{"method":"turn/started","params":{"threadId":7}}"#,
        ]
        .iter()
        .map(|line| serde_json::from_str::<ReadFrame<'_>>(line).is_err())
        .collect();
        assert_eq!(refused, [true; 4]);
    }
}
