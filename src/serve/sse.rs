//! A decoder for Server-Sent Events as OpenAI-compatible servers stream
//! them: `data: {json}` lines, events split by a blank line, and a final
//! `data: [DONE]`.
//!
//! Written here rather than taken from a crate because the measurement
//! needs the arrival time of each event, and because a malformed stream
//! must become a recorded failure with its reason, never a hang or a
//! silently dropped token.

/// One complete event's `data` (its `data:` lines joined by newlines).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseData {
    /// `data: [DONE]`: the server says the stream is over.
    Done,
    Json(String),
}

/// Bytes in, events out. Bytes may arrive split anywhere, even inside a
/// UTF-8 character or a `\r\n`.
#[derive(Debug, Default)]
pub struct SseDecoder {
    buf: Vec<u8>,
    data: Vec<String>,
    /// Bytes of `data` so far: the bound is on the event, not only on a
    /// line, or `data:` lines with no blank line between would grow it
    /// until the request's deadline.
    data_bytes: usize,
}

/// The longest event Dyno accepts: a server that never ends a line is
/// broken, and must not fill memory.
const MAX_EVENT_BYTES: usize = 16 << 20;

impl SseDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feed bytes; returns the events they complete, or why the stream is
    /// not SSE.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<SseData>, String> {
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        while let Some(nl) = self.buf.iter().position(|&b| b == b'\n') {
            let mut line: Vec<u8> = self.buf.drain(..=nl).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            let line =
                String::from_utf8(line).map_err(|_| "the stream is not UTF-8 text".to_string())?;
            if line.is_empty() {
                // A blank line ends the event.
                if let Some(ev) = self.finish_event() {
                    out.push(ev);
                }
                continue;
            }
            if line.starts_with(':') {
                continue; // a comment (keep-alive)
            }
            let (field, value) = match line.split_once(':') {
                Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
                None => (line.as_str(), ""),
            };
            match field {
                "data" => {
                    self.data_bytes += value.len() + 1;
                    if self.data_bytes > MAX_EVENT_BYTES {
                        return Err(
                            "the stream sent an event of more than 16 MiB (data lines with no blank line to end it)"
                                .into(),
                        );
                    }
                    self.data.push(value.to_string());
                }
                "event" | "id" | "retry" => {}
                _ => {
                    return Err(format!(
                        "the stream has a line that is not Server-Sent Events: '{}'",
                        clip(&line)
                    ))
                }
            }
        }
        if self.buf.len() > MAX_EVENT_BYTES {
            return Err("the stream sent more than 16 MiB without a line break".into());
        }
        Ok(out)
    }

    /// The end of the body: an event not closed by a blank line still
    /// counts (some servers omit the last one).
    pub fn finish(&mut self) -> Option<SseData> {
        if !self.buf.is_empty() {
            let line = String::from_utf8_lossy(&std::mem::take(&mut self.buf)).into_owned();
            if let Some(v) = line.trim_end().strip_prefix("data:") {
                self.data.push(v.trim_start().to_string());
            }
        }
        self.finish_event()
    }

    fn finish_event(&mut self) -> Option<SseData> {
        if self.data.is_empty() {
            return None;
        }
        self.data_bytes = 0;
        let data = std::mem::take(&mut self.data).join("\n");
        Some(if data.trim() == "[DONE]" {
            SseData::Done
        } else {
            SseData::Json(data)
        })
    }
}

/// A line short enough for an error message.
pub fn clip(s: &str) -> String {
    let mut out: String = s.chars().take(120).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_that_never_ends_is_refused_at_the_bound() {
        let mut d = SseDecoder::new();
        let line = format!("data: {}\n", "x".repeat(1 << 20));
        let mut refused = None;
        for i in 0..40 {
            if let Err(e) = d.push(line.as_bytes()) {
                refused = Some((i, e));
                break;
            }
        }
        let (i, e) = refused.expect("refused before 40 MiB");
        assert!(i <= 16, "after {i} MiB");
        assert!(e.contains("16 MiB"), "{e}");
        // Events that end stay well under it however many there are.
        let mut d = SseDecoder::new();
        for _ in 0..40 {
            assert_eq!(d.push(format!("{line}\n").as_bytes()).unwrap().len(), 1);
        }
    }

    #[test]
    fn events_split_anywhere_come_out_whole() {
        let stream = b"data: {\"a\":1}\r\n\r\n: keep-alive\n\ndata: {\"b\":\n\ndata: [DONE]\n\n";
        for cut in 0..stream.len() {
            let mut d = SseDecoder::new();
            let mut got = d.push(&stream[..cut]).unwrap();
            got.extend(d.push(&stream[cut..]).unwrap());
            assert_eq!(
                got,
                vec![
                    SseData::Json("{\"a\":1}".into()),
                    SseData::Json("{\"b\":".into()),
                    SseData::Done
                ],
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn multi_line_data_joins_and_a_last_unterminated_event_counts() {
        let mut d = SseDecoder::new();
        assert!(d.push(b"data: x\ndata: y\n\ndata: z").unwrap().len() == 1);
        assert_eq!(d.finish(), Some(SseData::Json("z".into())));
    }

    #[test]
    fn a_body_that_is_not_sse_is_refused_with_the_line() {
        let mut d = SseDecoder::new();
        let e = d.push(b"<html>502 Bad Gateway</html>\n").unwrap_err();
        assert!(e.contains("<html>502"), "{e}");
    }
}
