//! Text made safe for HTML, for every page agentrace writes (the exported
//! report, the viewer's own pages): one escape, so the two never differ.
//! Pure text: it writes nothing.

/// `text` escaped for element content and quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(ch),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn markup_quotes_and_ampersands_are_escaped_and_the_rest_kept() {
        assert_eq!(super::escape(r#"<a href="x">Tom & Jerry's</a> ✓"#), "&lt;a href=&quot;x&quot;&gt;Tom &amp; Jerry&#39;s&lt;/a&gt; ✓");
    }
}
